"""CSV rows of the dataset files, shared by the collection readers below :mod:`.datasets`.

:func:`csv_rows` reads a header and ``(line, fields)`` rows with the delimiter the header line
shows most (``,``, ``;`` or a tab; a tie goes to the comma); every row must have exactly as many
fields as the header (an extra field is typically a sentence with an unquoted comma), and a
quote left open to the end of the file is refused on the line that opened it (a quoted field
spanning lines is legal). :func:`caption_csv_pairs` turns a caption CSV (``video_id``,
``sentence``, optional ``caption_id``/``key``) into ``(caption id, video id, text)`` triples.

This module sits below :mod:`.datasets` (layout detection, :func:`read_collection`) and
:mod:`.msrvtt` (the JSFusion reader), which both use it; neither imports the other for it.
"""

from __future__ import annotations

import csv
import io

from fireval.core import InputError


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def delimiter_of(header: str) -> str:
    counts = {d: header.count(d) for d in (",", ";", "\t")}
    return max(counts, key=lambda d: (counts[d], d == ","))


def header_columns(header: str) -> list[str]:
    return [h.strip().strip('"').strip() for h in next(csv.reader([header], delimiter=delimiter_of(header)))]


def csv_rows(
    text: str, src: str, delimiter: str | None = None
) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and ``(line, fields)`` rows of a CSV; a row with more or fewer fields is an error."""
    first = first_line(text)
    delim = delimiter or delimiter_of(first)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    end = 0  # last line of the previous record: a record starts on the line after it
    for row in reader:
        start, end = end + 1, reader.line_num
        if any("\n" in c or "\r" in c for c in row) and _swallowed(text, start, end, delim, header):
            # a quote left open swallows the following lines into one field (up to the next
            # quote or the end of the file), which the field count alone may not catch; a quoted
            # field spanning lines is legal (paragraph captions), so only a quote still open at
            # the end of the file is refused
            raise InputError(
                "a quote opened on this line is not closed"
                + (f" on it (the field runs to line {end})" if end > start else "")
                + '; close the quote, or double a quote inside a quoted field ("")',
                source=src,
                line=start,
            )
        if not row or all(not c.strip() for c in row):
            continue
        if header is None:
            header = [h.strip() for h in row]
            continue
        line = reader.line_num
        if len(row) != len(header):
            hint = (
                " (a field holding the delimiter must be quoted, e.g. a sentence with a comma)"
                if len(row) > len(header)
                else ""
            )
            raise InputError(
                f"expected {len(header)} fields as in the header, found {len(row)}{hint}",
                source=src,
                line=line,
            )
        rows.append((line, row))
    if header is None or not rows:
        raise InputError("no rows after the header", source=src)
    return header, rows


def _swallowed(text: str, start: int, end: int, delim: str, header: list[str] | None) -> bool:
    """Whether the record on lines ``start..end`` holds a quote that is never closed (it ran to
    the end of the file). A quote closed by a later row's quote is caught by the field count."""
    lines = text.splitlines(keepends=True)[start - 1 : end]
    try:
        list(csv.reader(io.StringIO("".join(lines), newline=""), delimiter=delim, strict=True))
    except csv.Error:
        return True
    return False


def column_index(header: list[str], *names: str) -> int | None:
    lower = [h.lower() for h in header]
    for n in names:
        if n in lower:
            return lower.index(n)
    return None


def unique_caption(cid: str, seen: dict[str, int], src: str, line: int) -> None:
    if cid in seen:
        raise InputError(f"duplicate caption id {cid!r} (also on line {seen[cid]})", source=src, line=line)
    seen[cid] = line


def caption_csv_pairs(text: str, src: str) -> list[tuple[str, str, str]]:
    header, rows = csv_rows(text, src)
    iv = column_index(header, "video_id")
    isent = column_index(header, "sentence")
    ik = column_index(header, "caption_id", "key")
    assert iv is not None and isent is not None
    pairs: list[tuple[str, str, str]] = []
    seen: dict[str, int] = {}
    per_video: dict[str, int] = {}
    for line, row in rows:
        vid, sent = row[iv].strip(), row[isent]
        if not vid or not sent.strip():
            raise InputError("empty video_id or sentence", source=src, line=line)
        if ik is not None:
            cid = row[ik].strip()
            if not cid:
                raise InputError(f"empty {header[ik]}", source=src, line=line)
        else:
            i = per_video.get(vid, 0)
            per_video[vid] = i + 1
            cid = f"{vid}#{i}"
        unique_caption(cid, seen, src, line)
        pairs.append((cid, vid, sent))
    return pairs
