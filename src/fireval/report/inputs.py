"""Reading the report's extra inputs: training captions for the train–test overlap.

Every file is read with :func:`fireval.formats.textio.read_text` (UTF-8, a BOM and gzip data
accepted whatever the name; a missing, empty, binary or non-UTF-8 file is one
:class:`~fireval.core.errors.InputError` naming it). The layout follows the name, without a
trailing ``.gz``: ``.json``, ``.jsonl``, ``.csv``, anything else one caption per line.
"""

from __future__ import annotations

import json
from pathlib import Path

from fireval.core.errors import InputError
from fireval.formats.csvrows import csv_rows
from fireval.formats.textio import jsonl_records, loads_bounded, read_split_list, read_text

#: layouts that name each caption's video, so that a split list can select captions
_SPLITTABLE = (".json", ".jsonl", ".csv")


def _layout(p: Path) -> str:
    """The layout suffix of ``p``: ``train.json.gz`` → ``.json``."""
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def _caption(value: object, src: str, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{where}: expected a caption string, found {type(value).__name__}", source=src)
    return value


def read_train_captions(path: str | Path, split: str | Path | None = None) -> list[str]:
    """Training captions from a file.

    * ``.txt`` (or any other name): one caption per line (blank lines skipped);
    * ``.csv``: the ``sentence``, ``caption`` or ``text`` column; every row must have as many
      fields as the header (the strict reader of :mod:`fireval.formats.datasets`);
    * ``.json``: MSR-VTT official ``{video: {sen_id: caption}}``, MSVD ``{video: [captions]}``, or a
      plain list of captions (strings);
    * ``.jsonl``: one ``{"video_id", "text"}`` object per line (the collections' JSONL layout).

    With ``split`` (a file of video ids, one per line) only those videos' captions are used; it
    needs a layout that names each caption's video (JSON dict, JSONL, or a CSV with a
    ``video_id`` column), and at least one of its videos must be in the file.
    """
    p = Path(path)
    src = str(p)
    ext = _layout(p)
    text = read_text(p)  # missing, directory, empty, binary, non-UTF-8: one line naming the file
    keep: set[str] | None = None
    if split is not None:
        keep = set(read_split_list(split))
    pairs: list[tuple[str | None, str]] = []  # (video or None, caption)
    if ext == ".json":
        try:
            data = loads_bounded(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg}", source=src, line=exc.lineno) from None
        if isinstance(data, list):
            pairs = [(None, _caption(x, src, f"item {i}")) for i, x in enumerate(data)]
        elif isinstance(data, dict):
            for vid, caps in data.items():
                if isinstance(caps, dict):
                    pairs.extend((vid, _caption(c, src, f"video {vid!r}, {k!r}")) for k, c in caps.items())
                elif isinstance(caps, list):
                    pairs.extend(
                        (vid, _caption(c, src, f"video {vid!r}, item {i}")) for i, c in enumerate(caps)
                    )
                else:
                    raise InputError(f"video {vid!r}: expected a list or dict of captions", source=src)
        else:
            raise InputError("expected a JSON list of captions or a dict video -> captions", source=src)
    elif ext == ".jsonl":
        for line, rec in jsonl_records(text, src, ("text",)):
            cap = rec.get("text")
            if not isinstance(cap, str):
                raise InputError("expected a string 'text' (the caption)", source=src, line=line)
            vid = rec.get("video_id")
            pairs.append((str(vid) if vid is not None else None, cap))
    elif ext == ".csv":
        # the collections' strict reader: a row with more (or fewer) fields than the header, e.g.
        # a sentence with an unquoted comma, is an error naming the file and line, not a cut caption
        header, rows = csv_rows(text, src)
        lower = [h.lower() for h in header]
        col = next((lower.index(c) for c in ("sentence", "caption", "text") if c in lower), None)
        if col is None:
            raise InputError(
                f"CSV needs a 'sentence' or 'caption' column; found {header}", source=src, line=1
            )
        vcol = lower.index("video_id") if "video_id" in lower else None
        pairs = [(row[vcol] if vcol is not None else None, row[col]) for _, row in rows]
    else:
        pairs = [(None, ln.strip()) for ln in text.splitlines() if ln.strip()]
    if keep is not None:
        if ext not in _SPLITTABLE or any(v is None for v, _ in pairs):
            raise InputError(
                f"--train-split selects videos, but this file does not name each caption's video "
                f"(give a JSON dict video -> captions, JSONL with video_id, or a CSV with a video_id "
                f"column; split list {split})",
                source=src,
            )
        pairs = [(v, c) for v, c in pairs if v in keep]
        if not pairs:
            raise InputError(
                f"none of the {len(keep)} videos of the split list {split} has a caption in this file",
                source=src,
            )
    out = [c for _, c in pairs if c.strip()]
    if not out:
        raise InputError("no training captions found", source=src)
    return out
