"""The range of relevance grades that label files may hold, checked on input.

Human and automatic labels (TREC qrels, graded ``.npz`` of any source but ``proxy:*``) hold
integer grades from 0 to :data:`GRADE_MAX` (0 = judged irrelevant). TREC qrels may also hold
negative integers, which mean in the pool but not judged as in trec_eval (``Judgments.pooled``). Proxy labels
(``proxy:<name>``, Wray et al. 2021) are similarities: any finite real in ``[0, GRADE_MAX]``.
FIRE JSON labels are binary by construction.

The bound keeps the exponential gain ``2^g - 1`` (``nDCG_exp``) far from float64 overflow
(``2^1024``) and catches files whose grades are not grades (scores, ids, a shifted column).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fireval.core import InputError

GRADE_MAX = 100
"""Largest grade accepted from a label file."""


def is_proxy(source: str) -> bool:
    """Proxy sources (``proxy:bow``...) may hold non-integer grades."""
    return str(source).split(":", 1)[0] == "proxy"


def bad_grade(grades: npt.ArrayLike, source: str, *, allow_negative: bool = False) -> tuple[int, str] | None:
    """``(position, reason)`` of the first grade outside the accepted range, or None.

    ``allow_negative``: negative integers pass (TREC qrels: in the pool, not judged).
    """
    g = np.asarray(grades, dtype=np.float64)
    proxy = is_proxy(source)
    lo = -np.inf if allow_negative else 0.0
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(g) | (g < lo) | (g > GRADE_MAX)
        if not proxy:
            bad |= g != np.round(g)
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    kind = "a real number" if proxy else "an integer"
    rng = (
        f"<= {GRADE_MAX} (0: judged irrelevant, < 0: pooled, not judged)"
        if allow_negative
        else f"from 0 to {GRADE_MAX}"
    )
    why = f"grade {g[i]:g} is not {kind} {rng}"
    if not proxy and np.isfinite(g[i]) and g[i] != np.round(g[i]):
        why += "; non-integer grades are accepted for proxy labels only"
    return i, why


def check_grades(grades: npt.NDArray[np.float64], source: str, src: str) -> None:
    """Raise :class:`InputError` naming ``src`` when a grade is outside the accepted range."""
    found = bad_grade(grades, source)
    if found is not None:
        i, why = found
        raise InputError(f"label {i}: {why}", source=src)
