"""Pure data: collections, directions, judgments and runs. No I/O, no imports of other layers."""

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.core.errors import ConflictError, FirevalError, InputError
from fireval.core.judgments import DEFAULT_PRECEDENCE, Judgments, merge
from fireval.core.run import RankedLists, Run
from fireval.core.text import normalise

__all__ = [
    "DEFAULT_PRECEDENCE",
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
