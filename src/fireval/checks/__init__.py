"""Input guard rails: is a run aligned with its collection, truncated, transposed, comparable?

A number is only as valid as its input. These checks look at the run and the collection's own
text before anything is evaluated, compared, pooled or reported:

* :mod:`~fireval.checks.alignment`: the run's top-K follows the collection's text (catches rows
  or columns in another order than the collection);
* :mod:`~fireval.checks.agreement`: two runs agree beyond chance beyond the instance positives;
* :mod:`~fireval.checks.truncation`: the run ranks only its top ``k`` (the tail is one tie);
* :mod:`~fireval.checks.orientation`: a square matrix's rows are captions, where the text can tell.

Each check is a :class:`Check` value (name, description, rationale) listed in :data:`CHECKS`;
:func:`run_checks` runs them all and returns a :class:`ChecksReport`. Imports only
:mod:`fireval.core` and :mod:`fireval.metrics`. Figures, limits and the measured false-alarm and
detection rates: ``docs/checks.md``.

Importing the package is light (no numpy), as for :mod:`fireval.metrics`: the check values
(:mod:`~fireval.checks.definitions`) and the result types (:mod:`~fireval.checks.base`) load with
it, the engine (``run_checks``, ``ChecksReport``, ``PairResult``, ``truncated_measures``) on first
use through a module-level ``__getattr__``, so ``fireval check --list`` lists the checks without
numpy (``tests/cli/test_import_cost_checks.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fireval.checks.base import Check, CheckResult, Status
from fireval.checks.definitions import AGREEMENT as AGREEMENT  # the values, as before (not in __all__)
from fireval.checks.definitions import ALIGNMENT as ALIGNMENT
from fireval.checks.definitions import CHECKS
from fireval.checks.definitions import ORIENTATION as ORIENTATION
from fireval.checks.definitions import TRUNCATION as TRUNCATION
from fireval.lazy import lazy_exports

if TYPE_CHECKING:
    from fireval.checks.runner import ChecksReport, PairResult, run_checks
    from fireval.checks.truncation import truncated_measures

#: name -> sub-module; loaded on first use (each of these imports numpy)
_LAZY = {
    "ChecksReport": "runner",
    "PairResult": "runner",
    "run_checks": "runner",
    "truncated_measures": "truncation",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "CHECKS",
    "Check",
    "CheckResult",
    "ChecksReport",
    "PairResult",
    "Status",
    "run_checks",
    "truncated_measures",
]
