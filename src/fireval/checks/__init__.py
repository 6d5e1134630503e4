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
"""

from fireval.checks.agreement import CHECK as AGREEMENT
from fireval.checks.alignment import CHECK as ALIGNMENT
from fireval.checks.base import Check, CheckResult, Status
from fireval.checks.orientation import CHECK as ORIENTATION
from fireval.checks.runner import ChecksReport, PairResult, run_checks
from fireval.checks.truncation import CHECK as TRUNCATION
from fireval.checks.truncation import truncated_measures

#: every input check, in the order reports list them
CHECKS: tuple[Check, ...] = (ALIGNMENT, AGREEMENT, TRUNCATION, ORIENTATION)

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
