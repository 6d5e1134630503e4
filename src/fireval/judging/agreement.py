"""Inter-annotator agreement of binary relevance votes (FIRE Table 2 and Fig. 7), from any source.

Input is per item (one (caption text, video) pair) the number of independent votes ``n`` and
how many say relevant ``r`` (``irrelevant`` = ``n - r``); skips and adjudications are not votes
(see :mod:`fireval.judging.aggregate`). Only items with ``n >= 2`` can show agreement.

The statistics themselves (percent agreement, Krippendorff's α, its bootstrap CI, the
small-sample warnings, :func:`format_alpha`) live in :mod:`fireval.judging.alpha` and are
re-exported here; this module adds the sources of votes and :func:`agreement_stats`.

Sources: a FIRE JSON file (:func:`items_from_fire_json`: each annotation or disagreement record
is an item, its ``annotator_labels`` are the votes; an annotation whose votes tie or are absent
but that carries a ``label`` was resolved outside the votes and counts as adjudicated) or an
annotation store (:func:`items_from_store`: labels stored with ``kind = 'adjudication'`` are
adjudications, see :mod:`fireval.judging.aggregate`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fireval.judging.alpha import DEFAULT_RESAMPLES as DEFAULT_RESAMPLES
from fireval.judging.alpha import DEFAULT_SEED as DEFAULT_SEED
from fireval.judging.alpha import I64 as I64
from fireval.judging.alpha import MAX_CI_WIDTH as MAX_CI_WIDTH
from fireval.judging.alpha import MIN_ITEMS as MIN_ITEMS
from fireval.judging.alpha import alpha_interval as alpha_interval
from fireval.judging.alpha import alpha_nominal as alpha_nominal
from fireval.judging.alpha import by_labels as by_labels
from fireval.judging.alpha import format_alpha as format_alpha
from fireval.judging.alpha import percent_agreement as percent_agreement
from fireval.judging.alpha import sample_warnings as sample_warnings


@dataclass
class VoteItems:
    """Items with their independent votes and (optional) adjudicated label, from any source."""

    query: list[str]
    video_id: list[str]
    n: I64
    r: I64
    adjudication: list[str | None]
    """Per item: the label an adjudication gave (``None``: no adjudication)."""
    annotator_labels: list[list[str]]
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    """Problems of the source the statistics should be read with (e.g. records listed twice)."""


def agreement_stats(
    items: VoteItems,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> dict[str, Any]:
    """Everything ``fireval judgments stats`` prints, as plain data (JSON-ready).

    Keys: ``source``, ``items``, ``votes``, ``pairable_items`` (n >= 2), ``unanimous``,
    ``pairwise``, ``alpha``, ``alpha_low``, ``alpha_high``, ``level``, ``n_resamples``, ``seed``,
    ``by_labels`` (rows), ``decided``, ``adjudicated``, ``disagreements`` (rows: query, video_id,
    annotator_labels, adjudication) and ``warnings``.
    """
    na, ra = items.n, items.r
    pa = percent_agreement(na, ra)
    lo, hi = alpha_interval(na, ra, n_resamples=n_resamples, seed=seed, level=level)
    tie = (na >= 1) & (2 * ra == na)
    adj = np.array([a is not None for a in items.adjudication], bool)
    dis = [
        {
            "query": items.query[i],
            "video_id": items.video_id[i],
            "annotator_labels": items.annotator_labels[i],
            "adjudication": items.adjudication[i],
        }
        for i in np.flatnonzero(tie).tolist()
    ]
    return {
        "source": items.source,
        "items": int(na.size),
        "votes": int(na.sum()),
        "pairable_items": pa["items"],
        "unanimous": pa["unanimous"],
        "pairwise": pa["pairwise"],
        "alpha": alpha_nominal(na, ra),
        "alpha_low": lo,
        "alpha_high": hi,
        "level": level,
        "n_resamples": int(n_resamples),
        "seed": int(seed),
        "by_labels": by_labels(na, ra),
        "decided": int((~tie & (na >= 1)).sum()),
        "adjudicated": int((tie & adj).sum()),
        "unresolved": int((tie & ~adj).sum()),
        "disagreements": dis,
        "warnings": [*items.warnings, *sample_warnings(pa["items"], lo, hi)],
    }


def items_from_fire_json(path: str | Path) -> VoteItems:
    """The items of a FIRE JSON file (annotations and disagreements), votes from ``annotator_labels``.

    Records are validated like :func:`fireval.formats.read_fire_json` (an
    :class:`~fireval.core.errors.InputError` names the file and record); no collection is needed.
    """
    from fireval.formats.fire_json import _no_gc

    with _no_gc():  # millions of small acyclic objects: the cyclic GC only slows parsing down
        return _items_from_fire_json(path)


def _items_from_fire_json(path: str | Path) -> VoteItems:
    from fireval.core.errors import InputError
    from fireval.core.text import normalise
    from fireval.formats.fire_json import repeat_key, validate_record
    from fireval.formats.textio import loads_bounded, read_text

    src = str(path)
    try:
        data = loads_bounded(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON: {exc.msg} (column {exc.colno})", source=src, line=exc.lineno
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list):
        raise InputError("expected a FIRE JSON object with an 'annotations' list", source=src)
    dis = data.get("disagreements", [])
    if not isinstance(dis, list):
        raise InputError("'disagreements' must be a list", source=src)
    query, video, labels, adjud = [], [], [], []
    # a record repeating an earlier one of its pair (e.g. in a merged file) is one item, not two:
    # the rule of fireval.formats.read_fire_json, so that agreement and labels count the same records
    seen: set[tuple[Any, ...]] = set()
    repeated: list[str] = []
    for section, records, need_label in (
        ("annotations", data["annotations"], True),
        ("disagreements", dis, False),
    ):
        for i, rec in enumerate(records):
            validate_record(rec, f"{section}[{i}]", need_label=need_label, src=src)
            same = repeat_key(rec, rec["label"] if need_label else None)
            if same is not None:
                key = (normalise(rec["query"]), rec["video_id"], *same)  # as read_fire_json
                if key in seen:
                    repeated.append(f"{section}[{i}]")
                    continue
                seen.add(key)
            votes = list(rec.get("annotator_labels") or [])
            n_rel = sum(v == "relevant" for v in votes)
            decided = 2 * n_rel != len(votes)
            query.append(rec["query"])
            video.append(rec["video_id"])
            labels.append(votes)
            adjud.append(rec["label"] if need_label and not decided else None)
    n = np.array([len(v) for v in labels], np.int64)
    r = np.array([sum(x == "relevant" for x in v) for v in labels], np.int64)
    warnings = []
    if repeated:
        warnings.append(
            f"{src}: {len(repeated)} FIRE record(s) repeat an earlier record of the same pair, "
            f"label or section, annotator ids and response ids (first: {repeated[0]}); each is "
            "counted once"
        )
    return VoteItems(query, video, n, r, adjud, labels, source=src, warnings=warnings)


def items_from_store(url: str) -> VoteItems:
    """The items of an annotation store; adjudications (stored ``kind``) are not votes."""
    from fireval.judging.store import Store

    st = Store(url, upgrade=False, create=False)
    try:
        v = st.votes()  # its "adjudication" marks labels stored with kind "adjudication"
        items = st.items_table()
    finally:
        st.close()
    ids = np.array([it["id"] for it in items], np.int64)
    pos = np.searchsorted(ids, v["item_id"])
    is_adj = v["adjudication"]
    lab = v["label"]
    is_vote = ((lab == "relevant") | (lab == "irrelevant")) & ~is_adj
    n = np.bincount(pos[is_vote], minlength=ids.size).astype(np.int64)
    r = np.bincount(pos[is_vote & (lab == "relevant")], minlength=ids.size).astype(np.int64)
    adjud: list[str | None] = [None] * ids.size
    votes: list[list[str]] = [[] for _ in range(ids.size)]
    for k in np.flatnonzero(is_vote).tolist():  # display lists only (the counts are vectorised)
        votes[int(pos[k])].append(str(lab[k]))
    for k in np.flatnonzero(is_adj & (lab != "skip")).tolist():
        adjud[int(pos[k])] = str(lab[k])
    return VoteItems(
        [it["caption"] for it in items],
        [it["video_id"] for it in items],
        n,
        r,
        adjud,
        votes,
        source=url,
    )
