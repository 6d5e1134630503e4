"""Pure data: collections, directions, judgments and runs. No I/O, no imports of other layers."""

from typing import TYPE_CHECKING, Any

from fireval.core.errors import ConflictError, FirevalError, InputError

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


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"fireval.core.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fireval.core' has no attribute {name!r}")


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
