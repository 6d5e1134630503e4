"""``fireval estimate``: corrected scores with 95% CIs from the labels and the plans they answer.

A thin shell over :func:`fireval.estimation.workflow.estimate`; the estimators are defined in
:mod:`fireval.estimation.estimate` and listed by ``fireval estimate --list``.
"""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.check import NoChecksOpt
from fireval.cli.common import MinGradeOpt, RunDirectionOpt, split_csv
from fireval.cli.estimation_common import (
    CollectionOpt,
    DirectionOpt,
    EstimableOpt,
    NoInstanceOpt,
    PrecedenceOpt,
    RunsArg,
    SplitOpt,
)


def register(app: typer.Typer) -> None:
    @app.command()
    def estimate(
        runs: RunsArg = None,
        collection: CollectionOpt = None,
        split: SplitOpt = None,
        labels: Annotated[
            list[str] | None,
            typer.Option("--labels", "-l", help="Labels: FIRE JSON, TREC qrels, .npz, a store (repeatable)."),
        ] = None,
        plans: Annotated[
            list[Path] | None,
            typer.Option("--plan", help="Plan files from `fireval plan` (repeatable, in order)."),
        ] = None,
        measures: EstimableOpt = "C@1,C@5,C@10",
        direction: DirectionOpt = "t2v",
        no_instance: NoInstanceOpt = False,
        precedence: PrecedenceOpt = None,
        min_grade: MinGradeOpt = None,
        run_direction: RunDirectionOpt = "t2v",
        no_checks: NoChecksOpt = False,
        names: Annotated[str, typer.Option("--names", help="tvr (C@K printed as R@K) or ir (C@K).")] = "ir",
        json_out: Annotated[Path | None, typer.Option("--json", help="Write the records as JSON.")] = None,
        list_: Annotated[
            bool, typer.Option("--list", help="List the estimators (definition, source) and exit.")
        ] = False,
    ) -> None:
        """Estimate corrected scores with 95% CIs: decided values where the labels decide them, a
        stratified Horvitz-Thompson estimate under a plan's sample, else the exact bounds; and the
        paired difference of every two runs. Values in percent (MnR in ranks); JSON in fractions.
        """
        from fireval.core.errors import FirevalError

        if list_:
            from fireval.estimation.definitions import ESTIMATOR_INFO

            for info in ESTIMATOR_INFO:
                typer.echo(f"{info.name}: {info.description}")
                typer.echo(f"    source: {info.citation}")
            typer.echo("Definitions: docs/estimation.md.")
            return
        from fireval import api
        from fireval.cli.estimation_common import load_runs_and_labels, parse_directions
        from fireval.estimation.estimate import UNITS, value_text
        from fireval.estimation.status import parse_estimable
        from fireval.estimation.workflow import estimate as run_estimate

        if not runs:
            raise FirevalError("nothing to estimate: give one or more runs")
        if names not in ("tvr", "ir"):
            raise FirevalError(f"--names: expected tvr or ir, got {names!r}")
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
            outputs={"--json": json_out},
            checks=not no_checks,
            others={f"plan {i}": p for i, p in enumerate(plans or [])},
        )
        records, diffs, notes = run_estimate(
            run_objs, judg, coll, ms, directions, [str(p) for p in plans or []], min_grade
        )
        for line in notes:
            typer.echo(f"note: {line}", err=True)
        if names == "tvr":
            from fireval.metrics.measures import display_name

            for rec in [*records, *diffs]:
                rec["measure"] = display_name(str(rec["measure"]), "tvr")
        if json_out is not None:
            api.write_json(
                {
                    "units": {**UNITS, "names": names},
                    "results": records,
                    "differences": diffs,
                    "plans": [str(p) for p in plans or []],
                },
                json_out,
            )
        import shutil

        from fireval.report.terminal import fit_tsv, wrap

        # the terminal's width (COLUMNS; 80 in a pipe): columns split into blocks that fit it
        width = max(40, shutil.get_terminal_size().columns)
        lines = ["run\tdir\tmeasure\testimate\t95% CI\tlower\tupper\tn\tjudged\tsampled\tmethod"]
        for r in records:
            m = str(r["measure"])
            ci = f"[{value_text(r['ci_low'], m)}, {value_text(r['ci_high'], m)}]"
            lines.append(
                f"{r['run']}\t{r['direction']}\t{r['measure']}\t{value_text(r['estimate'], m)}\t{ci}\t"
                f"{value_text(r['lower'], m)}\t{value_text(r['upper'], m)}\t{r['n']}\t{r['judged']}\t{r['sampled']}\t{r['method']}"
            )
        for line in fit_tsv(lines, width, keep=3, align=True):
            typer.echo(line)
        if diffs:
            typer.echo("paired differences (A - B):")
            for r in diffs:
                m = str(r["measure"])
                ci = f"[{value_text(r['ci_low'], m)}, {value_text(r['ci_high'], m)}]"
                typer.echo(
                    wrap(
                        f"  {r['run_a']} - {r['run_b']} {r['direction']} {r['measure']}: "
                        f"{value_text(r['estimate'], m)} {ci}  {r['method']}",
                        width,
                    )
                )
        typer.echo(
            wrap("values in percent (MnR: ranks); CIs are 95%; method: see `fireval estimate --list`", width)
        )
