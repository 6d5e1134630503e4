"""Inter-annotator agreement of binary relevance votes (FIRE Table 2 and Fig. 7), from any source.

Input is per item (one (caption text, video) pair) the number of independent votes ``n`` and
how many say relevant ``r`` (``irrelevant`` = ``n - r``); skips and adjudications are not votes
(see :mod:`fireval.judging.aggregate`). Only items with ``n >= 2`` can show agreement.

- **Percent agreement**: the share of items whose votes are unanimous (``r == 0`` or ``r == n``),
  overall and by number of labels ``n`` (FIRE Fig. 7), and the pairwise observed agreement
  ``sum_i [r_i(r_i-1) + (n_i-r_i)(n_i-r_i-1)] / sum_i n_i(n_i-1)``.
- **Krippendorff's α**, nominal (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"):
  ``α = 1 - D_o / D_e``. With two categories the coincidence matrix has one off-diagonal
  cell ``o_01 = sum_i r_i (n_i - r_i) / (n_i - 1)``; with ``N = sum n_i`` pairable values and
  ``R = sum r_i`` of them relevant, ``D_o = 2 o_01 / N`` and ``D_e = 2 R (N - R) / (N (N - 1))``,
  so ``α = 1 - (N - 1) o_01 / (R (N - R))``. Undefined (``None``) when fewer than two items are
  pairable or only one category occurs.
- **Bootstrap CI of α** over items (percentile interval, seeded): resampling ``m`` items with
  replacement only changes how often each *type* ``(n_i, r_i)`` occurs, so a resample is one
  multinomial draw of ``m`` over the types' shares, and α follows from type-weighted sums.
  That is exact (the same distribution as drawing items) and costs O(resamples × types).
- **Small samples**: fewer than :data:`MIN_ITEMS` pairable items or a CI wider than
  :data:`MAX_CI_WIDTH` give a warning, and α is then printed with two decimals, always with
  its CI (:func:`format_alpha`).

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
import numpy.typing as npt

MIN_ITEMS = 30
"""Fewer pairable items than this: α is reported with a small-sample warning."""
MAX_CI_WIDTH = 0.2
"""A bootstrap CI of α wider than this also gives the warning."""
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0

I64 = npt.NDArray[np.int64]


def _arrays(n: npt.ArrayLike, r: npt.ArrayLike) -> tuple[I64, I64]:
    na, ra = np.asarray(n, np.int64).ravel(), np.asarray(r, np.int64).ravel()
    if na.shape != ra.shape or np.any(ra < 0) or np.any(ra > na):
        raise ValueError("n and r must have one entry per item with 0 <= r <= n")
    return na, ra


def percent_agreement(n: npt.ArrayLike, r: npt.ArrayLike) -> dict[str, Any]:
    """``{"items": m, "unanimous": share, "pairwise": share, "by_votes": {n: {"items", "unanimous"}}}``
    over the items with at least two votes (shares ``None`` when there is none)."""
    na, ra = _arrays(n, r)
    multi = na >= 2
    unanimous = (ra == na) | (ra == 0)
    pairs = na * (na - 1)
    agree_pairs = ra * (ra - 1) + (na - ra) * (na - ra - 1)
    by: dict[int, dict[str, Any]] = {}
    for k in np.unique(na[multi]):
        m = na == k
        by[int(k)] = {"items": int(m.sum()), "unanimous": float(unanimous[m].mean())}
    total = int(multi.sum())
    return {
        "items": total,
        "unanimous": float(unanimous[multi].mean()) if total else None,
        "pairwise": float(agree_pairs[multi].sum() / pairs[multi].sum()) if total else None,
        "by_votes": by,
    }


def by_labels(n: npt.ArrayLike, r: npt.ArrayLike) -> list[dict[str, Any]]:
    """Agreement by number of labels (FIRE Fig. 7): per ``n``, items, unanimous share, pairwise
    agreement and α of the items with exactly ``n`` labels (``n = 1``: items only)."""
    na, ra = _arrays(n, r)
    rows = []
    for k in np.unique(na[na >= 1]).tolist():
        m = na == k
        row: dict[str, Any] = {"labels": int(k), "items": int(m.sum())}
        if k >= 2:
            pa = percent_agreement(na[m], ra[m])
            row.update(unanimous=pa["unanimous"], pairwise=pa["pairwise"], alpha=alpha_nominal(na[m], ra[m]))
        else:
            row.update(unanimous=None, pairwise=None, alpha=None)
        rows.append(row)
    return rows


def _alpha_from_sums(
    big_n: npt.NDArray[np.float64], big_r: npt.NDArray[np.float64], o01: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    de = big_r * (big_n - big_r)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(de > 0, 1.0 - (big_n - 1.0) * o01 / np.where(de > 0, de, 1.0), np.nan)


def _item_terms(na: I64, ra: I64) -> tuple[I64, I64, npt.NDArray[np.float64]]:
    multi = na >= 2
    n2, r2 = na[multi], ra[multi]
    return n2, r2, r2 * (n2 - r2) / (n2 - 1.0)


def alpha_nominal(n: npt.ArrayLike, r: npt.ArrayLike) -> float | None:
    """Krippendorff's α (nominal, two categories) of the items with ``n >= 2`` (module docstring)."""
    na, ra = _arrays(n, r)
    n2, r2, o = _item_terms(na, ra)
    if n2.size < 1:
        return None
    a = _alpha_from_sums(np.array([n2.sum()], float), np.array([r2.sum()], float), np.array([o.sum()]))[0]
    return None if np.isnan(a) else float(a)


def alpha_interval(
    n: npt.ArrayLike,
    r: npt.ArrayLike,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of α over the items with ``n >= 2`` (resampled with replacement).

    Resamples where α is undefined (one category only) are left out; ``(None, None)`` when
    fewer than two items are pairable or α is undefined.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    na, ra = _arrays(n, r)
    n2, r2, o = _item_terms(na, ra)
    if n2.size < 2 or alpha_nominal(na, ra) is None:
        return None, None
    types, inverse, counts = np.unique(np.stack([n2, r2]), axis=1, return_inverse=True, return_counts=True)
    o_t = np.bincount(inverse.ravel(), weights=o, minlength=types.shape[1]) / counts
    rng = np.random.default_rng(seed)
    w = rng.multinomial(n2.size, counts / n2.size, size=int(n_resamples)).astype(np.float64)
    a = _alpha_from_sums(w @ types[0].astype(float), w @ types[1].astype(float), w @ o_t)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return None, None
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(a, [tail, 100 - tail])
    return float(lo), float(hi)


def sample_warnings(items: int, low: float | None, high: float | None) -> list[str]:
    """Warnings for an α that rests on few items or has a wide CI."""
    out = []
    if items < MIN_ITEMS:
        out.append(
            f"only {items} items have two or more labels (fewer than {MIN_ITEMS}): agreement and α "
            "are rough; read α with its CI"
        )
    if low is not None and high is not None and high - low > MAX_CI_WIDTH:
        out.append(f"the CI of α is wide ({low:.2f} to {high:.2f}): label more items twice to pin it down")
    return out


def format_alpha(stats: dict[str, Any]) -> str:
    """α with its CI, e.g. ``0.412 (95% CI 0.351 to 0.468)``; two decimals when the sample is small."""
    a, lo, hi = stats.get("alpha"), stats.get("alpha_low"), stats.get("alpha_high")
    if a is None:
        return "undefined (fewer than 2 items with 2+ labels, or one category only)"
    from fireval.core.units import fixed  # never "-0.00"

    if lo is None or hi is None:
        return f"{fixed(a, 2)} (no CI: too few items)"
    small = bool(stats.get("warnings"))
    d = 2 if small else 3
    pct = int(round(100 * stats.get("level", 0.95)))
    return f"{fixed(a, d)} ({pct}% CI {fixed(lo, d)} to {fixed(hi, d)})"


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
