"""Export the annotation store as FIRE JSON in the authors' schema (via :mod:`fireval.formats`)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fireval.judging.store import Store


def export_meta(dataset: str | None, creator: str = "fireval") -> dict[str, Any]:
    """Top-level FIRE JSON fields other than annotations/disagreements."""
    return {
        "source_ds": dataset,
        "source_data_md5": None,
        "source_annotator_map_md5": None,
        "created_ds": datetime.now(UTC).strftime("%Y-%m-%d"),
        "email": None,
        "creator": creator,
        "website": None,
        "license": None,
        "datasets": [dataset] if dataset else [],
    }


def export_fire_json(store: Store | str, path: str | Path, dataset: str | None = None) -> dict[str, int]:
    """Write the store's aggregated labels to ``path`` (atomically); return the counts.

    Majority items go to ``annotations`` (with ``label``), ties to ``disagreements``. The
    ``dataset`` field is each item's dataset unless ``dataset`` overrides it (FIRE uses
    ``"MSRVTT"`` / ``"MSVD"``).
    """
    from fireval.formats import write_fire_json

    own = isinstance(store, str)
    st = Store(store) if isinstance(store, str) else store
    try:
        ann, dis = st.fire_records(dataset)
    finally:
        if own:
            st.close()
    ds = dataset or (ann[0]["dataset"] if ann else dis[0]["dataset"] if dis else None)
    write_fire_json(path, ann, dis, export_meta(ds))
    return {"annotations": len(ann), "disagreements": len(dis)}
