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
