"""Lazy package exports (PEP 562): names that load from a sub-module on first use.

``fireval``'s packages keep ``import fireval.<package>`` free of numpy, so that the CLI's
``--help``, ``fireval measures`` and ``fireval check --list`` start fast: a package lists its
heavy names in a table ``{name: sub-module}`` and sets
``__getattr__, __dir__ = lazy_exports(__name__, table)``. The first access imports the sub-module
and binds the value in the package, so later accesses are plain attribute reads. Type checkers
see the names through ``if TYPE_CHECKING:`` imports in the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` for ``package`` (its ``__name__``), loading each
    name of ``table`` from ``package.<table[name]>`` on first access."""
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:
        if name in table:
            value = getattr(importlib.import_module(f"{package}.{table[name]}"), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
