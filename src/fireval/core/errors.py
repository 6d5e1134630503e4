"""User-facing errors.

Every problem caused by the user's input (a file, an id, a shape) is raised as a
:class:`FirevalError`. The CLI prints its message and exits with code 2, without a
traceback. Programming errors stay ordinary exceptions.
"""

from __future__ import annotations

import re

# ``scheme://user:PASSWORD@host``: the password runs to the last ``@`` before the host
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*):(?P<secret>[^\s/]*)@")
# ``password=...`` in a query string or a libpq connection string
_KEY_PASSWORD = re.compile(
    r"(?P<head>\b(?:password|passwd|pwd)\s*=\s*)(?P<secret>[^\s&;,'\"]+)", re.IGNORECASE
)


def mask_secrets(text: str) -> str:
    """``text`` with every password in a URL (``postgresql://u:***@h/db``) or a ``password=``
    setting replaced by ``***``: the one masking function for every message that may show a store
    URL (fireval's errors mask themselves; the CLI and the web app pass the driver's text through it).
    """
    if "@" not in text and "=" not in text:
        return text
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}:***@", text)
    return _KEY_PASSWORD.sub(lambda m: f"{m['head']}***", text)


class FirevalError(Exception):
    """An error in the user's input or request; its message is shown as is, with any password
    in it masked (:func:`mask_secrets`)."""

    exit_code = 2

    def __str__(self) -> str:
        return mask_secrets(super().__str__())


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
