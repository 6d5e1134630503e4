"""Builders shared by the metric tests."""

from __future__ import annotations

import numpy as np

from fireval.core import Collection, Judgments, Run

NEG = float("-inf")


def build(scores: np.ndarray, grades: list[list[float | None]]) -> tuple[Run, Judgments]:
    """A dense run and judgments from a score matrix and a grade table (None = unjudged)."""
    rows, cols, gs = [], [], []
    for i, row in enumerate(grades):
        for j, g in enumerate(row):
            if g is not None:
                rows.append(i)
                cols.append(j)
                gs.append(g)
    j = Judgments.from_arrays(scores.shape, rows, cols, gs, "human")
    return Run("r", scores=np.asarray(scores, dtype=np.float64)), j


def random_case(
    rng: np.random.Generator,
    n_q: int,
    n_d: int,
    levels: int = 3,
    p_inf: float = 0.1,
    p_judged: float = 0.6,
    graded: bool = True,
) -> tuple[np.ndarray, list[list[float | None]]]:
    """Small integer scores (many ties), some -inf, and a mix of unjudged / 0 / graded labels."""
    s = rng.integers(0, levels, size=(n_q, n_d)).astype(np.float64)
    s[rng.random((n_q, n_d)) < p_inf] = NEG
    grades: list[list[float | None]] = []
    for _ in range(n_q):
        row: list[float | None] = []
        for _ in range(n_d):
            if rng.random() < p_judged:
                row.append(float(rng.integers(0, 3 if graded else 2)))
            else:
                row.append(None)
        grades.append(row)
    return s, grades


def max_grade(grades: list[list[float | None]]) -> float:
    """The largest positive grade of a grade table (1.0 when there is none)."""
    return max((g for row in grades for g in row if g is not None and g > 0), default=1.0)


def toy_collection(n_q: int, doc_ids: list[str]) -> Collection:
    """``n_q`` captions ``q0, q1, ...`` (all of the first video) over the videos ``doc_ids``."""
    return Collection(
        name="x",
        video_ids=tuple(doc_ids),
        caption_ids=tuple(f"q{i}" for i in range(n_q)),
        captions=tuple("c" for _ in range(n_q)),
        caption_video=np.zeros(n_q, np.int64),
    )


def to_trec(
    scores: np.ndarray, grades: list[list[float | None]], doc_ids: list[str]
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """``(qrel, run)`` dicts for pytrec_eval: the judged pairs, and every finite score."""
    qrel, run = {}, {}
    for i, row in enumerate(grades):
        qrel[f"q{i}"] = {doc_ids[j]: int(g) for j, g in enumerate(row) if g is not None}
        run[f"q{i}"] = {doc_ids[j]: float(s) for j, s in enumerate(scores[i]) if np.isfinite(s)}
    return qrel, run
