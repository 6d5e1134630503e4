"""Readers and writers for external formats.

Collections of every standard TVR benchmark, detected by content
(:func:`.datasets.read_collection`: MSR-VTT, MSVD, DiDeMo, ActivityNet, VATEX, YouCook2,
EPIC-Kitchens-100, LSMDC, JSONL), score matrices (``.npy``/``.npz``, id files, 3-D MSVD layout),
run-file sniffing (:mod:`.runs`), grade ranges (:mod:`.grades`), TREC qrels and runs, FIRE
JSON, graded-label ``.npz``, and the bundled example (:mod:`.example`).
Every reader raises :class:`fireval.core.InputError` naming the file (and line or id) on bad
input; every writer is atomic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time each name loads its module on first use (CLI start-up, issue 14)
    from fireval.formats import example
    from fireval.formats.datasets import LAYOUTS, detect_layout, read_collection
    from fireval.formats.fire_json import (
        FireImport,
        Unmatched,
        judgments_to_fire_records,
        read_fire_json,
        write_fire_json,
    )
    from fireval.formats.labels import read_graded_labels, read_labels, write_graded_labels
    from fireval.formats.msrvtt import read_msrvtt_jsfusion, read_msrvtt_official
    from fireval.formats.msvd import read_msvd, read_msvd_raw_corpus
    from fireval.formats.scores import read_scores, write_scores
    from fireval.formats.textio import read_split_list
    from fireval.formats.trec import read_trec_qrels, read_trec_run, top_k, write_trec_qrels, write_trec_run

#: where each public name lives (a reader of one format need not import the others)
_LAZY = {
    "LAYOUTS": "datasets",
    "detect_layout": "datasets",
    "read_collection": "datasets",
    "FireImport": "fire_json",
    "Unmatched": "fire_json",
    "judgments_to_fire_records": "fire_json",
    "read_fire_json": "fire_json",
    "write_fire_json": "fire_json",
    "read_graded_labels": "labels",
    "read_labels": "labels",
    "write_graded_labels": "labels",
    "read_msrvtt_jsfusion": "msrvtt",
    "read_msrvtt_official": "msrvtt",
    "read_msvd": "msvd",
    "read_msvd_raw_corpus": "msvd",
    "read_scores": "scores",
    "write_scores": "scores",
    "read_split_list": "textio",
    "read_trec_qrels": "trec",
    "read_trec_run": "trec",
    "top_k": "trec",
    "write_trec_qrels": "trec",
    "write_trec_run": "trec",
}

#: the submodules, as attributes (``formats.example``) imported on first use
_MODULES = frozenset(
    [
        "datasets",
        "example",
        "fire_json",
        "grades",
        "labels",
        "msrvtt",
        "msvd",
        "registry",
        "runs",
        "scores",
        "textio",
        "trec",
    ]
)


def __getattr__(name: str) -> Any:
    """``formats.read_scores``, ``from fireval.formats import read_labels``, ``formats.example``:
    the module holding the name is imported on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"fireval.formats.{_LAZY[name]}"), name)
    if name in _MODULES:
        return importlib.import_module(f"fireval.formats.{name}")
    raise AttributeError(f"module 'fireval.formats' has no attribute {name!r}")


__all__ = [
    "LAYOUTS",
    "FireImport",
    "Unmatched",
    "example",
    "detect_layout",
    "judgments_to_fire_records",
    "read_fire_json",
    "read_graded_labels",
    "read_labels",
    "read_msrvtt_jsfusion",
    "read_msrvtt_official",
    "read_msvd",
    "read_collection",
    "read_msvd_raw_corpus",
    "read_scores",
    "read_split_list",
    "read_trec_qrels",
    "read_trec_run",
    "top_k",
    "write_fire_json",
    "write_graded_labels",
    "write_scores",
    "write_trec_qrels",
    "write_trec_run",
]
