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

import json
from collections.abc import Sequence
from typing import Any

from fireval.core import Collection, InputError
from fireval.formats.textio import PathLike, id_list, loads_bounded, read_text

JSFUSION_COLUMNS = ("key", "vid_key", "video_id", "sentence")


def read_msrvtt_jsfusion(path: PathLike, *, name: str = "msrvtt-1ka") -> Collection:
    """Read the JSFusion 1k-A CSV: caption ids = ``key``, videos = ``video_id`` in row order.

    Sentences are kept verbatim. A video listed on several rows gets several captions (1k-A has
    one row per video). Duplicate keys, missing columns, empty cells and rows with more or fewer
    fields than the header (a sentence with an unquoted comma) raise :class:`InputError` naming
    the line.
    """
    from fireval.formats.csvrows import caption_csv_pairs, first_line, header_columns

    src = str(path)
    text = read_text(path)
    header = header_columns(first_line(text))
    missing = [c for c in ("key", "video_id", "sentence") if c not in header]
    if missing:
        raise InputError(
            f"header {header} lacks column(s) {missing}; expected {','.join(JSFUSION_COLUMNS)}",
            source=src,
            line=1,
        )
    return Collection.from_pairs(name, caption_csv_pairs(text, src), source=src)


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
    """Parse a dataset JSON file (see :func:`_parse_json`)."""
    return _parse_json(read_text(path), str(path))


def _parse_json(text: str, src: str) -> Any:
    """Parse a dataset JSON; a key repeated within one object (which ``json`` would silently
    collapse, losing captions) is an :class:`InputError` naming the key."""
    try:
        return loads_bounded(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise InputError(
            f"duplicate id {exc.args[0]!r} (a JSON key repeated in one object)", source=src
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON: {exc.msg} (column {exc.colno})", source=src, line=exc.lineno
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
    return official_collection(_load_json(path), str(path), video_list, name=name)


def official_collection(
    data: Any, src: str, video_list: PathLike | Sequence[str] | None = None, *, name: str = "msrvtt-test"
) -> Collection:
    """:func:`read_msrvtt_official` on already parsed JSON ``data`` read from ``src``."""
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
