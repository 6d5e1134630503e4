"""Alignment with the collection: does the run rank documents the way the collection's text does?

A run whose rows or columns are in another order than the collection (GRAM and VAST against the
JSFusion CSV; see ``shared/data/SOURCES.md``) can still have a perfect diagonal, so the instance
labels cannot catch it. Its ranking beyond the instance positive, though, no longer follows the
text: for a caption about a cooking show, an aligned run puts other cooking videos in its top 10;
a misaligned one puts the neighbours of some other caption there.

Statistic (one value per query, no per-query loop):

* ``s_i``: mean TF-IDF cosine (:mod:`fireval.checks.text`) between query ``i`` and the ``K``
  documents the run ranks highest for it, its instance positives left out;
* ``b_i``: the same mean for the documents the run ranks in the top ``K`` *of all queries*
  (each document weighted by how often it appears in the top-``K`` lists; ``i``'s own positives
  left out; ``i``'s own list weighs only ``1/Q``). This null is what a misaligned run gives: it keeps the run's "hub" documents
  (ranked high for every query), so hubness alone cannot pass or fail a run;
* ``d_i = s_i - b_i``; a one-sided test over queries of ``mean(d) > 0`` (normal approximation of
  the paired t statistic; Q >= 30), and the effect in units of what the text itself attains:
  ``ratio = mean(d) / mean(o_i - u_i)`` where ``o_i`` is the mean cosine of the text's own top
  ``K`` (the best any ranking can reach by this yardstick) and ``u_i`` that of a uniformly random
  document, estimated on up to 1,000 sampled queries.

Decision (``alpha = 0.001``, one-sided bounds at ``1 - alpha``):

* ``pass``: ``mean(d) > 0`` at level ``alpha`` and ``ratio >= MIN_RATIO / 2``;
* ``fail``: the upper bound of ``ratio`` is below ``MIN_RATIO`` = 0.05: the run is, with
  confidence, at most 5% as text-consistent as the text's own ranking, i.e. at chance;
* ``inconclusive``: otherwise, and when there are fewer than 30 queries or the text carries no
  signal (the text's own top ``K`` is no better than random documents).

Both directions use the same statistic: in ``t2v`` a query is a caption and a document a video
(its captions pooled); in ``v2t`` the transpose. One-caption-per-video collections work as is: the
query's own video is left out, and its neighbours are other videos' captions.

Inverted scores (distances, lower = more similar, read by fireval as higher = better): the run's
top ``K`` is then its *least* similar documents, below chance by this statistic (``-scores`` of
CLIP4Clip on MSR-VTT 1k-A: -2.4% of the text's own gain, at most -2.0%), which a misaligned run
cannot be (it sits at chance). A failed run that holds scores (a matrix or a block source, not
ranked lists: their tail is not in the file) is therefore tested again, negated
(:func:`inverted`): when the negated scores *pass* (the same statistic, the same thresholds),
the ranking is upside down, not out of order, and the message says so (``inverted`` in the
figures, with the negated run's ``ratio_negated``). A misaligned run stays misaligned when
negated (its bottom ``K`` follows the text no better than its top), and so keeps its message.

Limit: a run that gets the instance positive right but ranks every other document at random
(no real model does this) fails, since beyond the positive it carries no information about
alignment. Idea: a text-only check of score matrices as in the alignment audit of
``shared/data/SOURCES.md``; the null over other queries' lists is a permutation test
(Fisher 1935) restricted to the run's own output.
"""

from __future__ import annotations

import math

import numpy as np

from fireval.checks.base import CheckResult, Status
from fireval.checks.definitions import ALIGNMENT
from fireval.checks.scan import Scan, scan
from fireval.checks.text import TextModel, pair_similarity, positives
from fireval.core import Collection, Direction, Run
from fireval.core.units import percent  # never "-0.0%" (a ratio below chance is negative)

CHECK = ALIGNMENT

ALPHA = 1e-3
#: the one-sided critical value, ``statistics.NormalDist().inv_cdf(1 - ALPHA)`` (a test checks it;
#: a constant, since importing statistics or scipy costs every `fireval evaluate` its start-up)
Z_ALPHA = 3.090232306167813
#: a run whose text-consistency is confidently below this share of the text's own is at chance
MIN_RATIO = 0.05
MIN_QUERIES = 30
_ORACLE_SAMPLE = 1000


def alignment(
    scan: Scan, collection: Collection, model: TextModel, *, k: int = 10, seed: int = 0
) -> CheckResult:
    """The alignment check of one run in one direction, from the first ``k`` of its :class:`Scan`."""
    qv, dv = model.sides(scan.direction)
    pos = positives(collection, scan.direction)
    top, valid = scan.top[:, :k], scan.valid[:, :k] & scan.ranks_any()[:, None]
    n_q, k = top.shape
    figures: dict[str, float | int | str] = {"direction": scan.direction.value, "k": k, "queries": n_q}
    q_idx = np.repeat(np.arange(n_q), k)
    sims = pair_similarity(qv, dv, q_idx, top.ravel()).reshape(n_q, k)
    w = valid.astype(np.float64)
    n_valid = w.sum(axis=1)
    has = n_valid > 0
    s = np.where(has, (sims * w).sum(axis=1) / np.maximum(n_valid, 1), 0.0)
    # the null: documents drawn from the run's own top-K lists of all queries
    freq = np.bincount(top[valid], minlength=scan.n_docs).astype(np.float64)
    b = _baseline(qv, dv, pos, freq)
    u = _baseline(qv, dv, pos, np.ones(scan.n_docs))
    d = (s - b)[has]
    key = (_oracle_side(collection, scan.direction), k, seed)
    if key not in model.cache:  # the text's own top-K does not depend on the run
        model.cache[key] = _oracle_gain(qv, dv, pos, k, u, seed)
    oracle = model.cache[key]
    n = int(d.size)
    figures.update(
        top_k_similarity=float(s[has].mean()) if n else float("nan"),
        null_similarity=float(b[has].mean()) if n else float("nan"),
        random_similarity=float(u[has].mean()) if n else float("nan"),
        text_top_k_gain=oracle,
    )
    if n < MIN_QUERIES or not oracle > 0:
        why = (
            f"only {n} queries rank a document beyond their instance positives (a row that is one tie "
            "over every document ranks none)"
            if n < MIN_QUERIES
            else "the text carries no signal"
        )
        return CheckResult(CHECK.name, Status.INCONCLUSIVE, f"cannot be told: {why}", figures)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / np.sqrt(n) if sd > 0 else 1e-12
    z = mean / se
    p = upper_tail(z)
    zc = Z_ALPHA
    ratio, upper, lower = mean / oracle, (mean + zc * se) / oracle, (mean - zc * se) / oracle
    figures.update(
        effect=mean,
        z=float(z),
        p_value=p,
        ratio=float(ratio),
        ratio_lower=float(lower),
        ratio_upper=float(upper),
        share_queries_above_null=float((d > 0).mean()),
    )
    if p < ALPHA and ratio >= MIN_RATIO / 2:
        status = Status.PASS
        msg = (
            f"{scan.direction.value}: the top-{k} follows the text ({100 * ratio:.0f}% of the text's own "
            f"gain over random documents, {_p(p)})"
        )
    elif upper < MIN_RATIO:
        status = Status.FAIL
        msg = (
            f"{scan.direction.value}: the top-{k} beyond the instance positives is unrelated to the "
            f"collection's text ({percent(ratio)}% of the text's own gain, at most {percent(upper)}%): "
            "rows or columns are probably in another order than the collection"
        )
    else:
        status = Status.INCONCLUSIVE
        msg = (
            f"{scan.direction.value}: weak evidence of alignment ({percent(ratio)}% of the text's own "
            f"gain, {_p(p)})"
        )
    return CheckResult(CHECK.name, status, msg, figures)


class _Negated:
    """A :class:`fireval.core.BlockSource` of ``-scores`` (``-inf``, "not retrieved", stays ``-inf``)."""

    def __init__(self, run: Run) -> None:
        self._run = run

    @property
    def shape(self) -> tuple[int, int]:
        return self._run.shape

    def block(self, direction: Direction, start: int, stop: int) -> np.ndarray:
        out = np.negative(self._run.block(direction, start, stop))
        out[out == np.inf] = -np.inf
        return out


def inverted(
    result: CheckResult, run: Run, collection: Collection, model: TextModel, *, k: int = 10, seed: int = 0
) -> CheckResult:
    """``result`` (one direction's alignment of ``run``), or, when it failed and the negated scores
    pass the same check, a ``fail`` that says the scores look inverted (see the module docstring)."""
    if result.status is not Status.FAIL or run.lists is not None:
        return result
    direction = Direction.parse(str(result.figures["direction"]))
    neg = Run(run.name, blocks=_Negated(run))
    flipped = alignment(scan(neg, collection, direction, k=k, seed=seed), collection, model, k=k, seed=seed)
    figures = {**result.figures, "ratio_negated": flipped.figures.get("ratio"), "inverted": False}
    if flipped.status is not Status.PASS:
        return CheckResult(CHECK.name, result.status, result.message, figures)
    figures["inverted"] = True
    ratio, neg_ratio = float(result.figures["ratio"]), float(flipped.figures["ratio"])
    msg = (
        f"{direction.value}: scores look inverted: the top-{k} is below chance ({percent(ratio)}% of the "
        f"text's own gain) while the negated scores follow the text ({percent(neg_ratio, 0)}%); distances? "
        "fireval reads higher = more similar: negate the matrix"
    )
    return CheckResult(CHECK.name, Status.FAIL, msg, figures)


def upper_tail(z: float) -> float:
    """``P(Z > z)`` for a standard normal ``Z``: ``1 - statistics.NormalDist().cdf(z)``, the same
    formula without importing :mod:`statistics`."""
    return float(1.0 - 0.5 * (1.0 + math.erf(z / math.sqrt(2.0))))


def _p(p: float) -> str:
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.2g}"


def _baseline(qv, dv, pos, weight: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Weighted mean cosine of each query with all documents, its positives left out."""
    total = weight.sum()
    raw = qv.matvec(dv.rmatvec(weight))
    rows = np.repeat(np.arange(pos.shape[0]), np.diff(pos.indptr))
    ps = pair_similarity(qv, dv, rows, pos.indices.astype(np.int64)) * weight[pos.indices]
    pw = np.bincount(rows, weights=weight[pos.indices], minlength=pos.shape[0])
    corr = np.bincount(rows, weights=ps, minlength=pos.shape[0])
    denom = total - pw
    return np.where(denom > 0, (raw - corr) / np.where(denom > 0, denom, 1.0), 0.0)


def _oracle_side(collection: Collection, direction: object) -> object:
    """The key of the text's own top-K gain: its direction, or ``"both"`` when the two directions
    give the same value. They do when every video has exactly one caption and every query is
    sampled (at most :data:`_ORACLE_SAMPLE`): a video's TF-IDF vector is then its caption's, so
    the v2t block is the t2v block with rows and columns renamed, positives included, and the
    per-query gains are the same numbers (their mean is summed in another order)."""
    n_c, n_v = collection.shape
    if n_c == n_v <= _ORACLE_SAMPLE and np.bincount(collection.caption_video, minlength=n_v).max() == 1:
        return "both"
    return direction


def _oracle_gain(qv, dv, pos, k: int, u: np.ndarray, seed: int) -> float:  # type: ignore[no-untyped-def]
    """Mean over sampled queries of (mean cosine of the text's own top-K) - (random document's).

    Only the top-K *values* are needed (not which documents hold them), so ties need no
    random draw: :func:`_top_values` is exact and deterministic.
    """
    n_q = qv.shape[0]
    rng = np.random.default_rng(seed + 1)
    sample = np.sort(rng.choice(n_q, size=min(n_q, _ORACLE_SAMPLE), replace=False))
    docs_t = dv.transpose()
    gains = []
    step = max(1, (1 << 22) // max(dv.shape[0], 1))
    for lo in range(0, sample.size, step):
        rows = sample[lo : lo + step]
        block = qv[rows].dot_transposed(docs_t)
        vals = _top_values(block, pos[rows], k)
        ok = vals > -np.inf
        gains.append(np.where(ok, vals, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1) - u[rows])
    return float(np.concatenate(gains).mean()) if gains else 0.0


def _top_values(block: np.ndarray, pos, k: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The ``k`` highest values of each row of ``block``, positives left out (``-inf`` where fewer
    are left), best first. ``block`` is overwritten (positives set to ``-inf``).

    Exact for any ties, without a random draw: a threshold per row, the ``k``-th largest of the
    maxima of ``G > k`` groups of columns (every ``G``-th column; at least ``k`` values are at or
    above it, one per group); the values strictly above it (about ``k + k^2/G`` on average, a tie at the
    threshold adds none) are sorted, and the ranks they do not fill hold the threshold itself.
    """
    n, d = block.shape
    block[pos.row_ids(), pos.indices] = -np.inf
    g = min(d, max(4 * k, 64))  # groups: columns j, j + g, j + 2g, ... (a contiguous reduction)
    if g <= k:  # short rows: sort them whole
        out = np.full((n, k), -np.inf)
        top = -np.sort(-block, axis=1)[:, :k]
        out[:, : top.shape[1]] = top
        return out
    size = d // g
    gmax = block[:, : g * size].reshape(n, size, g).max(axis=1)
    r = d - g * size
    np.maximum(gmax[:, :r], block[:, g * size :], out=gmax[:, :r])
    thr = np.partition(gmax, g - k, axis=1)[:, g - k]
    flat = np.flatnonzero(block > thr[:, None])
    rows, vals = flat // d, block.ravel()[flat]
    order = np.lexsort((-vals, rows))
    rows, vals = rows[order], vals[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, np.arange(n))[rows]
    out = np.repeat(thr[:, None].astype(np.float64), k, axis=1)
    sel = rank < k
    out[rows[sel], rank[sel]] = vals[sel]
    return out
