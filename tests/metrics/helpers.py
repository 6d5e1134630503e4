"""Builders shared by the metric tests."""

from __future__ import annotations

import numpy as np

from fireval.core import Judgments, Run

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
