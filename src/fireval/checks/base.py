"""Shared types of the input checks: a check as a value, a status, and one result.

A :class:`Check` is a value (name, one-line description, rationale with its citation) so that
``fireval check --list`` and the docs can list every check. A :class:`CheckResult` is what one
check says about one run (or one pair of runs): a :class:`Status`, a one-line message meant for a
person, and the figures behind it (plain floats/ints/strings, JSON-ready).

Statuses: ``pass`` (the input looks right), ``fail`` (the input is wrong in a way that makes some
numbers meaningless), ``inconclusive`` (the data cannot tell, e.g. too few queries), and ``warn`` (the input is
usable but some values need a mark, e.g. a truncated run). Only ``fail`` makes ``fireval check``
exit 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    WARN = "warn"


@dataclass(frozen=True)
class Check:
    """One input check: its name, what it tells, and why (with the source of the idea)."""

    name: str
    description: str
    rationale: str


@dataclass
class CheckResult:
    """What ``check`` says about one run or one pair of runs."""

    check: str
    status: Status
    message: str
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status is Status.FAIL

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status.value, "message": self.message, **self.figures}
