"""``fireval plan``: what to judge next so that a run's corrected score gets a CI (or is decided).

A thin shell over :func:`fireval.estimation.workflow.make_plan`; the algorithm and the file
format are in :mod:`fireval.estimation.plan`, the conventions in docs/estimation.md.
"""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.check import NoChecksOpt
from fireval.cli.common import MinGradeOpt, RunDirectionOpt, seed_option, split_csv
from fireval.cli.estimation_common import (
    CollectionOpt,
    DirectionOpt,
    EstimableOpt,
    NoInstanceOpt,
    PrecedenceOpt,
    SplitOpt,
)


def register(app: typer.Typer) -> None:
    @app.command()
    def plan(
        ctx: typer.Context,
        runs: Annotated[
            list[Path],
            typer.Argument(help="Score matrices or TREC runs (NAME=PATH to name one).", show_default=False),
        ],
        out: Annotated[
            Path, typer.Option("--out", "-o", help="The plan (a pool file for `judgments load`).")
        ],
        collection: CollectionOpt = None,
        split: SplitOpt = None,
        labels: Annotated[
            list[str] | None,
            typer.Option(
                "--labels",
                "-l",
                help="Labels known so far: FIRE JSON, TREC qrels, .npz, a store (repeatable).",
            ),
        ] = None,
        measures: EstimableOpt = "C@1,C@5,C@10",
        budget: Annotated[int | None, typer.Option("--budget", help="At most N pairs to judge.")] = None,
        target: Annotated[
            float | None,
            typer.Option("--target", help="Fewest pairs expected to reach this 95% half-width (points)."),
        ] = None,
        exact: Annotated[
            bool, typer.Option("--exact", help="Next round of the sequential walk that decides the measures.")
        ] = False,
        one_shot: Annotated[
            bool,
            typer.Option(
                "--one-shot",
                help="With --budget: judge every candidate of each sampled query at once, one sample per "
                "measure (no rounds; the default walks the sampled queries in rounds).",
            ),
        ] = False,
        paired: Annotated[
            bool,
            typer.Option(
                "--paired",
                help="With --budget (a walk) and several runs: one sample of queries shared by the runs of "
                "a direction, so that `estimate`'s differences between them are paired.",
            ),
        ] = False,
        previous: Annotated[
            Path | None,
            typer.Option(
                "--plan",
                help="The last round's plan of a --budget walk: plan its next round (same runs, "
                "measures and directions; no --budget).",
            ),
        ] = None,
        seed: Annotated[int, typer.Option(callback=seed_option(), help="Seed of the sample.")] = 0,
        direction: DirectionOpt = "t2v",
        no_instance: NoInstanceOpt = False,
        precedence: PrecedenceOpt = None,
        min_grade: MinGradeOpt = None,
        run_direction: RunDirectionOpt = "t2v",
        no_checks: NoChecksOpt = False,
        pass_unjudged: Annotated[
            bool,
            typer.Option(
                "--pass-unjudged",
                help="With --plan: walk past the last rounds' pairs that are still unjudged (skipped by "
                "the annotators, e.g. a video that does not play); their queries may stay undecided.",
            ),
        ] = False,
    ) -> None:
        """Plan what to judge next: a seeded stratified sample of queries whose candidates are walked in
        rank order over rounds (--budget N; the next round: --plan LAST), a one-shot sample of the pairs
        that can change the measures (--budget N --one-shot, --target H), or the next round of a walk
        that decides every query (--exact).

        Writes a pool file (`fireval judgments load` takes it; the web app judges it) whose header
        carries the design; `fireval estimate --plan` reads it. An empty file when nothing is left.
        """
        from fireval.cli.estimation_common import load_runs_and_labels, parse_directions
        from fireval.core.errors import FirevalError
        from fireval.estimation.plan import write_plan
        from fireval.estimation.status import parse_estimable
        from fireval.estimation.workflow import direction_notes, make_plan

        modes = [
            x
            for x, on in (("budget", budget is not None), ("target", target is not None), ("exact", exact))
            if on
        ]
        if previous is not None:
            if modes:
                raise FirevalError("--plan continues that plan's walk: give no --budget, --target or --exact")
            modes = ["budget"]
            from fireval.estimation.plan import read_design

            prev = read_design(previous)
            if prev is not None:  # the next round keeps the plan's own: never ignore what was asked
                src = {
                    n: getattr(ctx.get_parameter_source(n), "name", None)
                    for n in ("measures", "direction", "seed")
                }
                asked = {
                    "-m/--measures": (src["measures"], {str(m) for m in parse_estimable(split_csv(measures))},
                                      set(prev.measures)),
                    "-d/--direction": (src["direction"], {d.value for d in parse_directions(direction)},
                                       {p.direction.value for p in prev.parts}),
                    "--seed": (src["seed"], seed, prev.seed),
                }  # fmt: skip
                given = [o for o, (how, want, has) in asked.items() if how == "COMMANDLINE" and want != has]
                if given:
                    raise FirevalError(
                        f"{previous}: --plan continues that walk with its own measures "
                        f"({','.join(prev.measures)}), directions and seed ({prev.seed}); leave out "
                        f"{', '.join(given)}"
                    )
        elif len(modes) != 1:
            raise FirevalError("give exactly one of --budget N, --target H and --exact (or --plan)")
        if one_shot and (budget is None or previous is not None):
            raise FirevalError("--one-shot goes with --budget N (a plan with no walk rounds)")
        if paired and (budget is None or one_shot):
            raise FirevalError(
                "--paired goes with --budget N (a walk; its next rounds keep the shared sample)"
            )
        if budget is not None and budget < 1:
            raise FirevalError(f"--budget: expected a positive number of pairs, got {budget}")
        if target is not None and not target > 0:
            raise FirevalError(f"--target: expected a positive half-width in points, got {target:g}")
        directions = parse_directions(direction)
        ms = parse_estimable(split_csv(measures))
        coll, run_objs, judg = load_runs_and_labels(
            runs,
            collection,
            split,
            labels,
            no_instance=no_instance,
            precedence=precedence,
            min_grade=min_grade,
            run_direction=run_direction,
            outputs={"--out": out},
            checks=not no_checks,
            others={"--plan": previous},
        )
        stuck: list[str] = []
        design, items = make_plan(
            run_objs,
            judg,
            coll,
            ms,
            directions,
            mode=modes[0],
            seed=seed,
            budget=budget,
            target=target,
            one_shot=one_shot,
            previous=previous,
            paired=paired,
            stuck=stuck,
            min_grade=min_grade,
            pass_unjudged=pass_unjudged,
        )
        open_queries = sum(len(q) for part in design.parts for q in part.strata_queries)
        if not items and open_queries and previous is None and budget is not None:
            raise FirevalError(  # not "nothing left": the budget cannot buy one sampled query
                f"--budget {budget}: too small to sample any of the {open_queries} undecided queries; "
                "give a larger budget"
            )
        write_plan(out, design, items, coll)
        for line in direction_notes(run_objs, directions) if previous is None else []:
            typer.echo(f"note: {line}", err=True)
        walk = [p for p in design.parts if p.mode == "walk"]
        if walk and not items and previous is not None:  # round 1 with nothing to judge: below
            budget_out = design.budget is not None and design.spent >= design.budget
            typer.echo(
                (
                    f"the budget of {design.budget} pairs is spent; undecided sampled queries enter the estimate "
                    "with their bounds (biased toward the middle of their bounds: the CI covers it, the point "
                    "may not)"
                    if budget_out
                    else "the walk is complete: every sampled query is decided"
                )
                + f"; wrote an empty plan to {out} (estimate with the earlier rounds' plans)"
            )
            return
        if not items:
            for line in stuck:
                typer.echo(f"note: {line}", err=True)
            why = (
                "the run ranks no unjudged doc that can change the rest (see the note)"
                if stuck
                else "the labels decide every requested measure"
            )
            typer.echo(f"nothing left to judge: {why}; wrote an empty plan to {out}")
            return
        for part in design.parts:
            n_s = sum(len(s) for s in part.sampled)
            n_u = sum(len(q) for q in part.strata_queries)
            if not n_u and not part.pairs:  # e.g. one direction of -d both: nothing to sample there
                typer.echo(f"{part.key}: the labels decide every requested measure (nothing to judge)")
                continue
            what = (
                f"{len(part.pairs)} pairs: the next unjudged candidate of each of {len(part.pairs)} undecided queries"
                if part.mode == "exact"
                else f"walk round {part.walk_round}: {len(part.pairs)} pair{'' if len(part.pairs) == 1 else 's'} "
                f"for {n_s} sampled of {n_u} "
                f"undecided queries in {len(part.strata_queries)} strata"
                + (f" (one sample shared by {part.group.replace('+', ', ')})" if part.group else "")
                if part.mode == "walk"
                else f"{n_s} of {n_u} undecided queries in {len(part.strata_queries)} strata, {len(part.pairs)} pairs"
            )
            hw = design.predicted_half_width.get(part.key)
            if part.mode == "walk":
                hws = {m: design.predicted_half_width.get(f"{part.key}/{m}") for m in design.measures}
                hw = max((v for v in hws.values() if v is not None), default=None)
            tail = f"; predicted 95% half-width <= {hw:.2f}" if hw is not None else ""
            typer.echo(f"{part.key}: {what}{tail}")
            if part.mode == "walk" and part.second_round and part.second_round == part.walk_round:
                n_u = sum(map(len, part.second_undecided))
                n_s = sum(map(len, part.second_sampled))
                typer.echo(
                    f"{part.key}: second phase (the budget left cannot finish every walk): walking {n_s} of the "
                    f"{n_u} undecided sampled queries to the end (rate {design.second_phase_rate or 0:.2f}), "
                    "each weighing for the ones left out"
                )
        typer.echo(
            f"wrote {len(items)} pair{'' if len(items) == 1 else 's'} to judge to {out} (shared pairs once)"
        )
        if walk:
            from fireval.estimation.walk import distinct_pairs

            left = (design.budget or 0) - design.spent - len(distinct_pairs(design.parts))
            typer.echo(
                f"judge them, then plan the next round with --plan {out} (until it writes an empty "
                f"plan); {max(left, 0)} of the budget's pairs are left"
            )
