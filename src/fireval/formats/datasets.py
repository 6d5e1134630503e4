"""Collections from the files people have: layouts of the standard TVR benchmarks, detected by content.

:func:`read_collection` is the one entry point (``fireval.api.load_collection`` and every ``-c``
use it). It reads the file (gzip-compressed or not, whatever its name), decides its layout from
the content (:func:`detect_layout`), and returns a :class:`~fireval.core.Collection`. When no
layout fits, the error names the file, what its start looks like, and every known layout.

Layouts (see ``docs/formats.md`` for the exact rules):

=====================  =========================================================================
``jsfusion``           CSV ``key,vid_key,video_id,sentence`` (MSR-VTT 1k-A): caption id = ``key``
``caption-csv``        CSV with ``video_id`` and ``sentence`` columns (DiDeMo, ActivityNet
                       paragraphs, VATEX ``video,video_id,sentence,subtitle``, any new benchmark):
                       caption id = ``caption_id``/``key`` column if present, else
                       ``f"{video_id}#{i}"`` (``i`` = 0-based rank of the row among its video's rows)
``msvd-raw``           the MSVD ``video_corpus.csv`` rows (see :mod:`.msvd`)
``epic-kitchens``      EPIC-Kitchens-100 retrieval clips CSV (``narration_id``, ..., ``narration``):
                       one clip and one caption per row, both with id ``narration_id``
``lsmdc``              LSMDC tab-separated file, no header: ``clip_id, start, end, start, end,
                       sentence``: one clip and one caption per line, both with id ``clip_id``
``jsonl``              JSON lines ``{"caption_id": str, "video_id": str, "text": str}``
``youcook2``           YouCook2 annotations JSON ``{"database": {video: {"subset", "annotations":
                       [{"segment": [start, end], "sentence"}]}}}``: one clip per segment, clip id
                       ``f"{video}_{i}"`` (``i`` = 0-based position of the segment), caption id
                       = clip id; the ``validation`` subset by default
``msrvtt-official``    ``{video_id: {sen_id: caption}}`` (MSR-VTT official test JSON)
``msrvtt-datainfo``    MSR-VTT ``*_videodatainfo.json`` (``{"videos": [...], "sentences":
                       [{"sen_id", "video_id", "caption"}]}``)
``msvd``               ``{video: [captions]}`` (needs a split list)
=====================  =========================================================================

Text is kept verbatim; videos are in order of first appearance unless a split list orders them.
Every CSV row must have exactly as many fields as the header: an extra field (typically a
sentence with an unquoted comma, which would otherwise be cut short) is an error naming the line
(the CSV rows are read by :mod:`.csvrows`, which the MSR-VTT reader shares).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fireval.core import Collection, InputError
from fireval.formats.csvrows import (
    caption_csv_pairs,
    column_index,
    csv_rows,
    first_line,
    header_columns,
    unique_caption,
)
from fireval.formats.textio import (
    PathLike,
    decode_text,
    id_list,
    jsonl_records,
    loads_bounded,
    read_text,
    split_list_lines,
)

#: every layout read_collection knows, with a one-line description (used in error messages)
LAYOUTS: dict[str, str] = {
    "jsfusion": "MSR-VTT JSFusion CSV (key,vid_key,video_id,sentence)",
    "caption-csv": "caption CSV with video_id and sentence columns (DiDeMo, ActivityNet, VATEX "
    "video,video_id,sentence,subtitle)",
    "msvd-raw": "MSVD raw corpus CSV (,VideoID,Start,End,...,Description)",
    "epic-kitchens": "EPIC-Kitchens-100 retrieval clips CSV (narration_id,...,narration)",
    "lsmdc": "LSMDC tab-separated file (clip id, start, end, start, end, sentence; no header)",
    "jsonl": 'JSON lines {"caption_id", "video_id", "text"}',
    "youcook2": 'YouCook2 annotations JSON ({"database": {video: {"annotations": [{"segment", "sentence"}]}}})',
    "msrvtt-official": "MSR-VTT official test JSON ({video_id: {sen_id: caption}})",
    "msrvtt-datainfo": 'MSR-VTT videodatainfo JSON ({"sentences": [{"sen_id", "video_id", "caption"}]})',
    "msvd": "MSVD captions JSON ({video: [captions]}, with --split test_list.txt)",
}

YOUCOOK2_SUBSETS = ("training", "validation", "testing")
JSONL_KEYS = ("caption_id", "video_id", "text")
_TIME = re.compile(r"^\d+(?:[.:]\d+)*$")


def known_layouts() -> str:
    """One line listing the known layouts (for error messages)."""
    return "; ".join(LAYOUTS.values())


EPIC_SENTENCE_FILE = (
    "this looks like EPIC-Kitchens-100's sentence file (index,sentence or narration_id,narration; "
    "unique sentences, no clips): give the clips file (EPIC_100_retrieval_test.csv), one query per "
    "clip narration"
)


def _unknown(src: str, why: str) -> InputError:
    return InputError(f"unknown collection layout ({why}); known layouts: {known_layouts()}", source=src)


def _stem(path: PathLike) -> str:
    name = Path(path).name
    for suffix in (".gz", ".csv", ".tsv", ".txt", ".jsonl", ".json"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name or "collection"


# --------------------------------------------------------------------------------------- detection


def detect_layout(text: str, src: str = "collection") -> str:
    """The layout name (a key of :data:`LAYOUTS`) of a collection file's decoded text."""
    head = text.lstrip()
    if head.startswith("{") or head.startswith("["):
        first, _, rest = head.partition("\n")
        if rest.strip():  # several lines: JSON lines when the first one is a whole object
            try:
                obj = loads_bounded(first)
            except json.JSONDecodeError:
                obj = None  # e.g. "{" of an indented JSON document
            if isinstance(obj, dict) and set(JSONL_KEYS) <= set(obj):
                return "jsonl"
            if isinstance(obj, dict) and obj:
                raise _unknown(src, f"JSON lines with keys {sorted(obj)[:6]}, not {', '.join(JSONL_KEYS)}")
        return "json"  # refined by _json_layout once parsed
    first = first_line(text)
    cols = header_columns(first)
    lower = [c.lower() for c in cols]
    if "narration_id" in lower and "narration" in lower:
        return "epic-kitchens"
    if "videoid" in lower and "description" in lower:
        return "msvd-raw"
    if "video_id" in lower and "sentence" in lower:
        # JSFusion's header is key,vid_key,video_id,sentence; a CSV with only a `key` column is a
        # caption CSV (caption id = key), not MSR-VTT
        return "jsfusion" if "key" in lower and "vid_key" in lower else "caption-csv"
    if sorted(lower) == ["index", "sentence"]:  # EPIC_100_retrieval_test_sentence.csv
        raise InputError(EPIC_SENTENCE_FILE, source=src)
    fields = first.split("\t")
    if len(fields) == 6 and all(_TIME.match(f.strip()) for f in fields[1:5]):
        return "lsmdc"
    shown = first if len(first) <= 80 else first[:77] + "..."
    raise _unknown(src, f"first line {shown!r}")


def _json_layout(data: Any, src: str) -> str:
    if isinstance(data, dict) and set(JSONL_KEYS) <= set(data):
        return "jsonl"  # JSON lines with a single line
    if isinstance(data, dict) and isinstance(data.get("database"), dict):
        return "youcook2"
    if isinstance(data, dict) and isinstance(data.get("sentences"), list):
        return "msrvtt-datainfo"
    if isinstance(data, dict) and data:
        first = next(iter(data.values()))
        if isinstance(first, dict):
            return "msrvtt-official"
        if isinstance(first, list):
            return "msvd"
        raise _unknown(src, f"a JSON object whose values are {type(first).__name__}")
    raise _unknown(src, f"JSON {type(data).__name__}")


# ------------------------------------------------------------------------------------------ readers


def read_collection(
    path: PathLike,
    split: PathLike | Sequence[str] | None = None,
    *,
    name: str | None = None,
    layout: str | None = None,
) -> Collection:
    """Read a collection file of any known layout (module docstring), detected by content.

    ``split``: a split list (file with one video id per line, or a sequence of ids) that selects
    and orders the videos; MSVD's captions JSON needs it. For YouCook2 it may also be a subset
    name (``training``, ``validation``, ``testing``). ``layout`` forces a layout (a key of
    :data:`LAYOUTS`).
    """
    return _read_collection(path, read_text(path), split, None, name, layout)


def read_collection_bytes(
    raw: bytes,
    path: PathLike,
    split: PathLike | Sequence[str] | None = None,
    *,
    split_raw: bytes | None = None,
    name: str | None = None,
    layout: str | None = None,
) -> Collection:
    """:func:`read_collection` of ``raw``, the bytes already read from ``path`` (and of
    ``split_raw``, those of the split file ``split``): the same result and errors, without
    reading either file again (:mod:`.collection_cache` parses the bytes it hashed)."""
    return _read_collection(path, decode_text(raw, path), split, split_raw, name, layout)


def _read_collection(
    path: PathLike,
    text: str,
    split: PathLike | Sequence[str] | None,
    split_raw: bytes | None,
    name: str | None,
    layout: str | None,
) -> Collection:
    from fireval.formats.msrvtt import _parse_json, official_collection
    from fireval.formats.msvd import msvd_collection, msvd_raw_collection

    src = str(path)
    found = layout or detect_layout(text, src)
    if layout is not None and layout not in LAYOUTS:
        raise InputError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    data = None
    if found == "json" or found in ("youcook2", "msrvtt-datainfo", "msrvtt-official", "msvd"):
        data = _parse_json(text, src)
        if found == "json":
            found = _json_layout(data, src)
    if found == "youcook2":
        return _youcook2(data, src, split, name, split_raw)
    split_ids = None
    split_where: tuple[str, list[int]] | None = None
    if split is not None:
        if _subset_name(split) is not None:
            raise InputError(f"--split {split!r} (a subset name) applies to YouCook2 only", source=src)
        split_ids, split_where = _split_ids(split, split_raw)
    if found == "msrvtt-official":
        return official_collection(data, src, split_ids, name=name or "msrvtt-test")
    if found == "msvd":
        if split_ids is None:
            raise InputError("an MSVD captions file needs --split (e.g. test_list.txt)", source=src)
        return msvd_collection(data, src, split_ids, name=name or "msvd-test")
    if found == "msvd-raw":
        return msvd_raw_collection(text, src, split_ids, name=name or "msvd-raw")
    if found == "msrvtt-datainfo":
        pairs = _datainfo_pairs(data, src)
        default = "msrvtt"
    elif found in ("jsfusion", "caption-csv"):
        pairs = caption_csv_pairs(text, src)
        default = _stem(path)
        if found == "jsfusion":  # only the 1k-A test split (1000 sentences, 1000 videos) is msrvtt-1ka
            is_1ka = len(pairs) == 1000 and len({p[1] for p in pairs}) == 1000
            default = "msrvtt-1ka" if is_1ka else "msrvtt-jsfusion"
    elif found == "epic-kitchens":
        pairs = _epic_pairs(text, src)
        default = "epic-kitchens-100"
    elif found == "lsmdc":
        pairs = _lsmdc_pairs(text, src)
        default = "lsmdc"
    elif found == "jsonl":
        pairs = _jsonl_pairs(text, src)
        default = _stem(path)
    else:  # pragma: no cover - every detected layout is handled above
        raise _unknown(src, f"layout {found!r}")
    return _build(name or default, pairs, split_ids, src, split_where)


def _build(
    name: str,
    pairs: list[tuple[str, str, str]],
    split_ids: list[str] | None,
    src: str,
    split_where: tuple[str, list[int]] | None = None,
) -> Collection:
    """The collection of ``pairs``, restricted to ``split_ids`` when given. ``split_where`` is the
    split file and the line of each id, so that an unknown id is reported at its own line."""
    if not pairs:
        raise InputError("no captions found", source=src)
    if split_ids is not None:
        have = {v for _, v, _ in pairs}
        for i, v in enumerate(split_ids):
            if v not in have:
                if split_where is not None:
                    raise InputError(
                        f"video {v!r} (entry {i + 1} of the split list) has no caption in {src}",
                        source=split_where[0],
                        line=split_where[1][i],
                    )
                raise InputError(
                    f"video {v!r} (entry {i + 1} of the split list) has no caption here", source=src
                )
        keep = set(split_ids)
        pairs = [p for p in pairs if p[1] in keep]
    return Collection.from_pairs(name, pairs, video_ids=split_ids, source=src)


def _epic_pairs(text: str, src: str) -> list[tuple[str, str, str]]:
    header, rows = csv_rows(text, src)
    inid = column_index(header, "narration_id")
    inar = column_index(header, "narration")
    assert inid is not None and inar is not None
    if column_index(header, "video_id", "start_timestamp", "start_frame") is None:
        raise InputError(EPIC_SENTENCE_FILE, source=src)
    pairs: list[tuple[str, str, str]] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        cid, sent = row[inid].strip(), row[inar]
        if not cid or not sent.strip():
            raise InputError("empty narration_id or narration", source=src, line=line)
        unique_caption(cid, seen, src, line)
        pairs.append((cid, cid, sent))
    return pairs


def _lsmdc_pairs(text: str, src: str) -> list[tuple[str, str, str]]:
    pairs: list[tuple[str, str, str]] = []
    seen: dict[str, int] = {}
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        fields = raw.split("\t")
        if len(fields) != 6:
            raise InputError(
                f"expected 6 tab-separated fields (clip id, start, end, start, end, sentence), found {len(fields)}",
                source=src,
                line=line,
            )
        cid, sent = fields[0].strip(), fields[5].strip()
        if not cid or not sent:
            raise InputError("empty clip id or sentence", source=src, line=line)
        unique_caption(cid, seen, src, line)
        pairs.append((cid, cid, sent))
    return pairs


def _jsonl_pairs(text: str, src: str) -> list[tuple[str, str, str]]:
    pairs: list[tuple[str, str, str]] = []
    seen: dict[str, int] = {}
    for line, rec in jsonl_records(text, src, JSONL_KEYS):
        for key in JSONL_KEYS:
            v = rec.get(key)
            if not isinstance(v, str) or not v.strip():
                raise InputError(f"{key!r} must be a non-empty string", source=src, line=line)
        cid, vid, txt = (rec[key] for key in JSONL_KEYS)
        unique_caption(cid, seen, src, line)
        pairs.append((cid, vid, txt))
    return pairs


def _datainfo_pairs(data: Any, src: str) -> list[tuple[str, str, str]]:
    pairs: list[tuple[str, str, str]] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(data["sentences"]):
        if not isinstance(rec, dict) or not all(k in rec for k in ("video_id", "caption")):
            raise InputError(f"sentences[{i}]: expected video_id, caption and sen_id", source=src)
        cid = str(rec.get("sen_id", i))
        if cid in seen:
            raise InputError(
                f"sentences[{i}]: duplicate sen_id {cid!r} (also sentences[{seen[cid]}])", source=src
            )
        seen[cid] = i
        pairs.append((cid, str(rec["video_id"]), str(rec["caption"])))
    return pairs


def _subset_name(split: PathLike | Sequence[str]) -> str | None:
    """``split`` as a YouCook2 subset name (``validation``...) when it is one and no such file exists."""
    if isinstance(split, str | os.PathLike):
        s = os.fspath(split)
        if s in YOUCOOK2_SUBSETS and not Path(s).exists():
            return s
    return None


def _split_ids(
    split: PathLike | Sequence[str], split_raw: bytes | None
) -> tuple[list[str], tuple[str, list[int]] | None]:
    """The split's video ids (:func:`id_list`); from ``split_raw`` when the split file's bytes
    were already read. With them, for a split file, its path and the line of each id."""
    if isinstance(split, str | os.PathLike):
        text = decode_text(split_raw, split) if split_raw is not None else read_text(split)
        ids, lines = split_list_lines(text, split)
        return ids, (os.fspath(split), lines)
    return id_list(split, "video")[0], None


def _youcook2(
    data: Any,
    src: str,
    split: PathLike | Sequence[str] | None,
    name: str | None,
    split_raw: bytes | None = None,
) -> Collection:
    db = data["database"]
    subset: str | None = "validation"
    wanted: list[str] | None = None
    if split is not None:
        named = _subset_name(split)
        if named is not None:
            subset = named
        else:
            wanted, where = _split_ids(split, split_raw)
            subset = None
    if wanted is not None:
        missing = [i for i, v in enumerate(wanted) if v not in db]
        if missing:
            i = missing[0]
            if where is not None:
                raise InputError(
                    f"video {wanted[i]!r} of the split list is not in the database {src}",
                    source=where[0],
                    line=where[1][i],
                )
            raise InputError(f"video {wanted[i]!r} of the split list is not in the database", source=src)
        videos = wanted
    else:
        subsets = {str(rec.get("subset")) for rec in db.values() if isinstance(rec, dict)}
        if subset not in subsets:
            raise InputError(
                f"no video of subset {subset!r} (subsets here: {sorted(subsets)}); pass --split SUBSET "
                "or a split list",
                source=src,
            )
        videos = [v for v, rec in db.items() if isinstance(rec, dict) and rec.get("subset") == subset]
    pairs: list[tuple[str, str, str]] = []
    for v in videos:
        rec = db[v]
        anns = rec.get("annotations") if isinstance(rec, dict) else None
        if not isinstance(anns, list):
            raise InputError(f"database[{v!r}]: expected an 'annotations' list", source=src)
        for i, a in enumerate(anns):
            sent = a.get("sentence") if isinstance(a, dict) else None
            seg = a.get("segment") if isinstance(a, dict) else None
            if not isinstance(sent, str) or not sent.strip():
                raise InputError(f"database[{v!r}].annotations[{i}]: missing 'sentence'", source=src)
            if not (isinstance(seg, list) and len(seg) == 2):
                raise InputError(
                    f"database[{v!r}].annotations[{i}]: 'segment' must be [start, end]", source=src
                )
            clip = f"{v}_{i}"
            pairs.append((clip, clip, sent))
    default = "youcook2" if subset is None else f"youcook2-{subset}"
    return Collection.from_pairs(name or default, pairs, source=src)
