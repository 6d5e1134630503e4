"""What ``fireval plan`` and ``fireval estimate`` share: their common options, the direction option and
the loading of runs and labels (merged as :func:`fireval.estimation.workflow.merged_labels` does).

Imports only what the CLI's start needs; everything heavy is imported inside the functions.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fireval.cli.common import (
    COLLECTION_HELP,
    check_precedence_option,
    default_collection_hint,
    guard_outputs,
    note_collection,
    split_csv,
)

if TYPE_CHECKING:
    from fireval.core.collection import Collection
    from fireval.core.direction import Direction
    from fireval.core.judgments import Judgments
    from fireval.core.run import Run


# the options both verbs take, declared once
RunsArg = Annotated[
    list[Path] | None,
    typer.Argument(help="Score matrices or TREC runs (NAME=PATH to name one).", show_default=False),
]
CollectionOpt = Annotated[str | None, typer.Option("--collection", "-c", help=COLLECTION_HELP)]
SplitOpt = Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")]
EstimableOpt = Annotated[
    str, typer.Option("--measures", "-m", help="C@K (R@K), P@K, RR, MnR; comma-separated.")
]
DirectionOpt = Annotated[str, typer.Option("--direction", "-d", help="t2v, v2t or both.")]
NoInstanceOpt = Annotated[bool, typer.Option("--no-instance", help="Do not include the instance labels.")]
PrecedenceOpt = Annotated[
    str | None,
    typer.Option(callback=check_precedence_option, help="Merge policy (as `fireval evaluate`)."),
]


def parse_directions(direction: str) -> tuple[Direction, ...]:
    """``--direction``: ``t2v``, ``v2t``, a comma list of them, or ``both``."""
    from fireval.core.direction import Direction
    from fireval.core.errors import FirevalError

    dirs = split_csv(direction)
    if direction != "both" and (not dirs or not set(dirs) <= {"t2v", "v2t"}):
        raise FirevalError(f"--direction: unknown value {direction!r}; expected t2v, v2t or both")
    return (Direction.T2V, Direction.V2T) if direction == "both" else tuple(Direction.parse(x) for x in dirs)


def load_runs_and_labels(
    runs: list[Path],
    collection: str | None,
    split: Path | None,
    labels: list[str] | None,
    *,
    no_instance: bool,
    precedence: str | None,
    min_grade: float | None,
    run_direction: str,
    outputs: dict[str, str | os.PathLike[str] | None],
    others: dict[str, str | os.PathLike[str] | None],
    checks: bool = True,
) -> tuple[Collection, dict[str, Run], Judgments]:
    """The collection, the runs on it and the merged labels (``--labels``, ``--no-instance``,
    ``--precedence``, ``--min-grade``), once no output (``outputs``: option → path) would
    overwrite an input (the runs, collection, split, labels and ``others``: what → path).
    ``checks``: run the input checks as ``evaluate`` does (a ``warning:`` line per problem, e.g.
    a run whose rows are in another order than the collection; ``--no-checks`` skips them)."""
    from fireval import api
    from fireval.cli.check import input_checks
    from fireval.estimation.workflow import merged_labels

    guard_outputs(outputs, runs=runs, collection=collection, split=split, labels=labels, others=others)
    coll = api.load_collection(collection, split=split)
    note_collection(collection, coll)
    with default_collection_hint(collection):
        run_objs = api.load_runs(runs, coll, direction=run_direction)
    input_checks(coll, run_objs, enabled=checks, pairs=False)
    judg = merged_labels(
        coll,
        labels or [],
        include_instance=not no_instance,
        precedence=split_csv(precedence) if precedence is not None else None,
        min_grade=min_grade,
    )
    return coll, run_objs, judg
