"""fireval.metrics: tie-aware, vectorised evaluation of rankings (imports only fireval.core).

Public API: :func:`evaluate`, :class:`Evaluation`, :class:`Measure`, :func:`parse_measure`,
:data:`DEFAULT_MEASURES`, :func:`query_values`. Definitions: ``docs/metrics.md``.

Importing the package is light (no numpy): the measures (:mod:`~fireval.metrics.measures`, built
from :mod:`~fireval.metrics.definitions`) load with it, the engine (``evaluate``, ``Evaluation``,
``query_values``, ``UNJUDGED_MODES``, ``PRESETS``, ``TIE_POLICIES``) on first use, so ``fireval
measures`` lists the measures without numpy (``tests/cli/test_import_cost.py``).

One name is both a function and a sub-module: ``fireval.metrics.evaluate`` is the function
:func:`~fireval.metrics.evaluate.evaluate`, also after the sub-module of the same name has been
imported (the import system then binds the sub-module to the package; :class:`_Package` keeps
the function). The sub-module itself is ``sys.modules["fireval.metrics.evaluate"]``.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from fireval.lazy import lazy_exports
from fireval.metrics.measures import DEFAULT_MEASURES, Measure, parse_measure, parse_measures

if TYPE_CHECKING:
    from fireval.metrics.evaluate import UNJUDGED_MODES, Evaluation, evaluate, query_values
    from fireval.metrics.presets import PRESETS
    from fireval.metrics.ties import TIE_POLICIES

#: name -> sub-module; loaded on first use (each of these imports numpy)
_LAZY = {
    "UNJUDGED_MODES": "evaluate",
    "Evaluation": "evaluate",
    "evaluate": "evaluate",
    "query_values": "evaluate",
    "PRESETS": "presets",
    "TIE_POLICIES": "ties",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


class _Package(types.ModuleType):
    """The package's module type: binding the sub-module ``evaluate`` binds its function instead."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "evaluate" and isinstance(value, types.ModuleType):
            value = value.evaluate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

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
