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
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fireval.core.errors import InputError
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


def export_fire_json(
    store: Store | str,
    path: str | Path,
    dataset: str | None = None,
    *,
    model_names: Mapping[str, str] | None = None,
    extended: bool = False,
    pool_files: Sequence[str | Path] = (),
    meta: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """Write the store's aggregated labels to ``path`` (atomically); return the counts.

    Majority items go to ``annotations`` (with ``label``), ties to ``disagreements``. See the
    module docstring for ``model_names``, ``extended``, ``pool_files`` and ``meta`` (``creator``,
    ``email``, ``website``, ``license``). Raises :class:`InputError` (nothing written) when the
    file would not follow the authors' data model and ``extended`` is not set.
    """
    from fireval.formats import write_fire_json

    extra = sorted(set(meta or {}) - set(DEFAULT_META))
    if extra:
        raise InputError(f"unknown export meta field(s) {extra}; allowed: {', '.join(DEFAULT_META)}")
    own = isinstance(store, str)
    st = Store(store) if isinstance(store, str) else store
    try:
        ann, dis = st.fire_records(dataset)
        items = st.items_table()
        annotators = sorted((a.id, a.name) for a in st.annotators())
    finally:
        if own:
            st.close()
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
    write_fire_json(path, ann, dis, doc_meta, strict=True, extended=extended)
    return {"annotations": len(ann), "disagreements": len(dis)}
