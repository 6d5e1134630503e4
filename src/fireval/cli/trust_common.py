"""What ``fireval report``, ``compare`` and ``budget`` share: their options and input steps.

The options declared once (:data:`RunsArg`, :data:`CollectionOpt`, :data:`LabelsOpt`, ...);
``--names`` and ``-m`` parsing (:func:`check_names`, :func:`_measures`; :func:`_without_medians`
drops the medians the per-query-mean verbs cannot use); ``-d`` of ``compare`` and ``budget``
(:func:`_one_direction`); and the loading of collection, runs and label sets with the input
checks (:func:`_load`) and each run's per-query values (:func:`_per_query_values`).

Like every verb module, it imports only Typer (and the CLI's own helpers) at its top, everything
else inside the functions (``tests/cli/test_import_cost.py``).
"""

from pathlib import Path
from typing import Annotated, Any

import typer

from fireval.cli.check import input_checks
from fireval.cli.common import (
    COLLECTION_HELP,
    check_measures_option,
    check_precedence_option,
    default_collection_hint,
    note_collection,
    seed_option,
    sets_with_grade,
    split_csv,
)

RunsArg = Annotated[
    list[Path], typer.Argument(help="Score matrices (.npy/.npz, caption x video) or TREC run files.")
]
CollectionOpt = Annotated[str | None, typer.Option("--collection", "-c", help=COLLECTION_HELP)]
LabelsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--labels",
        "-l",
        help="Extra labels: FIRE JSON, TREC qrels, .npz or store URL (repeatable; NAME=PATH: a set of its own).",
    ),
]
SplitOpt = Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")]
MeasuresOpt = Annotated[
    str,
    typer.Option(
        "--measures",
        "-m",
        callback=check_measures_option,
        help="Comma-separated measures (see `fireval measures`).",
    ),
]
DirectionOpt = Annotated[str, typer.Option("--direction", "-d", help="t2v or v2t.")]
ResamplesOpt = Annotated[int, typer.Option(help="Bootstrap / randomisation resamples.")]
SeedOpt = Annotated[int, typer.Option(callback=seed_option(), help="Random seed (same seed, same numbers).")]
NamesOpt = Annotated[
    str,
    typer.Option(
        "--names",
        help="Measure names in every output: tvr (C@K printed as R@K, as TVR papers) or ir (fireval's C@K). "
        "-m accepts R@K as C@K either way; Recall@K is IR recall.",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
PrecedenceOpt = Annotated[
    str | None,
    typer.Option(
        callback=check_precedence_option,
        help="Merge policy: source kinds, first wins (default: FIRE's, instance positives kept).",
    ),
]


def check_names(names: str) -> None:
    """``--names`` must be ``tvr`` or ``ir``."""
    from fireval.core.errors import FirevalError

    if names not in ("tvr", "ir"):
        raise FirevalError(f"--names: expected tvr or ir, got {names!r}")


def _measures(measures: str, names: str) -> list[str]:
    """``-m`` as canonical names: ``R@5`` is ``C@5`` whatever ``--names`` (which only names outputs)."""
    from fireval.metrics.measures import parse_measure

    del names
    return list(dict.fromkeys(str(parse_measure(m, "tvr")) for m in split_csv(measures)))


def _without_medians(measures: list[str], verb: str, names: str) -> list[str]:
    """``measures`` without the medians over queries (``MdR``), which ``verb`` cannot handle.

    ``compare`` tests and ``budget`` resamples per-query *means*; a median has neither (the mean
    of MdR's per-query ranks is MnR). Each measure says how it aggregates
    (:attr:`fireval.metrics.measures.Measure.aggregate`). Given among others (the paper set
    R@1,R@5,R@10,MdR,MnR), the medians are dropped with one note on stderr; given alone, a
    one-line error (exit 2).
    """
    from fireval.core.errors import FirevalError
    from fireval.metrics.measures import display_name, parse_measure

    medians = [parse_measure(m) for m in measures if parse_measure(m).aggregate == "median"]
    if not medians:
        return measures
    kept = [m for m in measures if parse_measure(m) not in medians]
    dropped = ", ".join(display_name(m, names) for m in medians)
    why = (
        f"{dropped} {'is a median' if len(medians) == 1 else 'are medians'} over queries and {verb} works "
        f"on per-query means ({'; '.join(m.median_note for m in medians)})"
    )
    if not kept:
        means = ", ".join(str(m.mean_counterpart) for m in medians)
        raise FirevalError(f"-m: nothing left to {verb}: {why}; use {means} or another measure")
    typer.echo(
        f"note: -m: {dropped} left out: {why}; going on with {', '.join(display_name(m, names) for m in kept)}",
        err=True,
    )
    return kept


def _one_direction(direction: str) -> str:
    """``-d`` of ``compare`` and ``budget``: ``t2v`` or ``v2t`` (checked before any file is read)."""
    from fireval.core.errors import FirevalError

    if direction.strip() not in ("t2v", "v2t"):
        raise FirevalError(f"--direction: expected t2v or v2t, got {direction!r}")
    return direction.strip()


def _load(
    collection: str | None,
    split: Path | None,
    runs: list[Path],
    labels: list[str] | None,
    precedence: str | None,
    checks_out: list | None = None,
) -> tuple[Any, dict, dict]:
    """Collection, runs and label sets; with ``checks_out`` the input checks run and their report is appended."""
    from fireval import api

    coll = api.load_collection(collection, split=split)
    note_collection(collection, coll)
    with default_collection_hint(collection):
        run_objs = api.load_runs(runs, coll)
    if checks_out is not None:
        checks_out.append(input_checks(coll, run_objs))
    prec = split_csv(precedence) if precedence is not None else None
    sets = api.label_sets(coll, labels or [], precedence=prec)
    for w in api.label_warnings(sets, explicit=precedence is not None):
        typer.echo(f"warning: {w}", err=True)
    return coll, run_objs, sets


def _per_query_values(
    collection: str | None,
    split: Path | None,
    runs: list[Path],
    labels: list[str] | None,
    precedence: str | None,
    measures: list[str],
    direction: str,
    checks_out: list | None = None,
    *,
    min_grade: float | None = None,
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The last (most augmented) label set's name and each run's per-query values by measure."""
    from fireval.analysis.trust import metrics_values
    from fireval.core.direction import Direction

    coll, run_objs, sets = _load(collection, split, runs, labels, precedence, checks_out)
    sets = sets_with_grade(sets, min_grade)
    label_name = list(sets)[-1]
    fn = metrics_values(collection=coll, min_grade=min_grade)
    d = Direction.parse(direction)
    return label_name, {name: dict(fn(run, sets[label_name], d, measures)) for name, run in run_objs.items()}
