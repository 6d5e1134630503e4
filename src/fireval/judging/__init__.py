"""Judging workflow: pooling, the annotation store, aggregation and export.

``store_judgments(db_url, collection)`` turns the annotation store into a label source
(``"human"``) for :func:`fireval.metrics.evaluate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fireval.core import Collection, Judgments


def store_judgments(db_url: str, collection: Collection) -> Judgments:
    """Majority labels of the annotation store at ``db_url`` (see :func:`fireval.judging.store.store_judgments`)."""
    from fireval.judging.store import store_judgments as _sj

    return _sj(db_url, collection)


def is_store_url(value: str) -> bool:
    """True when ``value`` names an annotation store (a ``sqlite://`` or ``postgresql://`` URL)."""
    return value.startswith(("sqlite:", "postgresql:", "postgresql+"))


__all__: list[Any] = ["is_store_url", "store_judgments"]
