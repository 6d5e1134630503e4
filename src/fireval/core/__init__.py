"""Pure data: collections, directions, judgments and runs. No I/O, no imports of other layers."""

from typing import TYPE_CHECKING

from fireval.core.errors import ConflictError, FirevalError, InputError
from fireval.lazy import lazy_exports

if TYPE_CHECKING:
    from fireval.core.collection import Collection
    from fireval.core.direction import Direction
    from fireval.core.judgments import DEFAULT_PRECEDENCE, FIRE_PRECEDENCE, Judgments, merge
    from fireval.core.run import RankedLists, Run
    from fireval.core.text import normalise

#: name -> sub-module; loaded on first use, so `import fireval.core.errors` (the CLI) needs no numpy
_LAZY = {
    "Collection": "collection",
    "Direction": "direction",
    "DEFAULT_PRECEDENCE": "judgments",
    "FIRE_PRECEDENCE": "judgments",
    "Judgments": "judgments",
    "merge": "judgments",
    "RankedLists": "run",
    "Run": "run",
    "normalise": "text",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "DEFAULT_PRECEDENCE",
    "FIRE_PRECEDENCE",
    "Collection",
    "ConflictError",
    "Direction",
    "FirevalError",
    "InputError",
    "Judgments",
    "RankedLists",
    "Run",
    "merge",
    "normalise",
]
