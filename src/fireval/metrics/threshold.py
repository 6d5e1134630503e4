"""The relevance threshold ``min_grade`` (``--min-grade``; trec_eval's ``-l``, ``relevance_level``).

With ``min_grade = G`` the binary measures count a doc relevant when its grade is >= G, and a
judged doc below G as judged irrelevant (:meth:`fireval.core.judgments.Judgments.binarised`);
the graded measures (:data:`GRADED`) keep the grades, as trec_eval's ``ndcg`` ignores ``-l``.
:func:`fireval.metrics.evaluate.evaluate` runs the kernel on the binarised labels for the first
and on the grades for the second. Definitions: ``docs/metrics.md#relevance-threshold---min-grade``.
"""

from __future__ import annotations

import math

from fireval.core.errors import FirevalError

#: measures that keep the grades under ``min_grade``
GRADED = frozenset({"nDCG", "nDCG_exp", "infNDCG"})


def check_min_grade(min_grade: float | None) -> float | None:
    """``None`` or a finite number > 0; else :class:`FirevalError` (one line)."""
    if min_grade is None:
        return None
    try:
        g = float(min_grade)
    except (TypeError, ValueError):
        raise FirevalError(f"min_grade must be a number > 0, got {min_grade!r}") from None
    if not math.isfinite(g) or g <= 0:
        raise FirevalError(
            f"min_grade must be a finite number > 0 (relevant = grade >= min_grade), got {min_grade!r}"
        )
    return g
