"""MSR-VTT readers: the JSFusion 1k-A CSV and the official test JSON.

- 1k-A (``MSRVTT_JSFUSION_test.csv``, header ``key,vid_key,video_id,sentence``): one sentence
  per row; the sentences are the queries (ids = ``key``, e.g. ``ret0``) and the videos are the
  ``video_id`` values in CSV row order, so a 1000 × 1000 similarity matrix in row order has its
  ground truth on the diagonal. A ``;``-separated copy (seen in the wild) is accepted too.
- Official test (``test.json``, ``{video_id: {sen_id: caption}}``): 2,990 videos × 20 captions.
  Caption ids are the ``sen_id`` strings. Videos follow the optional split list (e.g.
  ``test_list_full.txt``) or else the order of the JSON object; a video's captions follow the
  order of its JSON object.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from fireval.core import Collection, InputError
from fireval.formats.textio import PathLike, id_list, read_text

JSFUSION_COLUMNS = ("key", "vid_key", "video_id", "sentence")


def read_msrvtt_jsfusion(path: PathLike, *, name: str = "msrvtt-1ka") -> Collection:
    """Read the JSFusion 1k-A CSV: caption ids = ``key``, videos = ``video_id`` in row order.

    Sentences are kept verbatim. A video listed on several rows gets several captions (1k-A has
    one row per video). Duplicate keys, missing columns and empty cells raise :class:`InputError`
    naming the line.
    """
    src = str(path)
    text = read_text(path)
    first = text.splitlines()[0]
    delim = ";" if first.count(";") > first.count(",") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    header = [h.strip() for h in next(reader)]
    missing = [c for c in ("key", "video_id", "sentence") if c not in header]
    if missing:
        raise InputError(
            f"header {header} lacks column(s) {missing}; expected {','.join(JSFUSION_COLUMNS)}",
            source=src,
            line=1,
        )
    ik, iv, isent = header.index("key"), header.index("video_id"), header.index("sentence")
    pairs: list[tuple[str, str, str]] = []
    seen: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) < len(header):
            raise InputError(f"expected {len(header)} fields, found {len(row)}", source=src, line=line)
        key, vid, sent = row[ik].strip(), row[iv].strip(), row[isent]
        if not key or not vid or not sent.strip():
            raise InputError("empty key, video_id or sentence", source=src, line=line)
        if key in seen:
            raise InputError(
                f"duplicate caption id {key!r} (also on line {seen[key]})", source=src, line=line
            )
        seen[key] = line
        pairs.append((key, vid, sent))
    if not pairs:
        raise InputError("no rows after the header", source=src)
    return Collection.from_pairs(name, pairs, source=src)


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return out


def _load_json(path: PathLike) -> Any:
    """Parse a dataset JSON; a key repeated within one object (which ``json`` would silently
    collapse, losing captions) is an :class:`InputError` naming the key."""
    text = read_text(path)
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise InputError(
            f"duplicate id {exc.args[0]!r} (a JSON key repeated in one object)", source=str(path)
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON: {exc.msg} (column {exc.colno})", source=str(path), line=exc.lineno
        ) from None


def read_msrvtt_official(
    path: PathLike,
    video_list: PathLike | Sequence[str] | None = None,
    *,
    name: str = "msrvtt-test",
) -> Collection:
    """Read ``{video_id: {sen_id: caption}}`` (the official MSR-VTT test JSON).

    ``video_list`` (a split-list file or a sequence of ids) selects and orders the videos; a
    listed video missing from the JSON is an :class:`InputError`. Caption ids are the sen_id
    strings and must be unique across videos.
    """
    src = str(path)
    data = _load_json(path)
    if not isinstance(data, dict) or not data:
        raise InputError("expected a non-empty JSON object {video_id: {sen_id: caption}}", source=src)
    if video_list is None:
        videos = list(data)
    else:
        videos, list_src = id_list(video_list, "video")
        for i, v in enumerate(videos):
            if v not in data:
                raise InputError(f"video {v!r} (entry {i + 1} of {list_src}) is not in {src}", source=src)
    pairs: list[tuple[str, str, str]] = []
    seen: dict[str, str] = {}
    for v in videos:
        caps = data[v]
        if not isinstance(caps, dict):
            raise InputError(
                f"video {v!r}: expected an object {{sen_id: caption}}, found {type(caps).__name__}",
                source=src,
            )
        for sid, cap in caps.items():
            if not isinstance(cap, str):
                raise InputError(f"video {v!r}, sen_id {sid!r}: caption is not a string", source=src)
            if sid in seen:
                raise InputError(f"duplicate caption id {sid!r} (videos {seen[sid]!r} and {v!r})", source=src)
            seen[sid] = v
            pairs.append((str(sid), v, cap))
    return Collection.from_pairs(name, pairs, video_ids=videos, source=src)
