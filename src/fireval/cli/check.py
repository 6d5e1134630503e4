"""``fireval check``: the input guard rails alone (alignment, agreement, truncation, orientation)."""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.common import (
    RunDirectionOpt,
    collection_help,
    guard_outputs,
    int_at_least,
    seed_option,
)


def load_named_runs(specs: list[str], coll: object, direction: str = "t2v") -> dict:
    """Runs from ``PATH`` or ``NAME=PATH`` specs by the one rule every verb follows
    (:func:`fireval.api.load_runs`, :func:`fireval.api.split_run_spec`): an empty name, a name
    given twice or a repeated stem clash are the same errors as in ``evaluate``."""
    from fireval import api

    return api.load_runs(specs, coll, direction=direction)  # type: ignore[arg-type]


def register(app: typer.Typer) -> None:
    @app.command()
    def check(
        runs: Annotated[
            list[str] | None,
            typer.Argument(help="Runs as PATH or NAME=PATH (.npy/.npz score matrices or TREC run files)."),
        ] = None,
        collection: Annotated[
            str | None,
            typer.Option(
                "--collection",
                "-c",
                help=collection_help("none, it is required (-c example: the bundled MSR-VTT 1k-A)"),
            ),
        ] = None,
        split: Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")] = None,
        run_direction: RunDirectionOpt = "t2v",
        k: Annotated[
            int,
            typer.Option(
                "--k", callback=int_at_least("--k", 1), help="Depth of the top-K lists the checks look at."
            ),
        ] = 10,
        seed: Annotated[
            int, typer.Option(callback=seed_option(), help="Seed of the random tie-breaking at the cutoff.")
        ] = 0,
        json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure as JSON.")] = None,
        list_checks: Annotated[bool, typer.Option("--list", help="List the checks and exit.")] = False,
    ) -> None:
        """Check runs against the collection's text and each other before trusting any number.

        Exit 0 when every check passes or is inconclusive (a truncation warning included), 1 when
        any check fails, 2 on a user error. See docs/checks.md for what each check measures.
        """
        import shutil
        import textwrap

        from fireval.core.errors import FirevalError

        # COLUMNS, else the terminal, else 80 (a pipe): nothing printed is wider
        width = max(40, shutil.get_terminal_size().columns)
        if list_checks:
            from fireval.checks.definitions import CHECKS

            for c in CHECKS:
                for first, text in ((f"{c.name:<12} ", c.description), (f"{'':<12} why: ", c.rationale)):
                    typer.echo(textwrap.fill(first + text, width, subsequent_indent=" " * 13))
            return
        if not runs:
            raise FirevalError("check needs at least one run (or --list)")
        if collection is None:
            raise FirevalError("check needs the runs' collection: --collection/-c FILE (or -c example)")
        # --k, --seed and --run-direction are checked when parsed (their callbacks)
        guard_outputs({"--json": json_out}, runs=runs, collection=collection, split=split)
        from fireval import api
        from fireval.checks import run_checks

        coll = api.load_collection(collection, split=split)
        run_objs = load_named_runs(runs, coll, run_direction)
        report = run_checks(coll, run_objs, k=k, seed=seed)

        def record(who: str, check: str, status: str, message: str) -> None:
            """One tab-separated line when it fits; else run, check and status on the line (still
            ``cut -f``-able and grep-able) and the message wrapped under it, indented."""
            line = f"{who}\t{check}\t{status}\t{message}"
            if len(line.expandtabs()) <= width:
                typer.echo(line)
                return
            typer.echo(f"{who}\t{check}\t{status}")
            typer.echo(textwrap.fill(message, width, initial_indent="    ", subsequent_indent="    "))

        for name, res in report.runs.items():
            for r in res.values():
                record(name, r.check, r.status.value, r.message)
        for p in report.pairs:
            record(f"{p.a} vs {p.b}", "agreement", p.result.status.value, p.result.message)
        if json_out is not None:
            doc = report.to_dict()
            if isinstance(doc, dict):  # docs/formats.md#units: every JSON says its units
                doc = {
                    "units": "ratios, shares and overlaps as fractions in [0, 1] (messages print them in %); "
                    "k, n and counts: integers",
                    **doc,
                }
            api.write_json(doc, json_out)
        if report.failed:
            raise typer.Exit(1)


NoChecksOpt = Annotated[
    bool,
    typer.Option(
        "--no-checks", help="Skip the input checks (alignment, agreement, truncation, orientation)."
    ),
]


def input_checks(coll: object, runs: dict, *, enabled: bool = True, pairs: bool = True):  # type: ignore[no-untyped-def]
    """Run the input checks for a verb and print one ``warning:`` line per failed/warned check.

    Returns the :class:`fireval.checks.ChecksReport`, or ``None`` with ``--no-checks``.
    """
    if not enabled or not runs:
        return None
    from fireval.checks import run_checks

    report = run_checks(coll, runs, pairs=pairs and len(runs) > 1)  # type: ignore[arg-type]
    import shutil
    import sys
    import textwrap

    # on a terminal, wrapped to its width (nothing soft-wraps); in a pipe one line each, for grep
    width = shutil.get_terminal_size().columns if sys.stderr.isatty() else 0
    for line in report.warnings():
        text = f"warning: {line}"
        typer.echo(textwrap.fill(text, max(40, width), subsequent_indent="  ") if width else text, err=True)
    if report.failed:
        typer.echo(
            "warning: see `fireval check` and docs/checks.md; --no-checks skips these checks", err=True
        )
    return report
