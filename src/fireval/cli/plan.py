"""``fireval plan``: what to judge next so that a run's corrected score gets a CI (or is decided).

A thin shell over :func:`fireval.estimation.workflow.make_plan`; the algorithm and the file
format are in :mod:`fireval.estimation.plan`, the conventions in docs/estimation.md.
"""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.common import (
    COLLECTION_HELP,
    DIRECTIONS,
    MinGradeOpt,
    check_min_grade,
    check_precedence_option,
    choice,
    default_collection_hint,
    guard_outputs,
    note_collection,
    seed_option,
    split_csv,
)


def register(app: typer.Typer) -> None:
    @app.command()
    def plan(
        runs: Annotated[
            list[Path],
            typer.Argument(help="Score matrices or TREC runs (NAME=PATH to name one).", show_default=False),
        ],
        out: Annotated[
            Path, typer.Option("--out", "-o", help="The plan (a pool file for `judgments load`).")
        ],
        collection: Annotated[str | None, typer.Option("--collection", "-c", help=COLLECTION_HELP)] = None,
        split: Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")] = None,
        labels: Annotated[
            list[str] | None,
            typer.Option(
                "--labels",
                "-l",
                help="Labels known so far: FIRE JSON, TREC qrels, .npz, a store (repeatable).",
            ),
        ] = None,
        measures: Annotated[
            str, typer.Option("--measures", "-m", help="C@K (R@K), P@K, RR, MnR; comma-separated.")
        ] = "C@1,C@5,C@10",
        budget: Annotated[int | None, typer.Option("--budget", help="At most N pairs to judge.")] = None,
        target: Annotated[
            float | None,
            typer.Option("--target", help="Fewest pairs expected to reach this 95% half-width (points)."),
        ] = None,
        exact: Annotated[
            bool, typer.Option("--exact", help="Next round of the sequential walk that decides the measures.")
        ] = False,
        seed: Annotated[int, typer.Option(callback=seed_option(), help="Seed of the sample.")] = 0,
        direction: Annotated[str, typer.Option("--direction", "-d", help="t2v, v2t or both.")] = "t2v",
        no_instance: Annotated[
            bool, typer.Option("--no-instance", help="Do not include the instance labels.")
        ] = False,
        precedence: Annotated[
            str | None,
            typer.Option(callback=check_precedence_option, help="Merge policy (as `fireval evaluate`)."),
        ] = None,
        min_grade: MinGradeOpt = None,
        run_direction: Annotated[
            str,
            typer.Option(
                callback=choice("--run-direction", DIRECTIONS, casefold=True),
                help="Orientation of TREC runs / v2t matrices.",
            ),
        ] = "t2v",
    ) -> None:
        """Plan what to judge next: a seeded stratified sample of the pairs that can change the measures
        (--budget N, --target H), or the next round of a walk that decides them (--exact).

        Writes a pool file (`fireval judgments load` takes it; the web app judges it) whose header
        carries the design; `fireval estimate --plan` reads it. An empty file when nothing is left.
        """
        from fireval import api
        from fireval.core.direction import Direction

        check_min_grade(min_grade)
        from fireval.core.errors import FirevalError
        from fireval.estimation.plan import write_plan
        from fireval.estimation.status import parse_estimable
        from fireval.estimation.workflow import make_plan, merged_labels

        modes = [
            x
            for x, on in (("budget", budget is not None), ("target", target is not None), ("exact", exact))
            if on
        ]
        if len(modes) != 1:
            raise FirevalError("give exactly one of --budget N, --target H and --exact")
        if budget is not None and budget < 1:
            raise FirevalError(f"--budget: expected a positive number of pairs, got {budget}")
        if target is not None and not target > 0:
            raise FirevalError(f"--target: expected a positive half-width in points, got {target:g}")
        dirs = split_csv(direction)
        if direction != "both" and (not dirs or not set(dirs) <= {"t2v", "v2t"}):
            raise FirevalError(f"--direction: unknown value {direction!r}; expected t2v, v2t or both")
        directions = (
            (Direction.T2V, Direction.V2T) if direction == "both" else tuple(Direction.parse(x) for x in dirs)
        )
        ms = parse_estimable(split_csv(measures))
        guard_outputs({"--out": out}, runs=runs, collection=collection, split=split, labels=labels)
        coll = api.load_collection(collection, split=split)
        note_collection(collection, coll)
        with default_collection_hint(collection):
            run_objs = api.load_runs(runs, coll, direction=run_direction)
        judg = merged_labels(
            coll,
            labels or [],
            include_instance=not no_instance,
            precedence=split_csv(precedence) if precedence is not None else None,
            min_grade=min_grade,
        )
        design, items = make_plan(
            run_objs, judg, coll, ms, directions, mode=modes[0], seed=seed, budget=budget, target=target
        )
        write_plan(out, design, items, coll)
        if not items:
            typer.echo(
                f"nothing left to judge: the labels decide every requested measure; wrote an empty plan to {out}"
            )
            return
        for part in design.parts:
            n_s = sum(len(s) for s in part.sampled)
            n_u = sum(len(q) for q in part.strata_queries)
            what = (
                f"{len(part.pairs)} pairs: the next unjudged candidate of each of {len(part.pairs)} undecided queries"
                if part.mode == "exact"
                else f"{n_s} of {n_u} undecided queries in {len(part.strata_queries)} strata, {len(part.pairs)} pairs"
            )
            hw = design.predicted_half_width.get(part.key)
            tail = f"; predicted 95% half-width <= {hw:.2f}" if hw is not None else ""
            typer.echo(f"{part.key}: {what}{tail}")
        typer.echo(f"wrote {len(items)} pairs to judge to {out} (shared pairs once)")
