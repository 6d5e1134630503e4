"""Small text-file helpers shared by the readers: gzip-aware opening, empty-file checks, id lists."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fireval.core import InputError

PathLike = str | os.PathLike[str]

GZIP_MAGIC = b"\x1f\x8b"


def read_text(path: PathLike) -> str:
    """The whole file as text (UTF-8; gzip data is decompressed, whatever the file name). Raise on
    missing or empty files.

    Empty means no bytes at all or only whitespace: every reader reports it as
    ``"file is empty"``.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
        if raw[:2] == GZIP_MAGIC:
            raw = gzip.decompress(raw)
        elif p.suffix.lower() == ".gz" and raw:
            raise InputError("named .gz but not gzip data", source=str(p))
    except FileNotFoundError:
        raise InputError("file not found", source=str(p)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=str(p)) from None
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"cannot read: {exc}", source=str(p)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", source=str(p)) from None
    if not text.strip():
        raise InputError("file is empty", source=str(p))
    return text


def jsonl_records(text: str, src: str, keys: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of JSON-lines ``text``.

    A line that is not JSON, or not an object, raises an :class:`InputError` naming ``src`` and
    the line (``keys``, the fields the caller needs, are named in the message). Callers check the
    fields' values themselves.
    """
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not JSON ({exc.msg}, column {exc.colno}); expected one object per line",
                source=src,
                line=line,
            ) from None
        if not isinstance(rec, dict):
            raise InputError(f"expected a JSON object with {', '.join(keys)}", source=src, line=line)
        yield line, rec


def read_split_list(path: PathLike) -> list[str]:
    """Ids listed one per line (a split list such as ``test_list.txt``), in file order.

    Surrounding whitespace and blank lines are ignored; a missing trailing newline is fine.
    A repeated id raises :class:`InputError` naming the id and both line numbers.
    """
    text = read_text(path)
    seen: dict[str, int] = {}
    out: list[str] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        item = line.strip()
        if not item:
            continue
        if item in seen:
            raise InputError(
                f"duplicate id {item!r} (also on line {seen[item]})", source=str(path), line=lineno
            )
        seen[item] = lineno
        out.append(item)
    return out


def id_list(ids: PathLike | Sequence[str], what: str) -> tuple[list[str], str]:
    """``ids`` as a list plus a description of where it came from (for error messages).

    A path is read with :func:`read_split_list`; a sequence of strings is checked for repeats.
    """
    if isinstance(ids, str | os.PathLike):
        return read_split_list(ids), str(ids)
    out = [str(x) for x in ids]
    seen: set[str] = set()
    for i, x in enumerate(out):
        if x in seen:
            raise InputError(f"duplicate {what} id {x!r} at position {i}")
        seen.add(x)
    return out, f"{what} ids"
