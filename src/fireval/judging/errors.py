"""Errors of the annotation store, each carrying the HTTP status the web app answers with.

:class:`StoreError` and its subclasses are requests the store refuses (4xx);
:class:`StoreUnavailableError` is a storage failure (database unreachable, disk full: 503),
raised instead of a driver exception so no caller has to know SQLAlchemy's or a driver's
error types. All are :class:`~fireval.core.FirevalError`, so the CLI prints one line and
exits with code 2.
"""

from __future__ import annotations

from fireval.core import FirevalError

#: largest row id the store accepts in a request: ids are 32-bit ``INTEGER`` on PostgreSQL
MAX_ID = 2**31 - 1


class StoreError(FirevalError):
    """A request the store refuses; ``status`` is the HTTP status the web app answers with."""

    status = 400


class UnknownItemError(StoreError):
    status = 404


class UnknownAnnotatorError(StoreError):
    status = 404


class NotAssignedError(StoreError):
    status = 403


class InvalidLabelError(StoreError):
    status = 422


class LabelConflictError(StoreError):
    status = 409


class StoreUnavailableError(StoreError):
    """The database could not be reached or written (nothing was changed or acknowledged)."""

    status = 503


def valid_id(value: int) -> bool:
    """True when ``value`` can be a row id (1 .. :data:`MAX_ID`); others name no row."""
    return isinstance(value, int) and 0 < value <= MAX_ID
