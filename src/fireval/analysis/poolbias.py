"""Pool bias (FIRE §4.2, Table 4) and judged@K.

Extra labels are collected from a *pool*: the top-k of some runs. A run that contributed to
the pool is favoured, because its own top documents were judged. The leave-one-run-out test
(Zobel 1998; Buckley et al. 2007) measures this: score each run with all labels, then again
with only the labels the *other* runs contributed. A large drop means the run's score
depends on its own contribution to the pool.

Provenance says which runs' pools proposed each caption–video pair. It is a set of runs per
pair, stored as a bitmask (bit ``i`` = ``runs[i]``), built from the runs' top-k
(:func:`provenance_from_topk`) or given as a mapping ``(caption, video) -> {run, ...}``.

Leave-one-out removes only labels of *pooled* sources (by default the ``human`` kind: FIRE's
annotators judged the pool). A pooled label is kept when the pair has no provenance entry or
when some run other than the left-out one proposed it. Labels of other sources (the
benchmark's instance labels, proxies and automatic matchers, which exist for every pair
whoever ranked it) are always kept.

Pool bias against the number of pooled models (FIRE §4.2): for a run ``r`` and a pool size
``s`` (0 .. R-1 other runs), keep only the pooled labels proposed by some run of a subset ``S``
of the other runs with ``|S| = s`` (:func:`restrict_to_pool`; pairs without provenance and
other sources kept as above, as is the ``OTHER_POOL`` contributor), score ``r``, and report the
drop from its score under all labels: mean, min and max over the subsets. ``s = R - 1`` is the
leave-one-out drop, ``s = 0`` the score without any pooled label. Every subset is used when
there are at most ``max_subsets`` of a size, else a seeded sample of that many (without
repetition).

judged@K (Sakai 2007): the fraction of a query's top-K documents that carry a label of any
grade; ``1 - judged@K`` is the share of the top K whose relevance the score merely assumes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.core.judgments import Judgments

OTHER_POOL = "(other pool runs)"


@dataclass(frozen=True)
class Provenance:
    """Which runs proposed each (caption, video) pair: sorted unique keys with run bitmasks."""

    shape: tuple[int, int]
    runs: tuple[str, ...]
    keys: npt.NDArray[np.int64]  # caption * n_videos + video, sorted, unique
    bits: npt.NDArray[np.int64]

    @classmethod
    def from_mapping(
        cls,
        shape: tuple[int, int],
        mapping: Mapping[tuple[int, int], Iterable[str]],
        runs: Sequence[str] | None = None,
    ) -> Provenance:
        """From ``{(caption index, video index): {run names}}``."""
        names = list(runs) if runs is not None else sorted({r for v in mapping.values() for r in v})
        if len(names) > 62:
            raise FirevalError("provenance supports at most 62 runs")
        pos = {r: i for i, r in enumerate(names)}
        keys = np.fromiter((r * shape[1] + c for r, c in mapping), dtype=np.int64, count=len(mapping))
        bits = np.zeros(len(mapping), dtype=np.int64)
        for i, contributors in enumerate(mapping.values()):
            for r in contributors:
                if r not in pos:
                    raise FirevalError(f"provenance names run {r!r}, which is not among {names}")
                bits[i] |= np.int64(1) << pos[r]
        return cls._build(shape, tuple(names), keys, bits)

    @classmethod
    def from_details(
        cls, judgments: Judgments, run_models: Mapping[str, str], *, field: str = "models"
    ) -> Provenance:
        """From the labels' own provenance, e.g. FIRE JSON's ``models`` list per annotation.

        ``run_models`` maps each run name to the model name used in the labels
        (``{"clip4clip_msrvtt": "CLIP4CLIP"}``; compared case-insensitively). Models of the
        pool that are not among the runs count as one extra contributor, ``OTHER_POOL``, which
        is never left out: a pair they proposed survives the removal of any run.
        """
        by_model: dict[str, list[str]] = {}
        for run, model in run_models.items():
            by_model.setdefault(model.lower(), []).append(run)
        mapping: dict[tuple[int, int], set[str]] = {}
        for key, info in judgments.details.items():
            models = [str(m).lower() for m in (info.get(field) or [])]
            runs = {r for m in models for r in by_model.get(m, [])}
            if any(m not in by_model for m in models):
                runs.add(OTHER_POOL)
            if runs:
                mapping[(int(key[0]), int(key[1]))] = runs
        if not any(r != OTHER_POOL for v in mapping.values() for r in v):
            raise FirevalError(
                f"no label names any of the models {sorted(set(run_models.values()))} in its {field!r} provenance"
            )
        return cls.from_mapping(judgments.shape, mapping, runs=[*run_models, OTHER_POOL])

    @classmethod
    def _build(
        cls,
        shape: tuple[int, int],
        runs: tuple[str, ...],
        keys: npt.NDArray[np.int64],
        bits: npt.NDArray[np.int64],
    ) -> Provenance:
        order = np.argsort(keys, kind="stable")
        keys, bits = keys[order], bits[order]
        uniq, start = np.unique(keys, return_index=True)
        merged = np.bitwise_or.reduceat(bits, start) if keys.size else bits
        return cls(shape, runs, uniq, merged)

    def lookup(self, rows: npt.ArrayLike, cols: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Bitmask of each (caption, video) pair; 0 when the pair was not pooled."""
        k = np.asarray(rows, np.int64) * self.shape[1] + np.asarray(cols, np.int64)
        pos = np.searchsorted(self.keys, k)
        pos = np.minimum(pos, max(self.keys.size - 1, 0))
        hit = (self.keys.size > 0) & (self.keys[pos] == k) if self.keys.size else np.zeros(k.shape, bool)
        return np.where(hit, self.bits[pos] if self.keys.size else 0, 0)


def provenance_from_topk(
    tops: Mapping[str, npt.NDArray[np.int64]],
    shape: tuple[int, int],
    direction: Direction | str = Direction.T2V,
) -> Provenance:
    """Pool provenance from each run's top-k doc indices (``(n_queries, k)``, ``-1`` = none)."""
    d = Direction.parse(direction)
    names = tuple(tops)
    keys, bits = [], []
    for i, name in enumerate(names):
        t = np.asarray(tops[name], np.int64)
        q = np.broadcast_to(np.arange(t.shape[0])[:, None], t.shape)
        ok = t >= 0
        cap, vid = (q[ok], t[ok]) if d is Direction.T2V else (t[ok], q[ok])
        keys.append(cap * shape[1] + vid)
        bits.append(np.full(cap.size, np.int64(1) << i))
    return Provenance._build(shape, names, np.concatenate(keys), np.concatenate(bits))


def leave_one_out(
    judgments: Judgments, provenance: Provenance, run: str, *, pooled: Sequence[str] = ("human",)
) -> Judgments:
    """Labels that remain when ``run``'s own pool contribution is removed (see module docstring).

    ``pooled`` lists the source kinds or exact source names that came from the pool.
    """
    if run not in provenance.runs:
        raise FirevalError(f"run {run!r} is not in the pool provenance (runs: {', '.join(provenance.runs)})")
    bit = np.int64(1) << provenance.runs.index(run)
    b = provenance.lookup(judgments.rows, judgments.cols)
    names = judgments.sources
    is_pooled = np.array([n in pooled or n.split(":", 1)[0] in pooled for n in names], dtype=bool)
    from_pool = is_pooled[judgments.source_codes] if names else np.zeros(len(judgments), bool)
    keep = ~from_pool | (b == 0) | ((b & ~bit) != 0)
    return judgments.select(keep)


def restrict_to_pool(
    judgments: Judgments, provenance: Provenance, pool: Sequence[str], *, pooled: Sequence[str] = ("human",)
) -> Judgments:
    """Labels a pool made of only the runs ``pool`` would have produced (module docstring).

    A pooled label is kept when its pair has no provenance entry or some run of ``pool`` (or
    ``OTHER_POOL``, never removed) proposed it; other sources are always kept.
    """
    unknown = [r for r in pool if r not in provenance.runs]
    if unknown:
        raise FirevalError(
            f"runs {unknown} are not in the pool provenance (runs: {', '.join(provenance.runs)})"
        )
    mask = np.int64(0)
    for r in (*pool, OTHER_POOL):
        if r in provenance.runs:
            mask |= np.int64(1) << provenance.runs.index(r)
    b = provenance.lookup(judgments.rows, judgments.cols)
    names = judgments.sources
    is_pooled = np.array([n in pooled or n.split(":", 1)[0] in pooled for n in names], dtype=bool)
    from_pool = is_pooled[judgments.source_codes] if names else np.zeros(len(judgments), bool)
    keep = ~from_pool | (b == 0) | ((b & mask) != 0)
    return judgments.select(keep)


def pool_subsets(
    others: Sequence[str], size: int, *, max_subsets: int = 20, seed: int = 0
) -> list[tuple[str, ...]]:
    """Every ``size``-subset of ``others`` when there are at most ``max_subsets``, else a seeded sample.

    The sample draws distinct subsets uniformly (``numpy.random.Generator(PCG64(seed + size))``).
    """
    from itertools import combinations
    from math import comb

    total = comb(len(others), size)
    if total <= max_subsets:
        return list(combinations(others, size))
    rng = np.random.Generator(np.random.PCG64(seed + size))
    seen: dict[tuple[str, ...], None] = {}
    while len(seen) < max_subsets:
        pick = sorted(rng.choice(len(others), size=size, replace=False).tolist())
        seen.setdefault(tuple(others[i] for i in pick), None)
    return list(seen)


def pool_bias_by_size(
    run_names: Sequence[str],
    judgments: Judgments,
    provenance: Provenance,
    scorer: Scorer,
    *,
    pooled: Sequence[str] = ("human",),
    full_scores: Mapping[str, Mapping[str, float]] | None = None,
    max_subsets: int = 20,
    seed: int = 0,
) -> list[dict[str, object]]:
    """Rows ``run, measure, pool_size, subsets, exhaustive, mean_drop, min_drop, max_drop`` (FIRE §4.2).

    For each run, each pool size ``s`` in ``0 .. len(run_names) - 1`` and each subset of the
    *other* runs of that size (:func:`pool_subsets`), the drop ``full - score under
    restrict_to_pool(subset)``; ``subsets`` counts the subsets scored, ``exhaustive`` says
    whether they were all of them.
    """
    from math import comb

    rows: list[dict[str, object]] = []
    cache: dict[tuple[str, tuple[str, ...]], Mapping[str, float]] = {}
    for run in run_names:
        full = full_scores[run] if full_scores is not None else scorer(run, judgments)
        others = [r for r in run_names if r != run]
        for size in range(len(others) + 1):
            subsets = pool_subsets(others, size, max_subsets=max_subsets, seed=seed)
            drops: dict[str, list[float]] = {m: [] for m in full}
            for sub in subsets:
                key = (run, tuple(sorted(sub)))
                if key not in cache:
                    cache[key] = scorer(run, restrict_to_pool(judgments, provenance, sub, pooled=pooled))
                for m in full:
                    drops[m].append(float(full[m]) - float(cache[key][m]))
            for m, ds in drops.items():
                rows.append(
                    {
                        "run": run,
                        "measure": m,
                        "pool_size": size,
                        "subsets": len(subsets),
                        "exhaustive": len(subsets) == comb(len(others), size),
                        "mean_drop": float(np.mean(ds)),
                        "min_drop": float(np.min(ds)),
                        "max_drop": float(np.max(ds)),
                    }
                )
    return rows


def judged_at_k(
    top: npt.NDArray[np.int64], judgments: Judgments, direction: Direction | str = Direction.T2V
) -> npt.NDArray[np.float64]:
    """Per-query fraction of the top-K (``(Q, K)`` doc indices) that is judged (any grade)."""
    d = Direction.parse(direction)
    q_idx, doc_idx = (
        (judgments.rows, judgments.cols) if d is Direction.T2V else (judgments.cols, judgments.rows)
    )
    n_docs = judgments.shape[1] if d is Direction.T2V else judgments.shape[0]
    jk = np.sort(q_idx * n_docs + doc_idx)
    t = np.asarray(top, np.int64)
    keys = np.arange(t.shape[0], dtype=np.int64)[:, None] * n_docs + t
    pos = np.minimum(np.searchsorted(jk, keys), max(jk.size - 1, 0))
    hit = (t >= 0) & (jk[pos] == keys) if jk.size else np.zeros(t.shape, bool)
    return hit.sum(axis=1) / t.shape[1]


Scorer = Callable[[str, Judgments], Mapping[str, float]]


def pool_bias_table(
    run_names: Sequence[str],
    judgments: Judgments,
    provenance: Provenance,
    scorer: Scorer,
    *,
    pooled: Sequence[str] = ("human",),
    full_scores: Mapping[str, Mapping[str, float]] | None = None,
) -> list[dict[str, object]]:
    """Rows ``run, measure, all_labels, leave_one_out, drop`` (FIRE Table 4).

    ``scorer(run, judgments)`` returns ``{measure: mean score}`` of that run under those labels;
    ``full_scores[run]``, when given, is that score under all of ``judgments`` (not recomputed).
    """
    rows: list[dict[str, object]] = []
    for run in run_names:
        full = full_scores[run] if full_scores is not None else scorer(run, judgments)
        loo = scorer(run, leave_one_out(judgments, provenance, run, pooled=pooled))
        for m, v in full.items():
            rows.append(
                {
                    "run": run,
                    "measure": m,
                    "all_labels": float(v),
                    "leave_one_out": float(loo[m]),
                    "drop": float(v - loo[m]),
                }
            )
    return rows
