"""The bundled example: MSR-VTT 1k-A with all 20 official captions of each of its videos.

Shipped in ``fireval/data/`` (built by ``scripts/make_example_data.py``; sources and licenses
in ``fireval/data/ATTRIBUTION.md``), so it works offline and without ``../shared``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from fireval.core import Collection
from fireval.formats.msrvtt import read_msrvtt_jsfusion, read_msrvtt_official

DATASET = "MSRVTT"


def data_dir() -> Path:
    """Directory of the bundled files (``fireval/data``, next to the package's modules; not via
    importlib.resources, which imports tempfile and zipfile on every `fireval evaluate`)."""
    return Path(__file__).resolve().parent.parent / "data"


@dataclass(frozen=True)
class Example:
    """``collection``: 1000 JSFusion sentences (queries, ids ``ret0``...) × 1000 videos, ground
    truth on the diagonal. ``video_captions``: a Collection over the same videos, in the same
    order, holding their 20 official captions each (20,000; ids = sen_id) — the "description"
    side used by proxies and the caption-oracle baseline."""

    collection: Collection
    video_captions: Collection
    dataset: str = DATASET

    @property
    def attribution(self) -> str:
        return (data_dir() / "ATTRIBUTION.md").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def load_example() -> Example:
    """Load (once per process) the bundled MSR-VTT 1k-A example."""
    d = data_dir()
    coll = read_msrvtt_jsfusion(d / "msrvtt_1ka.csv.gz", name="msrvtt-1ka")
    caps = read_msrvtt_official(d / "msrvtt_1ka_captions.json.gz", coll.video_ids, name="msrvtt-1ka-captions")
    return Example(collection=coll, video_captions=caps)
