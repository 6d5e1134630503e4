"""fireval's one unit story, and the number formatting every printed line goes through.

The story (docs/formats.md#units):

* **Computed values are fractions.** ``Evaluation.value()``, ``Evaluation.table``,
  ``Evaluation.to_dict()`` (both forms) and every JSON file hold a score as a fraction in
  [0, 1]; ``RSum`` (a sum of six C@K) as a fraction sum in [0, 6]; ``MdR`` and ``MnR`` as
  ranks (1 = best). A difference of two scores is a difference of fractions.
* **Printed tables are percent.** Terminal, Markdown, LaTeX and HTML tables and the figures
  print 100 × the fraction (RSum: 0–600, as TVR papers print it) and say so in a header,
  note or axis label; differences print in percentage points; ranks print as ranks.
* **Every JSON carries** ``units`` (:data:`UNITS_JSON` or a more specific text), and counts
  (``n``) are integers.
* ``Evaluation.to_dict(names=..., units="percent")`` gives the logger form in percent for
  whoever wants it; the unit is then an explicit argument, never a surprise.

:func:`fixed` is the root of every printed number: it formats like ``format(x, ".1f")`` but
never prints a negative zero (``-0.0``, ``-0.00``, ``+-0.0``): a value that rounds to zero is
zero, with the sign ``+`` when a sign is asked for.

This module imports nothing from fireval, so any layer can use it.
"""

from __future__ import annotations

import math
from typing import Any

#: the ``units`` entry of every JSON file fireval writes (values as computed)
UNITS_JSON = (
    "fraction in [0, 1] (printed tables show 100x: percent, differences in percentage points); "
    "RSum: sum of six fractions in [0, 6] (printed 0-600); MdR and MnR: rank (1 = best); "
    "n: number of queries (an integer)"
)

#: the units of a printed table's values (for headers and notes)
UNITS_PRINTED = "scores in % (0–100; RSum 0–600), differences in percentage points; MdR, MnR in ranks"

#: the two units :meth:`fireval.metrics.Evaluation.to_dict` offers for its flat form
VALUE_UNITS = ("fraction", "percent")


def fixed(value: float, digits: int = 1, *, sign: bool = False) -> str:
    """``value`` with ``digits`` decimals, never a negative zero; ``sign``: always a sign (``+0.0``).

    NaN and infinities print as Python does (``nan``, ``inf``, ``-inf``).
    """
    x = float(value)
    if math.isfinite(x) and round(x, digits) == 0:
        x = 0.0  # -0.0, and -0.04 at one decimal, are zero: print them without a minus
    return format(x, f"+.{digits}f" if sign else f".{digits}f")


def percent(fraction: float, digits: int = 1, *, sign: bool = False) -> str:
    """A fraction printed in percent (``0.3444`` → ``34.4``), never ``-0.0``."""
    return fixed(100.0 * float(fraction), digits, sign=sign)


def check_units(units: str) -> str:
    """``fraction`` or ``percent`` (case-insensitive), else a one-line error naming both."""
    from fireval.core.errors import FirevalError

    u = str(units).strip().lower()
    if u not in VALUE_UNITS:
        raise FirevalError(f"units must be 'fraction' or 'percent', got {units!r}")
    return u


def int_counts(obj: Any, keys: tuple[str, ...] = ("n",)) -> Any:
    """``obj`` (JSON-like) with every ``keys`` entry that holds a whole float as an ``int``
    (``1000.0`` → ``1000``), so a count is never printed as a float; NaN becomes None."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in keys and isinstance(v, float):
                v = None if math.isnan(v) else (int(v) if v.is_integer() else v)
            out[k] = int_counts(v, keys)
        return out
    if isinstance(obj, list):
        return [int_counts(v, keys) for v in obj]
    return obj
