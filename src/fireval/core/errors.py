"""User-facing errors.

Every problem caused by the user's input (a file, an id, a shape) is raised as a
:class:`FirevalError`. The CLI prints its message and exits with code 2, without a
traceback. Programming errors stay ordinary exceptions.
"""

from __future__ import annotations


class FirevalError(Exception):
    """An error in the user's input or request; its message is shown as is."""

    exit_code = 2


class InputError(FirevalError):
    """Malformed or inconsistent input, located by file and (optionally) line or id."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        self.source = source
        self.line = line
        where = ""
        if source is not None:
            where = f"{source}"
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(f"{where}{message}")


class InternalError(RuntimeError):
    """A bug in fireval (an invariant broken, e.g. a NaN about to be dropped from a mean).

    Never caused by the user's input alone; the CLI reports it on one line, exit code 3.
    """

    exit_code = 3


class ConflictError(InputError):
    """Two labels for the same (query, document) pair disagree within one source."""
