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

Limit: a run that gets the instance positive right but ranks every other document at random
(no real model does this) fails, since beyond the positive it carries no information about
alignment. Idea: a text-only check of score matrices as in the alignment audit of
``shared/data/SOURCES.md``; the null over other queries' lists is a permutation test
(Fisher 1935) restricted to the run's own output.
"""

from __future__ import annotations

import numpy as np

from fireval.checks.base import Check, CheckResult, Status
from fireval.checks.scan import _SAMPLE_MIN_DOCS, Scan, top_k
from fireval.checks.text import TextModel, pair_similarity, positives
from fireval.core import Collection

CHECK = Check(
    name="alignment",
    description="the run's top-K (instance positives left out) follows the collection's text better "
    "than the run's own top-K of other queries",
    rationale="A run whose rows/columns are in another order than the collection keeps a correct "
    "diagonal but pairs every query with the wrong neighbours; per-query comparisons, pooling and "
    "overlap with it are meaningless. TF-IDF cosine (Sparck Jones 1972), paired one-sided test over "
    "queries against a permutation null (Fisher 1935).",
)

ALPHA = 1e-3
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
    top, valid = scan.top[:, :k], scan.valid[:, :k]
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
    key = (scan.direction, k, seed)
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
            f"only {n} queries with retrieved documents" if n < MIN_QUERIES else "the text carries no signal"
        )
        return CheckResult(CHECK.name, Status.INCONCLUSIVE, f"cannot be told: {why}", figures)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / np.sqrt(n) if sd > 0 else 1e-12
    z = mean / se
    from statistics import NormalDist  # the standard normal without scipy.special (slow to import)

    p = float(1.0 - NormalDist().cdf(z))
    zc = float(NormalDist().inv_cdf(1.0 - ALPHA))
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
            f"collection's text ({100 * ratio:.1f}% of the text's own gain, at most {100 * upper:.1f}%): "
            "rows or columns are probably in another order than the collection"
        )
    else:
        status = Status.INCONCLUSIVE
        msg = (
            f"{scan.direction.value}: weak evidence of alignment ({100 * ratio:.1f}% of the text's own "
            f"gain, {_p(p)})"
        )
    return CheckResult(CHECK.name, status, msg, figures)


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


def _oracle_gain(qv, dv, pos, k: int, u: np.ndarray, seed: int) -> float:  # type: ignore[no-untyped-def]
    """Mean over sampled queries of (mean cosine of the text's own top-K) - (random document's)."""
    n_q = qv.shape[0]
    rng = np.random.default_rng(seed + 1)
    sample = np.sort(rng.choice(n_q, size=min(n_q, _ORACLE_SAMPLE), replace=False))
    docs_t = dv.transpose()
    gains = []
    step = max(1, (1 << 22) // max(dv.shape[0], 1))
    for lo in range(0, sample.size, step):
        rows = sample[lo : lo + step]
        block = qv[rows].dot_transposed(docs_t)
        # a jitter far below any cosine step breaks the many exact ties (zeros) that slow down
        # argpartition; it cannot change the mean of the top-K values beyond 1e-9
        noise = rng.random(block.shape)
        noise *= 1e-9
        block += noise
        del noise
        vals = _top_values(block, pos[rows], k, rng)
        ok = vals > -np.inf
        gains.append(np.where(ok, vals, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1) - u[rows])
    return float(np.concatenate(gains).mean()) if gains else 0.0


def _top_values(block: np.ndarray, pos, k: int, rng: np.random.Generator) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The ``k`` highest values of each row of a tie-free ``block``, positives left out (``-inf``
    where fewer are left), best first: what ``top_k`` picks, and the same draws from ``rng``.

    Below :data:`~fireval.checks.scan._SAMPLE_MIN_DOCS` documents ``top_k`` ranks by shuffled
    columns (one permutation per call, and no tie to draw again); the values need no shuffle:
    a threshold per row (the ``k``-th largest of the maxima of groups of columns, so that at
    least ``k`` values are at or above it) and a sort of the few candidates. ``block`` is
    overwritten (positives set to ``-inf``). Longer rows: ``top_k`` itself.
    """
    n, d = block.shape
    if d >= _SAMPLE_MIN_DOCS or max(k, d // 4) <= 1:  # (top_k's tie path: its own draws)
        idx, ok = top_k(block, pos, k, rng)
        return np.where(ok, np.take_along_axis(block, idx, axis=1), -np.inf)
    rng.permutation(d)  # top_k's draw, so that later chunks' jitter is the same
    block[pos.row_ids(), pos.indices] = -np.inf
    size = max(1, -(-d // max(4 * k, 64)))
    starts = np.arange(0, d, size)
    if starts.size > k:
        gmax = np.maximum.reduceat(block, starts, axis=1)
        thr = np.partition(gmax, starts.size - k, axis=1)[:, starts.size - k]
    else:
        thr = np.full(n, -np.inf)
    flat = np.flatnonzero(block >= thr[:, None])
    rows, vals = flat // d, block.ravel()[flat]
    order = np.lexsort((-vals, rows))
    rows, vals = rows[order], vals[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, np.arange(n))[rows]
    out = np.full((n, k), -np.inf)
    sel = rank < k
    out[rows[sel], rank[sel]] = vals[sel]
    return out
