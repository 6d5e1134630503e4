"""Export the annotation store as FIRE JSON that follows the authors' data model.

The records come from :meth:`fireval.judging.store.Store.fire_records` (majority items as
annotations, ties as disagreements, each with every annotator id, label, response id, queue id
and model; adjudications decide a tie but are not listed as votes). This module fills the rest
of the authors' data model and checks the whole file before writing it
(:func:`fireval.formats.fire_json.schema_problems`):

- ``models``: run names become the schema's model names (``CLIP4CLIP``, ``SSB``, ``CE``) through
  ``model_names`` (``--model-name clip4clip=CLIP4CLIP``); a run name equal to a model name up to
  case maps to it without an option.
- ``dataset``/``datasets``: ``MSRVTT`` or ``MSVD``, from ``dataset`` or the items' dataset
  (``msrvtt-1k-A`` → ``MSRVTT``).
- ``source_data_md5``: md5 of the pool file(s) the store was loaded from (``pool_files``, in the
  order given), else md5 of the store's items (dataset, caption, video per line, sorted).
- ``source_annotator_map_md5``: md5 of the store's annotator map (``id<TAB>name`` per line,
  sorted by id); the names themselves are not exported.
- ``source_ds``: the date the first item was loaded; ``created_ds``: today (UTC), both
  ``YYYY-MM-DD``; ``creator``, ``email``, ``website``, ``license``: given, else defaults
  (:data:`DEFAULT_META`).

Strict mode (the default) refuses to write a file that does not follow the data model and names
the first offending field and value. ``extended`` writes other run names and datasets as they
are: such a file is read by fireval but is *not* valid for the authors' tools.

Provenance (flags, skips with reasons, adjudications, gold items and answers, the audit trail of
label changes; :mod:`fireval.judging.provenance`): the data model has no field for it, so the
strict file never carries it. ``provenance=PATH`` writes it as a JSON sidecar that names the
FIRE file and its sha256; with ``extended`` each record also carries its item's part under the
extra key ``fireval`` (``record_provenance``). The two files are written together or not at
all: the FIRE file goes to a temporary sibling (validated, hashed), the sidecar is written
atomically, then the FIRE file is renamed into place; any failure before that leaves both
paths untouched. Both are read from one state of the store (the export retries when a label or
flag changed while it read, :data:`SNAPSHOT_ATTEMPTS` times at most).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fireval.core.errors import InputError
from fireval.judging.errors import StoreError
from fireval.judging.store import Store

DEFAULT_META: dict[str, str] = {
    "creator": "fireval",
    "email": "",
    "website": "",
    "license": "unspecified",
}
"""Defaults for the free-text meta fields (the data model requires strings, not null)."""


def parse_model_names(specs: Sequence[str]) -> dict[str, str]:
    """``["clip4clip=CLIP4CLIP", ...]`` → ``{"clip4clip": "CLIP4CLIP"}`` (one-line error on a bad spec)."""
    out: dict[str, str] = {}
    for spec in specs:
        run, sep, model = str(spec).partition("=")
        if not sep or not run.strip() or not model.strip():
            raise InputError(f"--model-name: expected RUN=MODEL (e.g. clip4clip=CLIP4CLIP), found {spec!r}")
        out[run.strip()] = model.strip()
    return out


def _model_map(runs: set[str], given: Mapping[str, str]) -> dict[str, str]:
    from fireval.formats.fire_json import MODELS

    upper = {m.upper(): m for m in MODELS}
    out = {r: upper[r.upper()] for r in runs if r.upper() in upper}
    out.update(given)
    return out


def _dataset_name(name: str | None) -> str | None:
    from fireval.formats.fire_json import DATASETS

    if name is None:
        return None
    key = "".join(ch for ch in name.upper() if ch.isalnum())
    return next((d for d in DATASETS if key.startswith(d)), name)


def md5_of_files(paths: Sequence[str | Path]) -> str:
    """md5 over the bytes of ``paths`` in order (one-line error naming a missing file)."""
    h = hashlib.md5(usedforsecurity=False)
    for p in paths:
        try:
            with open(p, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError as exc:
            raise InputError(f"cannot read the pool file: {exc.strerror}", source=str(p)) from None
    return h.hexdigest()


def _md5_lines(lines: Sequence[str]) -> str:
    return hashlib.md5("\n".join(lines).encode("utf-8"), usedforsecurity=False).hexdigest()


def export_meta(
    dataset: str | None,
    creator: str = "fireval",
    *,
    source_data_md5: str = "",
    source_annotator_map_md5: str = "",
    source_ds: str = "",
    email: str = "",
    website: str = "",
    license: str = "unspecified",
) -> dict[str, Any]:
    """Top-level FIRE JSON fields other than annotations/disagreements (all strings)."""
    return {
        "source_ds": source_ds,
        "source_data_md5": source_data_md5,
        "source_annotator_map_md5": source_annotator_map_md5,
        "created_ds": datetime.now(UTC).strftime("%Y-%m-%d"),
        "email": email,
        "creator": creator,
        "website": website,
        "license": license,
        "datasets": [dataset] if dataset else [],
    }


def default_provenance_path(output: str | Path) -> Path:
    """Where the CLI writes the provenance sidecar by default: ``labels.json`` → ``labels.provenance.json``."""
    out = Path(output)
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return out.with_name(f"{stem}.provenance.json")


def _outcome(st: Store) -> dict[int, dict[str, Any]]:
    """Item id → how the export decided it (see :func:`fireval.judging.provenance.collect`)."""
    from fireval.judging.aggregate import DISAGREEMENT, RELEVANT, UNLABELLED

    ids, counts = st.vote_counts()
    dec, adj = counts.decisions(), counts.adjudicated()
    out: dict[int, dict[str, Any]] = {}
    for iid, d, a in zip(ids.tolist(), dec.tolist(), adj.tolist(), strict=True):
        if d == UNLABELLED:
            out[iid] = {"decided_by": "none", "label": None, "section": None}
        elif d == DISAGREEMENT:
            out[iid] = {"decided_by": "tie", "label": None, "section": "disagreements"}
        else:
            out[iid] = {
                "decided_by": "adjudication" if a else "majority",
                "label": "relevant" if d == RELEVANT else "irrelevant",
                "section": "annotations",
            }
    return out


def _record_items(records: list[dict[str, Any]], doc: dict[str, Any]) -> list[int]:
    """The store item of each FIRE record: by its first response id, else (an item decided by an
    adjudication alone, no vote) by its query and video among such items."""
    item_of_label = {lab["label_id"]: lab["item_id"] for lab in doc["labels"]}
    lone: dict[tuple[str, str], list[int]] = {}
    for it in doc["items"]:
        if it["section"] == "annotations" and not it["response_ids"]:
            lone.setdefault((it["query"], it["video_id"]), []).append(it["item_id"])
    out = []
    for rec in records:
        if rec["response_ids"]:
            out.append(item_of_label[rec["response_ids"][0]])
        else:
            out.append(lone[(rec["query"], rec["video_id"])].pop(0))
    return out


def _sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: how often the export re-reads a store that changed while it was read
SNAPSHOT_ATTEMPTS = 5


def export_fire_json(
    store: Store | str,
    path: str | Path,
    dataset: str | None = None,
    *,
    model_names: Mapping[str, str] | None = None,
    extended: bool = False,
    pool_files: Sequence[str | Path] = (),
    meta: Mapping[str, str] | None = None,
    provenance: str | Path | None = None,
    record_provenance: bool | None = None,
) -> dict[str, int]:
    """Write the store's aggregated labels to ``path`` (atomically); return the counts.

    Majority items go to ``annotations`` (with ``label``), ties to ``disagreements``. See the
    module docstring for ``model_names``, ``extended``, ``pool_files`` and ``meta`` (``creator``,
    ``email``, ``website``, ``license``). ``provenance``: also write the provenance sidecar
    there (:mod:`fireval.judging.provenance`). ``record_provenance`` (default: ``extended``;
    needs ``extended``): each record carries its item's provenance under the extra key
    ``fireval``. Raises :class:`InputError` (nothing written) when the file would not follow
    the authors' data model and ``extended`` is not set.
    """
    from fireval.formats import write_fire_json
    from fireval.judging import provenance as P

    extra = sorted(set(meta or {}) - set(DEFAULT_META))
    if extra:
        raise InputError(f"unknown export meta field(s) {extra}; allowed: {', '.join(DEFAULT_META)}")
    in_records = extended if record_provenance is None else record_provenance
    if in_records and not extended:
        raise InputError(
            "provenance inside the records needs --extended (the FIRE data model has no field for it)"
        )
    need = in_records or provenance is not None
    own = isinstance(store, str)
    st = Store(store) if isinstance(store, str) else store
    doc: dict[str, Any] | None = None
    try:
        for _ in range(SNAPSHOT_ATTEMPTS):
            with st.db.reading() as conn:
                before = P.fingerprint(conn) if need else None
            ann, dis = st.fire_records(dataset)
            items = st.items_table()
            annotators = sorted((a.id, a.name) for a in st.annotators())
            if not need:
                break
            doc = P.collect(st.db, _outcome(st))
            if tuple(doc["snapshot"].values()) == before:
                break
        else:
            raise StoreError(
                f"the store changed during each of {SNAPSHOT_ATTEMPTS} attempts to read it; "
                "export again when fewer annotators are answering"
            )
        backend, revision = ("postgresql" if st.is_postgres else "sqlite"), st.revision
    finally:
        if own:
            st.close()
    ann_items = _record_items(ann, doc) if doc is not None and in_records else []
    dis_items = _record_items(dis, doc) if doc is not None and in_records else []
    mapping = _model_map({m for rec in ann + dis for m in rec["models"]}, model_names or {})
    for rec in ann + dis:
        rec["models"] = list(dict.fromkeys(mapping.get(m, m) for m in rec["models"]))
        rec["dataset"] = _dataset_name(rec["dataset"])
    ds = _dataset_name(dataset) or (ann[0]["dataset"] if ann else dis[0]["dataset"] if dis else None)
    data_md5 = (
        md5_of_files(pool_files)
        if pool_files
        else _md5_lines(sorted(f"{it['dataset']}\t{it['caption']}\t{it['video_id']}" for it in items))
    )
    first = min((it["created_at"] for it in items if it.get("created_at") is not None), default=None)
    fields = {**DEFAULT_META, **(meta or {})}
    doc_meta = export_meta(
        ds,
        fields["creator"],
        source_data_md5=data_md5,
        source_annotator_map_md5=_md5_lines([f"{i}\t{n}" for i, n in annotators]),
        source_ds=first.strftime("%Y-%m-%d") if first is not None else "",
        email=fields["email"],
        website=fields["website"],
        license=fields["license"],
    )
    doc_meta["datasets"] = (
        sorted({r["dataset"] for r in ann + dis if r.get("dataset")}) or doc_meta["datasets"]
    )
    if doc is not None and in_records:
        per_item = P.by_item(doc)
        for rec, iid in zip(ann + dis, ann_items + dis_items, strict=True):
            rec[P.RECORD_KEY] = per_item[iid]
    counts = {"annotations": len(ann), "disagreements": len(dis)}
    if provenance is None or doc is None:
        write_fire_json(path, ann, dis, doc_meta, strict=True, extended=extended)
        return counts
    _write_pair(path, Path(provenance), ann, dis, doc_meta, extended, doc, backend, revision, counts)
    return counts


def _write_pair(
    path: str | Path,
    sidecar: Path,
    ann: list[dict[str, Any]],
    dis: list[dict[str, Any]],
    doc_meta: dict[str, Any],
    extended: bool,
    doc: dict[str, Any],
    backend: str,
    revision: str | None,
    counts: dict[str, int],
) -> None:
    """The FIRE file and its sidecar, or neither: the FIRE file is written (and validated) to a
    temporary sibling, hashed, the sidecar written atomically, then the FIRE file renamed into place."""
    import json
    import os
    import tempfile

    from fireval.atomic import atomic_write
    from fireval.formats import write_fire_json
    from fireval.judging import provenance as P

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".export.tmp", dir=target.parent)
    os.close(fd)
    try:
        write_fire_json(tmp, ann, dis, doc_meta, strict=True, extended=extended)
        head = {
            "format": P.FORMAT,
            "version": P.VERSION,
            "created_at": datetime.now(UTC).isoformat(),
            "fire_json": {"file": target.name, "sha256": _sha256(tmp), "extended": extended, **counts},
            "source_data_md5": doc_meta["source_data_md5"],
            "source_annotator_map_md5": doc_meta["source_annotator_map_md5"],
            "store": {"backend": backend, "schema_revision": revision},
        }
        text = json.dumps({**head, **doc}, ensure_ascii=False)  # one line: the C encoder (jq pretty-prints)
        with atomic_write(sidecar, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
