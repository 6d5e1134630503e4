"""Retrieval direction: which side of the caption–video pairs plays the query."""

from __future__ import annotations

from enum import StrEnum

from fireval.core.errors import FirevalError


class Direction(StrEnum):
    """``t2v``: captions are queries, videos documents. ``v2t``: the transpose.

    All data (scores, judgments) is stored caption × video; a direction only decides
    whether a metric sees that matrix or its transpose.
    """

    T2V = "t2v"
    V2T = "v2t"

    @classmethod
    def parse(cls, value: str | Direction) -> Direction:
        """Parse ``"t2v"``/``"v2t"`` (case-insensitive); raise a user error otherwise."""
        if isinstance(value, Direction):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise FirevalError(f"unknown direction {value!r}; expected 't2v' or 'v2t'") from None

    @property
    def transposed(self) -> bool:
        """True when the caption × video matrix must be transposed for this direction."""
        return self is Direction.V2T
