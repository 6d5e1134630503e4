"""FIRE JSON: the human labels released with Rodriguez et al. (2023), "Fighting FIRe with FIRE".

Schema (authors' release)::

    {"annotations": [record, ...], "disagreements": [record, ...],
     "source_ds": ..., "source_data_md5": ..., "source_annotator_map_md5": ..., "created_ds": ...,
     "email": ..., "creator": ..., "website": ..., "license": ..., "datasets": [...]}

An annotation record has ``annotator_ids: [int]``, ``label: "relevant"|"irrelevant"``,
``video_id: str``, ``query: str`` (the caption *text*), ``annotator_labels: [label]``,
``response_ids: [int]``, ``queue_ids: [int]``, ``models: [str]`` and ``dataset: "MSVD"|"MSRVTT"``.
A disagreement record has the same fields without ``label``.

Import rules (:func:`read_fire_json`):

1. ``video_id``, ``query`` (and ``label`` for annotations) are required; the other fields are
   optional but type-checked. Any malformed record raises :class:`InputError` naming the file and
   ``annotations[i]`` / ``disagreements[i]``.
2. A record whose ``dataset`` differs from the collection's (``dataset`` argument, else inferred
   from the collection name: ``msrvtt*`` → MSRVTT, ``msvd*`` → MSVD) is *unmatched*, reason
   ``"other dataset"``; so is one whose ``video_id`` is not in the collection (``"unknown video"``)
   and one whose normalised query matches no caption (``"caption text not in collection"``).
   Unmatched records are listed in :attr:`FireImport.unmatched`, never silently dropped.
3. The query is joined by :func:`fireval.core.normalise` against every caption of the
   collection: a text shared by several captions labels *every* one of them. Such records are
   counted in :attr:`FireImport.shared_text_records` and reported in one warning line
   (:attr:`FireImport.warnings`, returned, not logged). So a :func:`judgments_to_fire_records` → write →
   read round trip returns the same judgments only when no two captions share a normalised text
   (and grades are 0/1); otherwise labels spread to same-text captions (docs/formats.md).
4. Per (caption, video) pair: if all annotation records for it agree, it is judged (grade 1 for
   relevant, 0 for irrelevant), with the records' annotator ids, labels, response ids, queue ids
   and models concatenated into ``details``. If annotation records conflict, the pair is left
   unjudged (``Judgments.unresolved``) and counted in :attr:`FireImport.conflicts`. A pair that
   only has disagreement records stays unjudged (``unresolved``). A disagreement record does not
   override an agreeing label for the same pair from an annotation record (it carries no label;
   e.g. a later adjudicated round). An unresolved pair keeps the list fields of all its records
   in ``details``, so a read → :func:`judgments_to_fire_records` → write round trip preserves
   the disagreements' annotator ids, labels, response ids, queue ids and models.
5. A record that repeats an earlier record of the same section (same query, video, label,
   annotator ids and non-empty ``response_ids``) lists the same responses again: it is skipped (its votes would
   count twice in ``details``), counted in :attr:`FireImport.repeated_records` and reported in
   one warning line.

Writing (:func:`write_fire_json`): with ``strict=True`` the document must follow the authors'
data model (:func:`schema_problems`: required strings are strings, ``models`` ∈ :data:`MODELS`,
``dataset`` ∈ :data:`DATASETS`; ``extended=True`` accepts other model and dataset names), else
nothing is written and the error names the first offending field and value.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import itertools
import json
import logging
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from fireval.atomic import atomic_write
from fireval.core import Collection, InputError, Judgments, normalise
from fireval.formats.textio import (
    LABEL_FORMATS,
    PathLike,
    content_head,
    label_format,
    loads_bounded,
    read_text,
)

LABELS = ("relevant", "irrelevant")
DATASETS = ("MSRVTT", "MSVD")
MODELS = ("CLIP4CLIP", "SSB", "CE")
"""The models of the authors' data model (``models`` enum); other run names need ``--extended``."""
EXTENSION_KEYS = frozenset({"fireval"})
"""Extra record keys an ``extended`` file may carry (the item's provenance, :mod:`fireval.judging.provenance`)."""
META_KEYS = (
    "source_ds",
    "source_data_md5",
    "source_annotator_map_md5",
    "created_ds",
    "email",
    "creator",
    "website",
    "license",
    "datasets",
)
LIST_FIELDS = {
    "annotator_ids": int,
    "annotator_labels": str,
    "response_ids": int,
    "queue_ids": int,
    "models": str,
}


class Unmatched(NamedTuple):
    """A record that could not be joined: which record (``"annotations[12]"``), its text, video, why."""

    record: str
    query: str
    video_id: str
    reason: str


@dataclass
class FireImport:
    """Result of :func:`read_fire_json`."""

    judgments: Judgments
    unmatched: list[Unmatched] = field(default_factory=list)
    disagreements: int = 0
    """Number of disagreement records in the file."""
    conflicts: int = 0
    """(caption, video) pairs left unjudged because annotation records gave different labels."""
    n_annotations: int = 0
    n_pairs_unresolved: int = 0
    dataset: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    shared_text_records: int = 0
    """Joined records whose normalised query is the text of several captions (each labels all of them)."""
    repeated_records: int = 0
    """Records skipped because an earlier record of the same section has the same query, video,
    label, annotator ids and (non-empty) response ids: the same responses listed twice, counted once."""
    warnings: list[str] = field(default_factory=list)
    """One line each (e.g. labels spread to same-text captions); returned, not logged, by :func:`read_fire_json`."""

    def summary(self) -> dict[str, Any]:
        """Counts for reports: records read, joined, unmatched by reason, pairs judged / unresolved."""
        g = self.judgments.grades
        reasons = Counter(u.reason for u in self.unmatched)
        return {
            "dataset": self.dataset,
            "annotation_records": self.n_annotations,
            "disagreement_records": self.disagreements,
            "unmatched_records": len(self.unmatched),
            "unmatched_by_reason": dict(reasons),
            "judged_pairs": int(g.size),
            "relevant_pairs": int((g > 0).sum()),
            "irrelevant_pairs": int((g == 0).sum()),
            "unresolved_pairs": self.n_pairs_unresolved,
            "conflicting_pairs": self.conflicts,
        }


def _dataset_key(name: str) -> str:
    return "".join(ch for ch in str(name).upper() if ch.isalnum())


def infer_dataset(collection: Collection) -> str | None:
    """``"MSRVTT"`` / ``"MSVD"`` from the collection name, else ``None`` (no filtering)."""
    key = _dataset_key(collection.name)
    for ds in DATASETS:
        if key.startswith(ds):
            return ds
    return None


def validate_record(rec: Any, where: str, *, need_label: bool, src: str | None = None) -> None:
    """Raise :class:`InputError` unless ``rec`` follows the FIRE record schema."""
    if not isinstance(rec, dict):
        raise InputError(f"{where}: expected an object, found {type(rec).__name__}", source=src)
    required = ("video_id", "query", "label") if need_label else ("video_id", "query")
    for k in required:
        if k not in rec:
            raise InputError(f"{where}: missing key {k!r}", source=src)
    for k in ("video_id", "query"):
        if not isinstance(rec[k], str) or not rec[k].strip():
            raise InputError(f"{where}: {k!r} must be a non-empty string, found {rec[k]!r}", source=src)
    if "label" in rec and rec["label"] not in LABELS:
        raise InputError(
            f"{where}: 'label' must be 'relevant' or 'irrelevant', found {rec['label']!r}", source=src
        )
    if "dataset" in rec and not isinstance(rec["dataset"], str):
        raise InputError(f"{where}: 'dataset' must be a string, found {rec['dataset']!r}", source=src)
    for k, typ in LIST_FIELDS.items():
        v = rec.get(k)
        if v is None and k not in rec:
            continue
        if type(v) is not list or (v and not set(map(type, v)) <= {typ}):
            raise InputError(f"{where}: {k!r} must be a list of {typ.__name__}, found {v!r}", source=src)
        if k == "annotator_labels" and v and not set(v) <= _LABEL_SET:
            raise InputError(
                f"{where}: 'annotator_labels' must hold 'relevant'/'irrelevant', found {v!r}", source=src
            )


_LABEL_SET = frozenset(LABELS)


@contextlib.contextmanager
def _no_gc():
    """Pause the cyclic garbage collector while millions of acyclic JSON objects are built.

    Parsing creates no reference cycles, but each allocation burst triggers full collections
    that rescan the whole parsed tree (4-5x slower on the 683K-record FIRE file).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_fire_json(
    path: PathLike, collection: Collection, dataset: str | None = None, *, log: bool = False
) -> FireImport:
    """Import FIRE JSON labels onto ``collection`` (rules in the module docstring).

    Returns a :class:`FireImport` whose ``judgments`` have source ``"human"``. Its
    ``warnings`` (records whose text several captions share) are returned, not logged: the
    caller reports them, as :func:`fireval.formats.read_labels` does through
    ``Judgments.warnings`` and the CLI on stderr. ``log=True`` also logs them (``logging``,
    logger ``fireval.formats.fire_json``), for callers that want them in their log.
    """
    with _no_gc():
        imp = _read_fire_json(path, collection, dataset)
    for w in imp.warnings if log else ():
        logging.getLogger(__name__).warning("%s", w)
    return imp


def _read_fire_json(path: PathLike, collection: Collection, dataset: str | None) -> FireImport:
    src = str(path)
    kind = label_format(path)  # by content: qrels or a zip under a .json name get a clear error
    if kind != "fire" and content_head(path)[1]:  # (an empty file: read_text says so)
        raise InputError(
            f"the content is {LABEL_FORMATS[kind]}, not FIRE JSON; read label files with "
            "fireval.formats.read_labels (or --labels), which go by content",
            source=src,
        )
    text = read_text(path)
    try:
        data = loads_bounded(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON: {exc.msg} (column {exc.colno})", source=src, line=exc.lineno
        ) from None
    if not isinstance(data, dict):
        raise InputError(
            f"expected a JSON object with 'annotations', found {type(data).__name__}", source=src
        )
    if "annotations" not in data:
        raise InputError(f"missing key 'annotations' (keys: {sorted(data)[:8]})", source=src)
    anns, dis = data["annotations"], data.get("disagreements", [])
    for key, val in (("annotations", anns), ("disagreements", dis)):
        if not isinstance(val, list):
            raise InputError(f"{key!r} must be a list, found {type(val).__name__}", source=src)
    ds = _dataset_key(dataset) if dataset else infer_dataset(collection)
    vindex, nindex = collection.video_index, collection.normalised_index

    unmatched: list[Unmatched] = []
    shared, spread = 0, 0  # records whose text several captions share; the extra pairs they label
    ds_keys: dict[str, str] = {}
    text_rows: dict[str, tuple[str, list[int]]] = {}  # query text -> (normalised, caption rows)
    # (caption, video) -> list of (label or None, record)
    pairs: dict[tuple[int, int], list[tuple[str | None, dict[str, Any]]]] = {}
    seen: set[tuple[Any, ...]] = set()  # repeat_key of each record, with its normalised text and video
    repeated: list[str] = []  # where the records repeating an earlier one are
    for section, records, need_label in (("annotations", anns, True), ("disagreements", dis, False)):
        for i, rec in enumerate(records):
            where = f"{section}[{i}]"
            validate_record(rec, where, need_label=need_label, src=src)
            q, v = rec["query"], rec["video_id"]
            rds = rec.get("dataset")
            if ds is not None and rds is not None:
                if rds not in ds_keys:
                    ds_keys[rds] = _dataset_key(rds)
                if ds_keys[rds] != ds:
                    unmatched.append(Unmatched(where, q, v, "other dataset"))
                    continue
            col = vindex.get(v)
            if col is None:
                unmatched.append(Unmatched(where, q, v, "unknown video"))
                continue
            got = text_rows.get(q)
            if got is None:
                norm = normalise(q)
                got = text_rows[q] = (norm, nindex.get(norm, []))
            norm, rows = got
            if not rows:
                unmatched.append(Unmatched(where, q, v, "caption text not in collection"))
                continue
            label = rec["label"] if need_label else None
            same = repeat_key(rec, label)
            if same is not None:  # the same responses again (e.g. a merged file): counted once
                twice = (norm, col, *same)
                if twice in seen:
                    repeated.append(where)
                    continue
                seen.add(twice)
            if len(rows) > 1:
                shared += 1
                spread += len(rows) - 1
            for r in rows:
                pairs.setdefault((r, col), []).append((label, rec))

    jr, jc, jg, unresolved = [], [], [], []
    details: dict[tuple[int, int], dict[str, Any]] = {}
    conflicts = 0
    for (r, c), entries in pairs.items():
        labels = {lab for lab, _ in entries if lab is not None}
        if len(labels) == 1:
            lab = labels.pop()
            jr.append(r)
            jc.append(c)
            jg.append(1.0 if lab == "relevant" else 0.0)
            if len(entries) == 1:  # the common case: share the parsed lists
                rec = entries[0][1]
                details[(r, c)] = {k: rec.get(k, []) for k in LIST_FIELDS}
            else:
                recs = [rec for lb, rec in entries if lb is not None]
                details[(r, c)] = {k: [x for rec in recs for x in rec.get(k, [])] for k in LIST_FIELDS}
        else:
            conflicts += len(labels) > 1
            unresolved.append((r, c))
            # a disagreement keeps every field of its records (round trip through the writer)
            details[(r, c)] = {k: [x for _, rec in entries for x in rec.get(k, [])] for k in LIST_FIELDS}
    judg = Judgments.from_arrays(
        collection.shape,
        np.asarray(jr, np.int64),
        np.asarray(jc, np.int64),
        np.asarray(jg),
        "human",
        details=details,
        unresolved=np.asarray(unresolved, np.int64).reshape(-1, 2),
        origin=src,
    )
    meta = {k: data[k] for k in META_KEYS if k in data}
    warnings = []
    if repeated:
        warnings.append(
            f"{src}: {len(repeated)} FIRE record(s) repeat an earlier record of the same section, "
            f"query, video, label, annotator ids and response ids (first: {repeated[0]}); each response is "
            "counted once"
        )
    if shared:
        warnings.append(
            f"{src}: {shared} FIRE record(s) name a query text that several captions of the collection "
            f"share after normalisation; FIRE JSON keys labels by text, so each labels every such caption "
            f"({spread} caption-video pair(s) beyond one caption per record)"
        )
    return FireImport(
        judgments=judg,
        unmatched=unmatched,
        disagreements=len(dis),
        conflicts=conflicts,
        n_annotations=len(anns),
        n_pairs_unresolved=len(unresolved),
        dataset=ds,
        meta=meta,
        shared_text_records=shared,
        repeated_records=len(repeated),
        warnings=warnings,
    )


def repeat_key(rec: Mapping[str, Any], label: str | None) -> tuple[Any, ...] | None:
    """What makes a record of a (caption, video) pair a repeat of another record of that pair:
    its label (``None`` for a disagreement), annotator ids and response ids; ``None`` when it has
    no response ids (then it repeats nothing). One rule for :func:`read_fire_json` (with the record's normalised text and video) and
    :func:`fireval.judging.agreement.items_from_fire_json`."""
    resp = rec.get("response_ids")
    if not resp:
        return None
    return (label, tuple(rec.get("annotator_ids") or ()), tuple(resp))


_RECORD_KEYS = (
    "annotator_ids",
    "label",
    "video_id",
    "query",
    "annotator_labels",
    "response_ids",
    "queue_ids",
)


def schema_problems(doc: Mapping[str, Any], *, extended: bool = False, limit: int = 20) -> list[str]:
    """What keeps ``doc`` from following the authors' data model (empty list: it does).

    The model (Rodriguez et al. 2023, released labels' datasheet): top-level keys exactly
    :data:`META_KEYS` plus ``annotations`` and ``disagreements``; the meta fields are strings
    (not null) except ``datasets``, a list of ``"MSVD"``/``"MSRVTT"``; an annotation has exactly
    ``annotator_ids: [int]``, ``label``, ``video_id: str``, ``query: str``,
    ``annotator_labels: [label]``, ``response_ids: [int]``, ``queue_ids: [int]``,
    ``models: [CLIP4CLIP|SSB|CE]``, ``dataset: MSVD|MSRVTT``; a disagreement the same without
    ``label``. ``extended`` accepts any non-empty model and dataset names (fireval's extension
    for other runs and collections; such a file is *not* valid for the authors' tools).
    Each problem names the field and the value, e.g. ``annotations[3].models[0]: 'GRAM' is not
    one of CLIP4CLIP, SSB, CE``. At most ``limit`` problems are listed.
    """
    return list(itertools.islice(_problems(doc, extended), limit))


def _problems(doc: Mapping[str, Any], extended: bool) -> Iterator[str]:
    want = {"annotations", "disagreements", *META_KEYS}
    yield from (f"{k}: missing" for k in sorted(want - set(doc)))
    yield from (f"{k}: not a field of the FIRE data model" for k in sorted(set(doc) - want))
    for k in META_KEYS:
        if k != "datasets" and k in doc and not isinstance(doc[k], str):
            yield f"{k}: must be a string, found {doc[k]!r}"
    ds = doc.get("datasets")
    if not isinstance(ds, list):
        yield f"datasets: must be a list, found {ds!r}"
    else:
        yield from (
            f"datasets[{i}]: {_enum_msg(d, DATASETS)}"
            for i, d in enumerate(ds)
            if not _enum_ok(d, DATASETS, extended)
        )
    for section, need_label in (("annotations", True), ("disagreements", False)):
        recs = doc.get(section)
        if not isinstance(recs, list):
            yield f"{section}: must be a list, found {type(recs).__name__}"
            continue
        keys = {*_RECORD_KEYS, "models", "dataset"} - (set() if need_label else {"label"})
        for i, rec in enumerate(recs):
            yield from _record_problems(rec, f"{section}[{i}]", keys, extended)


def _record_problems(rec: Any, where: str, keys: set[str], extended: bool) -> Iterator[str]:
    if not isinstance(rec, dict):
        yield f"{where}: must be an object"
        return
    yield from (f"{where}.{k}: missing" for k in sorted(keys - set(rec)))
    allowed = keys | EXTENSION_KEYS if extended else keys
    yield from (f"{where}.{k}: not a field of the FIRE data model" for k in sorted(set(rec) - allowed))
    for k in ("video_id", "query"):
        if k in rec and not isinstance(rec[k], str):
            yield f"{where}.{k}: must be a string, found {rec[k]!r}"
    if "label" in keys and "label" in rec and rec["label"] not in LABELS:
        yield f"{where}.label: {rec['label']!r} is not relevant or irrelevant"
    if "dataset" in rec and not _enum_ok(rec["dataset"], DATASETS, extended):
        yield f"{where}.dataset: {_enum_msg(rec['dataset'], DATASETS)}"
    for k, typ in LIST_FIELDS.items():
        if k not in rec:
            continue
        v = rec[k]
        if not isinstance(v, list):
            yield f"{where}.{k}: must be a list, found {v!r}"
            continue
        for j, x in enumerate(v):
            if type(x) is not typ:
                yield f"{where}.{k}[{j}]: must be a {typ.__name__}, found {x!r}"
            elif k == "annotator_labels" and x not in LABELS:
                yield f"{where}.{k}[{j}]: {x!r} is not relevant or irrelevant"
            elif k == "models" and not _enum_ok(x, MODELS, extended):
                yield f"{where}.{k}[{j}]: {_enum_msg(x, MODELS)} (map run names with --model-name RUN=MODEL, or --extended)"


def _enum_ok(value: Any, allowed: Sequence[str], extended: bool) -> bool:
    if extended:
        return isinstance(value, str) and bool(value.strip())
    return value in allowed


def _enum_msg(value: Any, allowed: Sequence[str]) -> str:
    return f"{value!r} is not one of {', '.join(allowed)}"


def write_fire_json(
    path: PathLike,
    annotations: Sequence[Mapping[str, Any]],
    disagreements: Sequence[Mapping[str, Any]] = (),
    meta: Mapping[str, Any] | None = None,
    *,
    strict: bool = False,
    extended: bool = False,
) -> None:
    """Write records in the authors' schema, atomically.

    Records are validated (annotations need ``label``; disagreement records must not have one).
    ``meta`` may set any of :data:`META_KEYS`; other keys are an error. ``created_ds`` defaults
    to the current UTC time, ``datasets`` to the sorted datasets of the records, the rest to
    ``None``. With ``strict`` the whole document must pass :func:`schema_problems` (with
    ``extended``: fireval's extension), else an :class:`InputError` names the first offending
    field and value and nothing is written.
    """
    with _no_gc():
        _write_fire_json(path, annotations, disagreements, meta, strict, extended)


def _write_fire_json(
    path: PathLike,
    annotations: Sequence[Mapping[str, Any]],
    disagreements: Sequence[Mapping[str, Any]],
    meta: Mapping[str, Any] | None,
    strict: bool = False,
    extended: bool = False,
) -> None:
    meta = dict(meta or {})
    unknown = sorted(set(meta) - set(META_KEYS))
    if unknown:
        raise InputError(
            f"unknown FIRE JSON meta key(s) {unknown}; allowed: {', '.join(META_KEYS)}", source=str(path)
        )
    out_a, out_d = [], []
    for i, rec in enumerate(annotations):
        validate_record(dict(rec), f"annotations[{i}]", need_label=True, src=str(path))
        out_a.append(_ordered(rec, with_label=True))
    for i, rec in enumerate(disagreements):
        validate_record(dict(rec), f"disagreements[{i}]", need_label=False, src=str(path))
        if "label" in rec:
            raise InputError(f"disagreements[{i}]: a disagreement has no 'label'", source=str(path))
        out_d.append(_ordered(rec, with_label=False))
    doc: dict[str, Any] = {"annotations": out_a, "disagreements": out_d}
    for k in META_KEYS:
        doc[k] = meta.get(k)
    if doc["created_ds"] is None:
        doc["created_ds"] = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    if doc["datasets"] is None:
        doc["datasets"] = sorted({r["dataset"] for r in out_a + out_d if r.get("dataset")})
    if strict:
        problems = schema_problems(doc, extended=extended, limit=50)
        if problems:
            more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
            raise InputError(
                f"not written: {problems[0]}{more}; the file would not follow the FIRE data model",
                source=str(path),
            )
    text = json.dumps(doc, ensure_ascii=False)  # one-shot: uses the C encoder
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _ordered(rec: Mapping[str, Any], *, with_label: bool) -> dict[str, Any]:
    """Copy a record with the authors' key order and every list field present."""
    out: dict[str, Any] = {"annotator_ids": list(rec.get("annotator_ids", []))}
    if with_label:
        out["label"] = rec["label"]
    out["video_id"] = rec["video_id"]
    out["query"] = rec["query"]
    for k in ("annotator_labels", "response_ids", "queue_ids", "models"):
        out[k] = list(rec.get(k, []))
    if "dataset" in rec:
        out["dataset"] = rec["dataset"]
    for k, v in rec.items():  # keep extra fields verbatim
        out.setdefault(k, v)
    return out


def judgments_to_fire_records(
    judgments: Judgments, collection: Collection, dataset: str | None = None, *, only_human: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Human :class:`Judgments` as FIRE ``(annotations, disagreements)`` records.

    Records are keyed by (caption text, video) like the authors' file: captions with the same
    normalised text and video give one record (the first caption's verbatim text); if their
    labels differ, the pair is exported as a disagreement. Annotator ids, labels, response ids,
    queue ids and models come from ``judgments.details`` when present (else empty lists).
    ``judgments.unresolved`` pairs become disagreement records. With ``only_human`` only entries
    whose source kind is ``human`` are exported.
    """
    if judgments.shape != collection.shape:
        raise InputError(f"judgments cover {judgments.shape} but the collection is {collection.shape}")
    ds = _dataset_key(dataset) if dataset else infer_dataset(collection)
    sel = judgments.from_source("human") if only_human else judgments
    groups: dict[tuple[str, int], list[tuple[int, float]]] = {}
    norm = [normalise(t) for t in collection.captions]
    for r, c, g in zip(sel.rows.tolist(), sel.cols.tolist(), sel.grades.tolist(), strict=True):
        groups.setdefault((norm[r], c), []).append((r, g))

    def record(r: int, c: int, label: str | None, extra: Sequence[tuple[int, int]]) -> dict[str, Any]:
        rec: dict[str, Any] = {k: [] for k in LIST_FIELDS}
        for key in extra:
            for k in LIST_FIELDS:
                rec[k] = rec[k] + list(judgments.details.get(key, {}).get(k, []))
        if label is not None:
            rec["label"] = label
        rec["video_id"] = collection.video_ids[c]
        rec["query"] = collection.captions[r]
        if ds is not None:
            rec["dataset"] = ds
        return rec

    anns, dis = [], []
    done: set[tuple[str, int]] = set()
    for (text, c), items in groups.items():
        labels = {g > 0 for _, g in items}
        r0 = items[0][0]
        keys = [(r, c) for r, _ in items]
        if len(labels) == 1:
            anns.append(record(r0, c, "relevant" if labels.pop() else "irrelevant", keys[:1]))
        else:
            dis.append(record(r0, c, None, keys))
        done.add((text, c))
    for r, c in judgments.unresolved.tolist():
        if (norm[r], c) not in done:
            done.add((norm[r], c))
            dis.append(record(r, c, None, [(r, c)]))
    return anns, dis
