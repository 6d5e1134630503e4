"""fireval.metrics: tie-aware, vectorised evaluation of rankings (imports only fireval.core).

Public API: :func:`evaluate`, :class:`Evaluation`, :class:`Measure`, :func:`parse_measure`,
:data:`DEFAULT_MEASURES`, :func:`query_values`. Definitions: ``docs/metrics.md``.
"""

from fireval.metrics.evaluate import UNJUDGED_MODES, Evaluation, evaluate, query_values
from fireval.metrics.measures import DEFAULT_MEASURES, Measure, parse_measure, parse_measures
from fireval.metrics.presets import PRESETS
from fireval.metrics.ties import TIE_POLICIES

__all__ = [
    "DEFAULT_MEASURES",
    "PRESETS",
    "TIE_POLICIES",
    "UNJUDGED_MODES",
    "Evaluation",
    "Measure",
    "evaluate",
    "parse_measure",
    "parse_measures",
    "query_values",
]
