"""File-level entry points shared by the CLI and the web app.

These functions turn paths and label specs into core objects and run the library; the CLI
only parses arguments and prints. Everything here is also usable from Python::

    from fireval import api
    coll = api.load_collection("MSRVTT_JSFUSION_test.csv")
    runs = {"clip4clip": api.load_run("clip4clip.npy", coll)}
    labels = api.label_sets(coll, ["fire.json"])           # {"original": ..., "augmented": ...}
    result = api.evaluate_runs(runs, labels)

In memory (a training loop; arrays, torch tensors on any device, or array-likes)::

    ev = api.evaluate(sims, collection="msrvtt-1ka")      # also fireval.evaluate
    ev.to_dict(names="tvr")   # {"t2v": {"R@1": 0.421, ...}, "v2t": {...}}: fractions, like ev.value()

Runs from files and arguments are read by :mod:`fireval.api_runs`, label sources and label sets
by :mod:`fireval.api_labels`; both are re-exported here. This module holds collections,
:func:`evaluate`, :func:`evaluate_runs` and the table and JSON writers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fireval.api_labels import DB_PREFIXES as DB_PREFIXES
from fireval.api_labels import _is_sqlite_file as _is_sqlite_file
from fireval.api_labels import check_precedence as check_precedence
from fireval.api_labels import common_queries as common_queries
from fireval.api_labels import label_sets as label_sets
from fireval.api_labels import label_warnings as label_warnings
from fireval.api_labels import load_labels as load_labels
from fireval.api_labels import split_label_spec as split_label_spec
from fireval.api_runs import _COMPRESSION_SUFFIXES as _COMPRESSION_SUFFIXES
from fireval.api_runs import _on_device as _on_device
from fireval.api_runs import as_score_matrix as as_score_matrix
from fireval.api_runs import check_matrix_shape as check_matrix_shape
from fireval.api_runs import load_run as load_run
from fireval.api_runs import load_runs as load_runs
from fireval.api_runs import run_from_array as run_from_array
from fireval.api_runs import run_stem as run_stem
from fireval.api_runs import split_run_spec as split_run_spec
from fireval.core import (
    Collection,
    Direction,
    FirevalError,
    InputError,
    Judgments,
    Run,
)

if TYPE_CHECKING:  # pandas loads when a table is first asked for (`fireval evaluate` prints from records)
    import pandas as pd

    from fireval.metrics import Evaluation


def load_collection(path: str | Path | None = None, *, split: str | Path | None = None) -> Collection:
    """Read a collection, detecting its format.

    ``None``, ``"example"`` or a registered name (``"msrvtt-1ka"``; see
    :mod:`fireval.formats.registry`): a bundled collection. A file: any layout of
    :func:`fireval.formats.read_collection`, detected by content (JSFusion, ``video_id,sentence``
    CSV such as DiDeMo/ActivityNet/VATEX, MSR-VTT JSON, MSVD JSON with ``split``, YouCook2 JSON,
    EPIC-Kitchens-100 CSV, LSMDC TSV, JSONL; gzip-compressed or not).
    """
    from fireval import formats
    from fireval.formats import registry

    if path is None:
        return formats.example.load_example().collection
    if isinstance(path, str) and registry.canonical(path) and not Path(path).exists():
        return registry.load(path)
    p = Path(path)
    if str(path) == "-" and not p.exists():
        raise InputError(
            "-c -: reading the collection from standard input is not supported; give the collection "
            "file's path (a .gz file is read as is)"
        )
    if not p.exists():
        raise InputError("collection file not found", source=str(p))
    if p.is_dir():
        raise InputError("is a directory; give the collection file", source=str(p))
    return formats.read_collection(p, split)


def resolve_collection(collection: Collection | str | os.PathLike[str]) -> Collection:
    """A :class:`Collection` as given, a registered name (``"msrvtt-1ka"``) or a collection file."""
    if isinstance(collection, Collection):
        return collection
    if isinstance(collection, str | os.PathLike):
        path = os.fspath(collection)
        if isinstance(collection, str) and not Path(path).suffix and not Path(path).exists():
            from fireval.formats import registry

            return registry.load(path)  # a name, not a file: unknown names list the registered ones
        return load_collection(path)
    raise InputError(
        f"collection must be a Collection, a path or a registered name such as 'msrvtt-1ka', "
        f"got {type(collection).__name__}"
    )


def evaluate(
    scores: Any = None,
    collection: Collection | str | os.PathLike[str] | Judgments | None = None,
    labels: Judgments | str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    measures: Any = None,
    direction: str | Direction | Sequence[str | Direction] = "both",
    ties: str = "tie-aware",
    unjudged: str | Sequence[str] = "lower",
    preset: str | None = None,
    per_query: bool = False,
    name: str | None = None,
    checks: bool = False,
    **options: Any,
) -> Evaluation:
    """Evaluate in memory: scores (array, tensor, :class:`Run`) against a collection's labels.

    ``scores``: captions x videos in collection order (numpy array, torch tensor on any device,
    array-like, or a :class:`Run`). ``collection``: a :class:`Collection`, a file path or a
    registered name (``"msrvtt-1ka"``). ``labels``: None = the instance labels (each caption is
    relevant to its own video); a :class:`Judgments`; or a label spec / list of specs as
    ``fireval evaluate --labels`` takes (FIRE JSON, qrels, ``.npz``, store URL), merged with
    the instance labels (load them once outside a training loop and pass the Judgments).
    ``direction``: ``"both"``, ``"t2v"`` or ``"v2t"``. ``measures``: None = the default set
    (or the preset's). ``unjudged``: ``lower`` (default), ``upper``, ``condensed``, ``worst`` /
    ``best`` (exact bounds over every labelling of the unjudged pairs) or several.
    ``min_grade=G`` (``--min-grade``, trec_eval's ``-l``): the binary measures count a doc relevant
    when its grade is >= G (nDCG, nDCG_exp and infNDCG keep the grades). Other keywords
    (``chunk_rows``, ``progress``, ``run_name``, ``labels_name``) go to
    :func:`fireval.metrics.evaluate`.

    ``checks=True`` runs the per-run input checks of ``fireval evaluate`` (alignment with the
    collection's text, truncation, orientation; :mod:`fireval.checks`, docs/checks.md) and adds
    one line per failed or warned check to ``.warnings`` (e.g. a matrix whose rows are not in the
    collection's order); ``.checks`` holds the :class:`fireval.checks.ChecksReport`. Off by
    default, since a training loop evaluates the same, already checked, layout many times.

    Returns a :class:`fireval.metrics.Evaluation`: ``.table`` (tidy DataFrame), ``.value()``,
    and ``.to_dict(names="tvr")`` → ``{"t2v": {"R@1": 0.421, ...}, "v2t": {...}}`` as fractions
    like ``.value()`` (``units="percent"``: x100; MdR/MnR as ranks) for a logger. ``.warnings`` starts with the lines of
    :func:`label_warnings` for the labels used (what ``fireval evaluate`` prints: labels
    overruled by the precedence, instance positives graded by another source).

    The older form ``evaluate(run, judgments)`` still works.

    From embeddings instead of scores (:mod:`fireval.scale`, docs/scale.md):
    ``evaluate(collection=coll, text_emb=T, video_emb=V, sim="cosine", pool="mean",
    block_size=None, client=None)`` — arrays, ``.npy`` paths/shards or Zarr; the score matrix is
    never materialised; ``client`` (a ``dask.distributed.Client``) runs the blocks on Dask.
    """
    from fireval.metrics import DEFAULT_MEASURES
    from fireval.metrics import evaluate as _evaluate

    if isinstance(collection, Judgments):  # the older form evaluate(run, judgments)
        if labels is not None:
            raise InputError(
                "collection= is a Judgments; pass labels as labels= and the collection as collection="
            )
        collection, labels = None, collection
    coll = resolve_collection(collection) if collection is not None else None
    if checks and coll is None:
        raise InputError("checks=True needs collection= (the checks compare the run with its text)")
    labels_name = "original"
    label_ws: list[str] = []
    if labels is None or (isinstance(labels, str) and labels == "instance"):
        if coll is None:
            raise InputError(
                "give collection= (a Collection, a path or a registered name such as 'msrvtt-1ka') "
                "or labels= (Judgments)"
            )
        judg = coll.instance_judgments()
    elif isinstance(labels, Judgments):
        judg, labels_name = labels, "labels"
        label_ws = label_warnings({labels_name: judg}, preset=preset)
    else:
        if coll is None:
            raise InputError("label files need collection= to join captions and videos")
        specs = [os.fspath(x) for x in ([labels] if isinstance(labels, str | os.PathLike) else labels)]
        judg, labels_name = label_sets(coll, specs, separate_named=False)["augmented"], "augmented"
        label_ws = label_warnings({labels_name: judg}, preset=preset)  # what `fireval evaluate` prints
    emb_keys = ("text_emb", "video_emb", "sim", "pool", "text_ids", "video_ids", "block_size", "client")
    emb = {k: options.pop(k) for k in emb_keys if k in options}
    if emb.get("text_emb") is not None or emb.get("video_emb") is not None:  # fireval.scale
        if scores is not None:
            raise InputError("give scores or text_emb=/video_emb=, not both")
        if checks:
            raise InputError("checks=True needs a score matrix (the checks read whole rows and columns)")
        from fireval.torch.tensors import host_array, on_device

        if on_device(emb.get("text_emb")) or on_device(emb.get("video_emb")):  # blocks on their device
            from fireval.torch.sources import evaluate_tensor_embeddings as evaluate_embeddings
        else:
            from fireval.scale.embeddings import evaluate_embeddings

            emb.update({k: host_array(emb[k]) for k in ("text_emb", "video_emb") if k in emb})

        if "directions" not in options:
            both = isinstance(direction, str) and direction.strip().lower() == "both"
            options["directions"] = ("t2v", "v2t") if both else direction
        options.setdefault("labels_name", labels_name)
        return _with_warnings(
            evaluate_embeddings(
                emb.pop("text_emb", None),
                emb.pop("video_emb", None),
                judg,
                coll,
                name=name or "embeddings",
                measures=DEFAULT_MEASURES if measures is None else measures,
                ties=ties,
                unjudged=unjudged,
                preset=preset,
                per_query=per_query,
                **emb,
                **options,
            ),
            label_ws,
        )
    if emb:
        raise InputError(f"{', '.join(sorted(emb))} only apply with text_emb= and video_emb=")
    if scores is None:
        raise InputError("give scores (captions x videos), or text_emb= and video_emb=")
    if isinstance(scores, Run):
        run = (
            scores
            if name is None
            else Run(name, scores.scores, scores.lists, scores.source, blocks=scores.blocks)
        )
    elif not checks and _on_device(scores):  # counted with torch where the tensor lives
        from fireval.torch.sources import TensorScores

        src = TensorScores(scores)
        if coll is not None:
            check_matrix_shape(src.shape, coll, Direction.T2V)
        elif tuple(src.shape) != tuple(judg.shape):
            raise InputError(f"scores have shape {tuple(src.shape)} but the labels cover {judg.shape}")
        run = Run(name=name or "run", blocks=src)
    elif coll is not None:
        run = run_from_array(scores, coll, name=name)
    else:
        m = as_score_matrix(scores)
        if tuple(m.shape) != tuple(judg.shape):
            raise InputError(f"scores have shape {tuple(m.shape)} but the labels cover {judg.shape}")
        run = Run(name=name or "run", scores=m)
    if "directions" not in options:
        options["directions"] = (
            ("t2v", "v2t")
            if isinstance(direction, str) and direction.strip().lower() == "both"
            else direction
        )
    options.setdefault("labels_name", labels_name)
    ev = _evaluate(
        run,
        judg,
        measures=DEFAULT_MEASURES if measures is None else measures,
        ties=ties,
        unjudged=unjudged,
        preset=preset,
        collection=coll,
        per_query=per_query,
        **options,
    )
    if checks:
        assert coll is not None
        from fireval.checks import run_checks

        report = run_checks(coll, {run.name: run}, pairs=False)
        ev.warnings = [*ev.warnings, *report.warnings()]
        ev.checks = report
    return _with_warnings(ev, label_ws)


def _with_warnings(ev: Evaluation, label_ws: list[str]) -> Evaluation:
    """``ev`` with the label lines of :func:`label_warnings` first in ``ev.warnings`` (the same lines
    ``fireval evaluate`` prints as ``warning: ...``)."""
    if label_ws:
        ev.warnings = [*label_ws, *(w for w in ev.warnings if w not in label_ws)]
    return ev


@dataclass
class RunsEvaluation:
    """Evaluations of several runs under several label sets, with one tidy table.

    ``records`` are the rows of ``table`` as dicts; the DataFrame is built on first access.
    """

    records: list[dict[str, Any]]
    per_query: pd.DataFrame | None
    tie_reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    label_summary: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    @cached_property
    def table(self) -> pd.DataFrame:
        """The tidy table of :func:`fireval.metrics.evaluate`, over every run and label set."""
        import pandas as pd

        from fireval.metrics.evaluate import TABLE_COLUMNS

        return pd.DataFrame(self.records, columns=TABLE_COLUMNS).astype({"n": "Int64"})  # integer n

    def to_dict(self) -> dict[str, Any]:
        """The JSON record: ``units`` (:data:`fireval.core.units.UNITS_JSON`), ``results`` (the
        table's rows: values as fractions, ``n`` an integer or null), ``ties`` and ``labels``."""
        from fireval.core.units import UNITS_JSON, int_counts

        return {
            "units": UNITS_JSON,
            "results": int_counts(json.loads(self.table.to_json(orient="records"))),
            "ties": self.tie_reports,
            "labels": self.label_summary,
        }


def evaluate_runs(
    runs: Mapping[str, Run],
    labels: Mapping[str, Judgments],
    *,
    collection: Collection | None = None,
    progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> RunsEvaluation:
    """Evaluate every run under every label set (``options`` go to :func:`fireval.metrics.evaluate`).

    With several label sets every set is evaluated over the same queries (:func:`common_queries`),
    so the original-vs-augmented Δ compares like with like; the table's ``n`` states the count.
    """
    from fireval.metrics import evaluate

    if not runs:
        raise FirevalError("no runs to evaluate")
    if len(labels) > 1 and "queries" not in options:
        options = {**options, "queries": common_queries(labels)}
    records: list[dict[str, Any]] = []
    per_query: list[pd.DataFrame] = []
    ties: dict[str, dict[str, Any]] = {}
    for run_name, run in runs.items():
        for label_name, judg in labels.items():
            ev = evaluate(
                run,
                judg,
                collection=collection,
                run_name=run_name,
                labels_name=label_name,
                progress=progress,
                **options,
            )
            records.extend(ev.records)
            if ev.per_query is not None:
                per_query.append(ev.per_query)
            ties[f"{run_name}/{label_name}"] = ev.tie_report
    if per_query:
        import pandas as pd
    return RunsEvaluation(
        records=records,
        per_query=pd.concat(per_query, ignore_index=True) if per_query else None,
        tie_reports=ties,
        label_summary={
            name: {
                src: {**c, "overruled": j.overruled.get(src, 0), "regraded": j.regraded.get(src, 0)}
                for src, c in j.counts_by_source().items()
            }
            for name, j in labels.items()
        },
    )


TABLE_FORMATS = (".tsv", ".txt", ".csv", ".jsonl", ".json", ".parquet")


def check_table_path(path: str | Path) -> str:
    """The lower-case extension of a per-query table path, or an :class:`InputError` naming it.

    Called before any work so that a bad output name fails fast and nothing is half-written.
    """
    ext = Path(path).suffix.lower()
    if ext not in TABLE_FORMATS:
        raise InputError("unknown table format; use .tsv, .csv, .jsonl or .parquet", source=str(path))
    return ext


def write_table(df: pd.DataFrame, path: str | Path) -> None:
    """Write a tidy table as TSV, CSV, JSON lines or parquet (by extension), atomically."""
    from fireval.atomic import atomic_write

    p = Path(path)
    ext = check_table_path(p)
    if ext == ".parquet":
        with atomic_write(p, "wb") as fh:
            df.to_parquet(fh, index=False)
    elif ext in (".tsv", ".txt", ".csv"):
        with atomic_write(p, "w", encoding="utf-8", newline="") as fh:
            df.to_csv(fh, sep="," if ext == ".csv" else "\t", index=False)
    elif ext in (".jsonl", ".json"):
        with atomic_write(p, "w", encoding="utf-8") as fh:
            df.to_json(fh, orient="records", lines=ext == ".jsonl")


def write_json(obj: Any, path: str | Path) -> None:
    """Write JSON atomically."""
    from fireval.atomic import atomic_write

    with atomic_write(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, default=_json_default)
        fh.write("\n")


def _json_default(o: Any) -> Any:

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
