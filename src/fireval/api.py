"""File-level entry points shared by the CLI and the web app.

These functions turn paths and label specs into core objects and run the library; the CLI
only parses arguments and prints. Everything here is also usable from Python::

    from fireval import api
    coll = api.load_collection("MSRVTT_JSFUSION_test.csv")
    runs = {"clip4clip": api.load_run("clip4clip.npy", coll)}
    labels = api.label_sets(coll, ["fire.json"])           # {"original": ..., "augmented": ...}
    result = api.evaluate_runs(runs, labels)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fireval.core import DEFAULT_PRECEDENCE, Collection, FirevalError, InputError, Judgments, Run, merge

DB_PREFIXES = ("sqlite:", "postgresql:", "postgresql+", "postgres:")


def load_collection(path: str | Path | None = None, *, split: str | Path | None = None) -> Collection:
    """Read a collection, detecting its format.

    ``None`` or ``"example"``: the bundled MSR-VTT 1k-A example. ``*.csv``: JSFusion 1k-A.
    ``*.json``: MSR-VTT official test (``{video: {sen_id: caption}}``) or MSVD
    (``{video: [captions]}``, which needs ``split``, e.g. ``test_list.txt``).
    """
    from fireval import formats

    if path is None or str(path) == "example":
        return formats.example.load_example().collection
    p = Path(path)
    if not p.exists():
        raise InputError("collection file not found", source=str(p))
    if p.suffix.lower() == ".csv":
        return formats.read_msrvtt_jsfusion(p)
    if p.suffix.lower() == ".json":
        try:
            with p.open("rb") as fh:
                head = fh.read(1 << 16).decode("utf-8", "replace")
        except OSError as exc:
            raise InputError(f"cannot read: {exc}", source=str(p)) from None
        body = head.lstrip()[1:].lstrip()
        # {"video": {...}} is MSR-VTT official; {"video": [...]} is MSVD
        colon = body.find(":")
        first_value = body[colon + 1 :].lstrip()[:1] if colon >= 0 else ""
        if first_value == "[":
            if split is None:
                raise InputError("an MSVD captions file needs --split (e.g. test_list.txt)", source=str(p))
            return formats.read_msvd(p, split)
        return formats.read_msrvtt_official(p, split)
    raise InputError(
        "unknown collection format; expected .csv (JSFusion 1k-A) or .json (MSR-VTT/MSVD)", source=str(p)
    )


def load_run(
    path: str | Path,
    collection: Collection,
    *,
    name: str | None = None,
    direction: str = "t2v",
    query_ids: str | Path | None = None,
    doc_ids: str | Path | None = None,
) -> Run:
    """Read a run: ``.npy``/``.npz`` score matrices (memory-mapped) or a TREC run file."""
    from fireval import formats

    p = Path(path)
    if not p.exists():
        raise InputError("run file not found", source=str(p))
    if p.suffix.lower() in (".npy", ".npz"):
        return formats.read_scores(
            p, collection, direction=direction, query_ids=query_ids, doc_ids=doc_ids, name=name
        )
    run = formats.read_trec_run(p, collection, direction=direction)
    return run if name is None else Run(name=name, scores=run.scores, lists=run.lists, source=run.source)


def load_runs(
    paths: Sequence[str | Path], collection: Collection, *, direction: str = "t2v"
) -> dict[str, Run]:
    """Read several runs, each named by its file stem (``a.npy`` → ``a``; a repeated stem gets ``'``)."""
    runs: dict[str, Run] = {}
    for path in paths:
        name = Path(path).stem
        while name in runs:
            name += "'"
        runs[name] = load_run(path, collection, name=name, direction=direction)
    return runs


def load_labels(spec: str | Path, collection: Collection) -> Judgments:
    """One label source: ``instance``, a store URL (``sqlite:///file.db``) or SQLite file, or a label file.

    Label files are FIRE JSON, TREC qrels, or ``.npz`` graded labels (proxies, auto labels).
    """
    s = str(spec)
    if s == "instance":
        return collection.instance_judgments()
    if s.startswith(DB_PREFIXES):
        from fireval.judging import store_judgments

        if s.startswith("sqlite:///"):  # reading must not create an empty store on a typo
            db_path = s[len("sqlite:///") :].split("?", 1)[0]
            if db_path not in ("", ":memory:") and not Path(db_path).exists():
                raise InputError(
                    "no annotation store here (create one with `fireval judgments init`)", source=s
                )

        return store_judgments(s, collection)
    from fireval import formats

    p = Path(s)
    if not p.exists():
        raise InputError("label file not found", source=s)
    if _is_sqlite_file(p):  # a store given as a plain path, as `fireval serve --db` accepts
        from fireval.judging import store_judgments

        return store_judgments(f"sqlite:///{p.resolve()}", collection)
    return formats.read_labels(p, collection)


def _is_sqlite_file(path: Path) -> bool:
    """True when ``path`` starts with the SQLite 3 file header."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def label_sets(
    collection: Collection,
    specs: Sequence[str | Path] = (),
    *,
    include_instance: bool = True,
    precedence: Sequence[str] = DEFAULT_PRECEDENCE,
    augmented_name: str = "augmented",
) -> dict[str, Judgments]:
    """``{"original": instance labels, "augmented": instance merged with every spec}``.

    With no specs only ``original`` is returned. Without the instance labels the merged set
    is the only one.
    """
    _check_precedence(precedence)
    sets: dict[str, Judgments] = {}
    instance = collection.instance_judgments()
    if include_instance:
        sets["original"] = instance
    extra = [load_labels(s, collection) for s in specs]
    if extra:
        parts = ([instance] if include_instance else []) + extra
        sets[augmented_name] = merge(parts, precedence)
    if not sets:
        raise FirevalError("no labels: give --labels or keep the instance labels")
    return sets


def _check_precedence(precedence: Sequence[str]) -> None:
    """Each entry must be a source kind (``human``) or a source name of a kind (``proxy:bow``).

    A typo would otherwise rank last silently and change which label wins a conflict.
    """
    from fireval.core.judgments import SOURCE_KINDS, source_kind

    if not list(precedence):
        raise InputError(
            f"--precedence is empty; expected source kinds such as {','.join(DEFAULT_PRECEDENCE)}"
        )
    for key in precedence:
        try:
            source_kind(str(key))
        except InputError:
            raise InputError(
                f"--precedence: unknown label source {key!r}; expected kinds {', '.join(SOURCE_KINDS)} "
                "or a source name such as proxy:bow"
            ) from None


@dataclass
class RunsEvaluation:
    """Evaluations of several runs under several label sets, with one tidy table."""

    table: pd.DataFrame
    per_query: pd.DataFrame | None
    tie_reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    label_summary: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "results": json.loads(self.table.to_json(orient="records")),
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
    """Evaluate every run under every label set (``options`` go to :func:`fireval.metrics.evaluate`)."""
    from fireval.metrics import evaluate

    if not runs:
        raise FirevalError("no runs to evaluate")
    tables, per_query, ties = [], [], {}
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
            tables.append(ev.table)
            if ev.per_query is not None:
                per_query.append(ev.per_query)
            ties[f"{run_name}/{label_name}"] = ev.tie_report
    return RunsEvaluation(
        table=pd.concat(tables, ignore_index=True),
        per_query=pd.concat(per_query, ignore_index=True) if per_query else None,
        tie_reports=ties,
        label_summary={name: j.counts_by_source() for name, j in labels.items()},
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
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
