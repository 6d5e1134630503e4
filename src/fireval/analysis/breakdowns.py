"""Breakdowns of where runs win and what the labels look like (FIRE Figs. 2, 3, 11, 12; App. D).

* :func:`correctness_by_length` — per caption-length bin, how many queries both runs get right
  at K, only A, only B, or neither (Fig. 3). With ties, C@K of a query is the probability that a
  random order of its tied group puts a relevant document in the top K, so the counts are
  *expected* counts (the two runs' tie orders independent): ``both = Σ a·b``, ``only A =
  Σ a·(1 − b)``, ... They are integers without ties, and ``both + only A`` is always the run's
  C@K sum, as in the score tables (a query whose every score ties is not "right").
* :func:`positives_per_query` / :func:`length_vs_positives` / :func:`positives_histogram` —
  the number of relevant documents per query, against caption length (Fig. 2) and as a
  histogram (Fig. 11).
* :func:`positive_ranks_by_source` — the rank a run gives each relevant pair, grouped by the
  label's source kind (instance / human / proxy / auto; Fig. 12). The rank is tie-aware:
  ``1 + #{scored higher} + (#{tied} - 1) / 2`` (the expected rank under a random order of
  the tied group, McSherry & Najork 2008).
* :func:`train_test_overlap` — for each test caption, the mean of its 10 highest cosine
  similarities to the training captions in a character 5-gram TF-IDF space (App. D, Table 7),
  and its Spearman and Kendall correlation with caption length (``scipy.stats``).
* :func:`caption_char_lengths` with :data:`CHAR_EDGES` — Fig. 3 by caption length in characters.
* :func:`max_train_similarity` / :func:`correctness_by_similarity` — each test caption's highest
  TF-IDF cosine to the training captions, and each run's C@K per equal-count bin of it (Fig. 8).
* :func:`caption_examples` — the shortest, median and longest captions with their positives
  (Tables 5, 6; by words, 10 per group as FIRE, or ``by="chars"``).
* :func:`overlap_length_table` — Table 7 with a words row and a characters row.
* :func:`rank_histogram` — the count of relevant pairs at each rank per source (Fig. 12).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import stats

from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.core.judgments import Judgments, source_kind
from fireval.core.run import Run
from fireval.metrics.counting import count_direct

_BUDGET = 4_000_000


def length_bins(
    lengths: npt.ArrayLike, edges: Sequence[int] | None = None
) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Bin index of each length and the bin labels; default bins <=5, 6-7, 8-9, 10-12, >=13."""
    ln = np.asarray(lengths, dtype=np.int64)
    e = list(edges) if edges is not None else [6, 8, 10, 13]
    if any(x >= y for x, y in zip(e, e[1:])):
        raise FirevalError(f"length bin edges must increase: {e}")
    idx = np.searchsorted(np.asarray(e), ln, side="right")
    labels = [f"<={e[0] - 1}"]
    for lo, hi in zip(e, e[1:]):
        labels.append(str(lo) if hi - 1 == lo else f"{lo}-{hi - 1}")
    labels.append(f">={e[-1]}")
    return idx.astype(np.int64), labels


def correctness_by_length(
    correct_a: npt.ArrayLike,
    correct_b: npt.ArrayLike,
    lengths: npt.ArrayLike,
    edges: Sequence[int] | None = None,
) -> list[dict[str, object]]:
    """(Expected) counts of queries right in both / only A / only B / neither, per length bin.

    ``correct_a``/``correct_b`` are per-query C@K values in [0, 1] (tie-aware: fractional when
    the relevant document ties across the cutoff); see the module docstring. Counts are ints
    when every value is 0 or 1, else floats.
    """
    a = np.clip(np.asarray(correct_a, dtype=np.float64), 0.0, 1.0)
    b = np.clip(np.asarray(correct_b, dtype=np.float64), 0.0, 1.0)
    if a.shape != b.shape or a.shape != np.shape(lengths):
        raise FirevalError("correctness arrays and caption lengths must cover the same queries")
    idx, labels = length_bins(lengths, edges)
    nb = len(labels)
    probs = (a * b, a * (1 - b), (1 - a) * b, (1 - a) * (1 - b))
    counts = np.stack([np.bincount(idx, weights=w, minlength=nb) for w in probs], axis=1)
    n = np.bincount(idx, minlength=nb)
    whole = bool(np.all((a == 0) | (a == 1)) and np.all((b == 0) | (b == 1)))

    def num(x: float) -> int | float:
        return int(round(x)) if whole else float(x)

    return [
        {
            "bin": lab,
            "both": num(c[0]),
            "only_a": num(c[1]),
            "only_b": num(c[2]),
            "neither": num(c[3]),
            "n": int(k),
        }
        for lab, c, k in zip(labels, counts, n, strict=True)
    ]


def positives_per_query(
    judgments: Judgments, direction: Direction | str = Direction.T2V
) -> npt.NDArray[np.int64]:
    """Number of relevant (grade > 0) documents of each query."""
    m = judgments.matrix(direction)
    return np.asarray((m > 0).sum(axis=1)).ravel().astype(np.int64)


def length_vs_positives(lengths: npt.ArrayLike, positives: npt.ArrayLike) -> dict[str, object]:
    """Mean number of positives per caption length, plus Spearman's rho between the two."""
    ln = np.asarray(lengths, dtype=np.int64)
    pos = np.asarray(positives, dtype=np.float64)
    uniq, inv = np.unique(ln, return_inverse=True)
    sums = np.bincount(inv, weights=pos)
    cnt = np.bincount(inv)
    rho = stats.spearmanr(ln, pos).statistic if np.ptp(ln) > 0 and np.ptp(pos) > 0 else float("nan")
    return {
        "rows": [
            {"length": int(u), "queries": int(c), "mean_positives": float(s / c)}
            for u, s, c in zip(uniq, sums, cnt, strict=True)
        ],
        "spearman": float(rho),
    }


def positives_histogram(positives: npt.ArrayLike) -> list[dict[str, int]]:
    """``[{positives: k, queries: count}]`` for k = 0..max."""
    counts = np.bincount(np.asarray(positives, dtype=np.int64))
    return [{"positives": int(k), "queries": int(c)} for k, c in enumerate(counts)]


def positive_ranks(
    run: Run, judgments: Judgments, direction: Direction | str = Direction.T2V
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.object_]]:
    """Tie-aware rank of every relevant pair in ``run``, and each pair's source name."""
    d = Direction.parse(direction)
    rel = judgments.relevant()
    names = rel.source_per_label
    q = rel.rows if d is Direction.T2V else rel.cols
    doc = rel.cols if d is Direction.T2V else rel.rows
    order = np.argsort(q, kind="stable")
    q, doc, names = q[order], doc[order], names[order]
    nq = run.n_queries(d)
    n_docs = run.shape[1] if d is Direction.T2V else run.shape[0]
    ranks = np.empty(q.size, dtype=np.float64)
    step = max(1, _BUDGET // max(n_docs, 1))
    bounds = np.searchsorted(q, np.arange(0, nq + step, step))
    for ci, start in enumerate(range(0, nq, step)):
        lo, hi = int(bounds[ci]), int(bounds[ci + 1])
        if lo == hi:
            continue
        block = run.block(d, start, min(start + step, nq))
        qq = q[lo:hi] - start
        higher, tied = count_direct(block, qq, block[qq, doc[lo:hi]])
        ranks[lo:hi] = 1 + higher + (tied - 1) / 2
    return ranks, names


def positive_ranks_by_source(
    run: Run, judgments: Judgments, direction: Direction | str = Direction.T2V
) -> dict[str, npt.NDArray[np.float64]]:
    """``source kind -> ranks`` of the relevant pairs labelled by that kind (FIRE Fig. 12)."""
    ranks, names = positive_ranks(run, judgments, direction)
    uniq, inv = np.unique(names.astype(str), return_inverse=True)
    kinds = np.array([source_kind(str(n)) for n in uniq], dtype=object)[inv] if names.size else names
    return {k: ranks[kinds == k] for k in dict.fromkeys(kinds.tolist())}


#: what the TF-IDF model is fitted on: ``all`` (training and test captions together; the vocabulary
#: and idf of FIRE's App. D / Table 7) or ``train`` (the training captions only; fireval's earlier variant)
TFIDF_FITS = ("all", "train")


def train_test_overlap(
    test_captions: Sequence[str],
    train_captions: Sequence[str],
    *,
    top: int = 10,
    ngram: int = 5,
    chunk: int = 2000,
    fit: str = "all",
) -> npt.NDArray[np.float64]:
    """Mean of the ``top`` highest char-``ngram`` TF-IDF cosines of each test caption to training.

    The TF-IDF model (scikit-learn, ``analyzer="char"``, l2-normalised rows) is fitted on
    ``fit`` (:data:`TFIDF_FITS`: ``all`` = training and test captions, ``train`` = training
    only); cosine = dot product of the normalised vectors. Computed in chunks of test captions
    with one sparse product each.
    """
    return train_similarities(test_captions, train_captions, top=top, ngram=ngram, chunk=chunk, fit=fit)[0]


def train_similarities(
    test_captions: Sequence[str],
    train_captions: Sequence[str],
    *,
    top: int = 10,
    ngram: int = 5,
    chunk: int = 2000,
    fit: str = "all",
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(overlap, max)``: :func:`train_test_overlap` and :func:`max_train_similarity` in one pass.

    One TF-IDF fit and one sparse product per chunk serve both: the row maximum is the largest
    of the ``top`` values the partition already isolated (the same number a second pass with
    ``top=1`` computes, bit for bit). The report needs both; two passes did the costly part
    (the products and partitions over test x train cosines) twice.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not train_captions:
        raise FirevalError("no training captions given for the train-test overlap")
    if top < 1:
        raise FirevalError(f"top must be >= 1, got {top}")
    if fit not in TFIDF_FITS:
        raise FirevalError(f"TF-IDF fit must be one of {', '.join(TFIDF_FITS)}, got {fit!r}")
    vec = TfidfVectorizer(analyzer="char", ngram_range=(ngram, ngram), lowercase=True)
    vec.fit(list(train_captions) + list(test_captions) if fit == "all" else list(train_captions))
    train = vec.transform(list(train_captions))
    test = vec.transform(list(test_captions))
    k = min(top, train.shape[0])
    out = np.empty(test.shape[0], dtype=np.float64)
    best = np.empty(test.shape[0], dtype=np.float64)
    train_t = train.T.tocsr()  # converted once, not in every chunk's product
    for s in range(0, test.shape[0], chunk):
        part = top_k_values((test[s : s + chunk] @ train_t).toarray(), k)
        out[s : s + chunk] = part.mean(axis=1)
        best[s : s + chunk] = part[:, -1]
    return out, best


#: :func:`top_k_values`: columns sampled per wanted value (the threshold's sample), and how many
#: times the expected number of candidates (k x cols / sample) a row may keep before it falls
#: back to a partition of the whole row
_SAMPLE_PER_K = 256
_MAX_CANDIDATES_PER_K = 8


def top_k_values(a: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """The ``k`` largest values of each row of ``a``, sorted ascending (shape ``(rows, k)``).

    The same values as ``np.sort(a, axis=1)[:, -k:]`` (exact: values are selected, never
    computed), in O(rows x cols) instead of a partition of every whole row, which dominated
    ``fireval report --train-captions`` (2000 x 48,774 cosines per chunk on MSVD): the ``k``-th
    largest value of a strided sample of the columns is a lower bound of the row's ``k``-th
    largest, so only the values at or above it (about ``k x cols / sample`` per row) are
    partitioned. Rows where too many values reach the bound (ties, mostly-zero rows) are
    partitioned whole. NaN is not expected (cosines).
    """
    n_rows, n_cols = a.shape
    if not 1 <= k <= n_cols:
        raise FirevalError(f"k must be in 1..{n_cols}, got {k}")
    out = np.empty((n_rows, k), dtype=a.dtype)
    m = k * _SAMPLE_PER_K
    if n_rows == 0:
        return out
    if k == 1:
        out[:, 0] = a.max(axis=1)
        return out
    if m >= n_cols // 2:  # small rows: partition them whole
        out[:] = np.sort(np.partition(a, n_cols - k, axis=1)[:, n_cols - k :], axis=1)
        return out
    cols = np.linspace(0, n_cols - 1, m).astype(np.int64)  # distinct, as m < n_cols / 2
    sample = a[:, cols]
    thr = np.partition(sample, m - k, axis=1)[:, m - k]
    mask = a >= thr[:, None]
    count = mask.sum(axis=1)  # >= k: the sample's top k are in the row
    cap = _MAX_CANDIDATES_PER_K * -(-k * n_cols // m)  # expected about k x cols / m candidates
    whole = np.flatnonzero(count > cap)
    few = np.flatnonzero(count <= cap)
    if whole.size:
        rows = a[whole]
        out[whole] = np.sort(np.partition(rows, n_cols - k, axis=1)[:, n_cols - k :], axis=1)
        mask[whole] = False
    if few.size:
        cnt = count[few]
        width = int(cnt.max())
        vals = a[mask]  # row-major: each row's candidates together (rows in `few` only)
        starts = np.cumsum(cnt) - cnt
        row = np.repeat(np.arange(few.size), cnt)
        pos = np.arange(vals.size) - np.repeat(starts, cnt)
        pad = np.full((few.size, width), -np.inf, dtype=a.dtype)
        pad[row, pos] = vals
        out[few] = np.sort(np.partition(pad, width - k, axis=1)[:, width - k :], axis=1)
    return out


def overlap_length_correlation(overlap: npt.ArrayLike, lengths: npt.ArrayLike) -> dict[str, float]:
    """Spearman's rho and Kendall's tau (tau-b) between train–test overlap and caption length.

    When either input is constant (e.g. no caption overlaps the training captions) a rank
    correlation is undefined: NaN for both coefficients and p-values, without scipy's warning.
    """
    o = np.asarray(overlap, dtype=np.float64)
    ln = np.asarray(lengths, dtype=np.float64)
    if o.size < 2 or np.ptp(o) == 0 or np.ptp(ln) == 0:
        nan = float("nan")
        mean = float(o.mean()) if o.size else nan
        return {"spearman": nan, "spearman_p": nan, "kendall": nan, "kendall_p": nan, "mean_overlap": mean}
    sp = stats.spearmanr(o, ln)
    kt = stats.kendalltau(o, ln)
    return {
        "spearman": float(sp.statistic),
        "spearman_p": float(sp.pvalue),
        "kendall": float(kt.statistic),
        "kendall_p": float(kt.pvalue),
        "mean_overlap": float(o.mean()),
    }


#: default bins of caption length in characters (FIRE Fig. 3 by characters): <=30, 31-40, 41-50, 51-60, >=61
CHAR_EDGES = (31, 41, 51, 61)


def caption_char_lengths(captions: Sequence[str]) -> npt.NDArray[np.int64]:
    """Length of each caption in characters (Unicode code points of the verbatim text, stripped)."""
    return np.fromiter((len(str(c).strip()) for c in captions), dtype=np.int64, count=len(captions))


def max_train_similarity(
    test_captions: Sequence[str],
    train_captions: Sequence[str],
    *,
    ngram: int = 5,
    chunk: int = 2000,
    fit: str = "all",
) -> npt.NDArray[np.float64]:
    """For each test caption its highest char-``ngram`` TF-IDF cosine to any training caption.

    The same TF-IDF space as :func:`train_test_overlap`, top 1: fireval's earlier Fig. 8 axis
    (``fig8_similarity="max"`` of :func:`fireval.analysis.trust.analyse`); FIRE's is the mean of
    the top 10, :func:`train_test_overlap`.
    """
    return train_similarities(test_captions, train_captions, top=1, ngram=ngram, chunk=chunk, fit=fit)[1]


def correctness_by_similarity(
    correct: dict[str, npt.ArrayLike], similarity: npt.ArrayLike, n_bins: int = 5
) -> list[dict[str, object]]:
    """Share of queries each run gets right, per bin of train–test similarity (FIRE Fig. 8).

    Bins are equal-count (quantiles of ``similarity``; repeated edges merged), closed on the left
    and the last one on both sides. ``correct`` maps run -> per-query C@K in [0, 1] (tie-aware, so
    possibly fractional; NaN = query left out, e.g. no relevant document); a row holds ``bin`` (``"lo–hi"``), ``low``, ``high``, ``n``
    (queries in the bin, over the queries defined for every run) and each run's rate in [0, 1].
    """
    s = np.asarray(similarity, dtype=np.float64)
    vals = {r: np.asarray(v, dtype=np.float64) for r, v in correct.items()}
    if any(v.shape != s.shape for v in vals.values()):
        raise FirevalError("correctness arrays and similarities must cover the same queries")
    if n_bins < 1:
        raise FirevalError(f"n_bins must be >= 1, got {n_bins}")
    ok = ~np.isnan(s)
    for v in vals.values():
        ok &= ~np.isnan(v)
    s = s[ok]
    if s.size == 0:
        return []
    edges = np.unique(np.quantile(s, np.linspace(0, 1, n_bins + 1)))
    if edges.size == 1:
        edges = np.array([edges[0], edges[0]])
    idx = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, edges.size - 2)
    nb = edges.size - 1
    counts = np.bincount(idx, minlength=nb)
    rows: list[dict[str, object]] = []
    # C@K values are tie-aware expectations in [0, 1]: a bin's C@K is their mean, as in the score tables
    hits = {r: np.bincount(idx, weights=np.clip(v[ok], 0.0, 1.0), minlength=nb) for r, v in vals.items()}
    for b in range(nb):
        row: dict[str, object] = {
            "bin": f"{edges[b]:.2f}–{edges[b + 1]:.2f}",
            "low": float(edges[b]),
            "high": float(edges[b + 1]),
            "n": int(counts[b]),
        }
        for r in vals:
            row[r] = float(hits[r][b] / counts[b]) if counts[b] else float("nan")
        rows.append(row)
    return rows


def caption_examples(
    captions: Sequence[str],
    judgments: Judgments,
    video_ids: Sequence[str],
    *,
    per_group: int = 10,
    max_videos: int = 5,
    by: str = "words",
) -> list[dict[str, object]]:
    """The ``per_group`` shortest, median and longest captions with their positives (FIRE Tables 5, 6).

    FIRE ranks by words, 10 per group (the defaults); ``by="chars", per_group=3`` is fireval's
    earlier variant. Words are whitespace-separated tokens of the verbatim caption; ties keep
    collection order. Each row: ``group`` (shortest / median / longest), ``caption``
    (verbatim), ``chars``, ``words``, ``positives`` (relevant videos under ``judgments``) and
    ``videos`` (the first ``max_videos`` of their ids, in collection order).
    """
    if by not in ("words", "chars"):
        raise FirevalError(f"caption examples are ranked by 'words' or 'chars', got {by!r}")
    if per_group < 1:
        raise FirevalError(f"per_group must be >= 1, got {per_group}")
    n = len(captions)
    if n == 0:
        return []
    chars = caption_char_lengths(captions)
    words = caption_word_lengths(captions)
    order = np.argsort(words if by == "words" else chars, kind="stable")
    k = min(per_group, n)
    mid = max(0, n // 2 - k // 2)
    picks = [("shortest", order[:k]), ("median", order[mid : mid + k]), ("longest", order[n - k :][::-1])]
    m = judgments.matrix(Direction.T2V).tocsr()
    rows: list[dict[str, object]] = []
    for group, idx in picks:
        for q in idx:
            q = int(q)
            start, end = m.indptr[q], m.indptr[q + 1]
            cols = m.indices[start:end][m.data[start:end] > 0]
            cols = np.sort(cols)
            rows.append(
                {
                    "group": group,
                    "caption": str(captions[q]),
                    "chars": int(chars[q]),
                    "words": int(words[q]),
                    "positives": int(cols.size),
                    "videos": [str(video_ids[c]) for c in cols[:max_videos]],
                }
            )
    return rows


def caption_word_lengths(captions: Sequence[str]) -> npt.NDArray[np.int64]:
    """Length of each caption in whitespace-separated words."""
    return np.fromiter((len(str(c).split()) for c in captions), dtype=np.int64, count=len(captions))


def overlap_length_table(
    overlap: npt.ArrayLike, words: npt.ArrayLike, chars: npt.ArrayLike
) -> list[dict[str, object]]:
    """FIRE Table 7: the correlation of train–test overlap with caption length, one row per unit.

    Rows ``length`` (``words`` / ``characters``) with the keys of :func:`overlap_length_correlation`.
    """
    return [
        {"length": "words", **overlap_length_correlation(overlap, words)},
        {"length": "characters", **overlap_length_correlation(overlap, chars)},
    ]


def rank_histogram(
    ranks_by_source: dict[str, npt.NDArray[np.float64]], *, max_rank: int = 50
) -> list[dict[str, object]]:
    """Count of relevant pairs at each rank 1..``max_rank`` per label source (FIRE Fig. 12).

    A tie-aware rank ``r`` (possibly fractional, :func:`positive_ranks`) falls in the bin
    ``floor(r)``; ranks above ``max_rank`` are counted in the row ``rank = max_rank + 1``
    (``beyond = True``). Rows: ``rank``, ``beyond``, and one count per source kind.
    """
    if max_rank < 1:
        raise FirevalError(f"max_rank must be >= 1, got {max_rank}")
    counts = {}
    for src, ranks in ranks_by_source.items():
        b = np.minimum(np.floor(np.asarray(ranks, dtype=np.float64)).astype(np.int64), max_rank + 1)
        counts[src] = np.bincount(b, minlength=max_rank + 2)
    rows: list[dict[str, object]] = []
    for r in range(1, max_rank + 2):
        row: dict[str, object] = {"rank": r, "beyond": r > max_rank}
        for src, c in counts.items():
            row[src] = int(c[r])
        rows.append(row)
    return rows
