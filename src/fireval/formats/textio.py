"""Small text-file helpers shared by the readers: gzip-aware opening, empty-file checks, id lists,
and telling label files apart by content (:func:`label_format`).

Label files are recognised by their bytes, never by their name alone (a FIRE JSON saved as
``labels.txt`` is FIRE JSON): a zip archive (``PK\\x03\\x04``) is a graded-label ``.npz``; gzip data
(``\\x1f\\x8b``) is looked into; content whose first non-blank character (after a UTF-8 BOM) is
``{`` or ``[`` is FIRE JSON; other text is TREC qrels. The name only breaks a tie, when the
content shows nothing (an empty file, gzip data that does not inflate): then ``.npz`` means
graded labels, ``.json`` FIRE JSON, anything else qrels, and that reader reports the problem.
Content that is none of the three (a ``.npy`` array, an SQLite database, a pickle, other binary
data, a gzipped zip) is a one-line :class:`InputError` naming the file and what was expected.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fireval.core import InputError

PathLike = str | os.PathLike[str]

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
_BOM = b"\xef\xbb\xbf"


def read_text(path: PathLike) -> str:
    """The whole file as text (UTF-8; gzip data is decompressed, whatever the file name). Raise on
    missing or empty files.

    Empty means no bytes at all or only whitespace: every reader reports it as
    ``"file is empty"``.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", source=str(p)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", source=str(p)) from None
    return decode_text(raw, p)


def decode_text(raw: bytes, path: PathLike) -> str:
    """:func:`read_text` of bytes already read from ``path`` (the same checks and messages), for
    callers that need the bytes too (:mod:`.collection_cache` hashes what it parses)."""
    p = Path(path)
    try:
        if raw[:2] == GZIP_MAGIC:
            raw = gzip.decompress(raw)
        elif p.suffix.lower() == ".gz" and raw:
            raise InputError("named .gz but not gzip data", source=str(p))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"cannot read: {exc}", source=str(p)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", source=str(p)) from None
    if not text.strip():
        raise InputError("file is empty", source=str(p))
    return text


def loads_bounded(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)`` for untrusted input: the one JSON reader of every input file
    (collections, FIRE JSON, pools, gold and caption files).

    The nesting depth is bounded by the decoder's recursion budget (Python's recursion limit,
    about 1,000 levels, far beyond any real input): a deeper document (``'[' * 100000``) raises
    :class:`json.JSONDecodeError` with ``msg`` "nested too deeply ...", which every reader already
    turns into a one-line error naming the file and line, instead of a ``RecursionError``.
    """
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        head = text[:200] if isinstance(text, str) else text[:200].decode("utf-8", "replace")
        raise json.JSONDecodeError(
            f"nested too deeply (more than about {sys.getrecursionlimit()} levels of arrays or objects)",
            head,
            0,
        ) from None


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
            rec = loads_bounded(raw)
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
    return split_list_text(read_text(path), path)


def split_list_text(text: str, path: PathLike) -> list[str]:
    """:func:`read_split_list` of the text of ``path`` (already read)."""
    return split_list_lines(text, path)[0]


def split_list_lines(text: str, path: PathLike) -> tuple[list[str], list[int]]:
    """:func:`split_list_text` plus the 1-based line of each id (for messages naming it)."""
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
    return out, [seen[x] for x in out]


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


#: what each label-file format is called in messages (:func:`label_format`'s values)
LABEL_FORMATS = {"fire": "FIRE JSON", "qrels": "TREC qrels text", "npz": "a graded-label .npz"}
_EXPECTED = "expected FIRE JSON, TREC qrels text (qid 0 docid rel) or a graded-label .npz"
#: the reader a file name suggests, used only when the content cannot tell
_BY_NAME = {".npz": "npz", ".json": "fire"}
#: other binary formats recognised only to name them in the error
_NOT_LABELS = (
    (b"\x93NUMPY", "a NumPy .npy array (a score matrix?)"),
    (b"SQLite format 3\x00", "an SQLite database (an annotation store? give it as sqlite:///PATH)"),
    (b"\x80", "a pickle (fireval never unpickles)"),
)
_SNIFF_BYTES = 1 << 16
_SNIFF_LIMIT = 1 << 20  # leading blanks skipped at most before the content is taken as not JSON


def content_head(path: PathLike, n: int = 8) -> tuple[bytes, bytes, bool]:
    """``(raw, head, gzipped)``: the file's first ``n`` bytes as stored; its first ``n`` non-blank
    bytes of content (gunzipped if gzip data, whatever the name; a UTF-8 BOM and up to 1 MiB of
    blanks skipped; empty if there are none or the gzip stream inflates to nothing); and whether
    it is gzip data. A missing file or a directory is an :class:`InputError`.
    """
    p = Path(path)
    try:
        with p.open("rb") as fh:
            buf = fh.read(_SNIFF_BYTES)
            raw, gz = buf[:n], buf[:2] == GZIP_MAGIC
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if gz else None
            seen, out = 0, b""
            while buf and seen < _SNIFF_LIMIT:
                if inflater is not None:
                    try:
                        data = inflater.decompress(buf, _SNIFF_BYTES)
                    except zlib.error:
                        break  # the reader chosen reports the damage
                    buf = inflater.unconsumed_tail or (b"" if inflater.eof else fh.read(_SNIFF_BYTES))
                else:
                    data, buf = buf, fh.read(_SNIFF_BYTES)
                seen += len(data)
                out = (out + data).lstrip()
                if out.startswith(_BOM):
                    out = out[len(_BOM) :].lstrip()
                if len(out) >= max(n, len(_BOM)):
                    break
    except FileNotFoundError:
        raise InputError("label file not found", source=str(p)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a label file", source=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(p)) from None
    return raw, out[:n], gz


def label_format(path: PathLike) -> str:
    """``"npz"``, ``"fire"`` or ``"qrels"``: the label format of ``path``'s content (module
    docstring); the name decides only when the content cannot. Content of another kind raises
    an :class:`InputError` naming the file, what it looks like and what was expected.
    """
    raw, head, gz = content_head(path, 16)
    src = str(path)
    if raw.startswith(ZIP_MAGIC):
        return "npz"
    if gz and head.startswith(ZIP_MAGIC):
        raise InputError(
            f"gzip-compressed zip archive; {_EXPECTED}, which is read as numpy wrote it (gunzip it)",
            source=src,
        )
    for magic, what in _NOT_LABELS:
        if (head if gz else raw).startswith(magic):
            raise InputError(f"this is {what}, not a label file; {_EXPECTED}", source=src)
    if head.startswith((b"{", b"[")):
        return "fire"
    if head:
        if b"\x00" in head:
            raise InputError(f"binary data, not a label file; {_EXPECTED}", source=src)
        return "qrels"
    name = Path(path).name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    return _BY_NAME.get(Path(name).suffix, "qrels")
