"""MSVD readers: the CLIP4Clip-style captions JSON with a split list, and the raw corpus CSV.

- ``captions_msvd.json`` is ``{video: [caption, ...]}`` (1970 videos, lowercased, punctuation
  removed); with ``test_list.txt`` the test collection has 670 videos and 27,763 captions.
  Caption ids are ``f"{video}#{i}"`` (``i`` = 0-based position in the video's list), so caption
  ``j`` of video ``v`` is row ``j`` of ``v`` in the 3-D score layout (see :mod:`.scores`).
- ``raw_corpus/test.csv`` are the original ``video_corpus.csv`` rows (header
  ``,VideoID,Start,End,WorkerID,Source,AnnotationTime,Language,Description``; the first column
  is an unnamed row number). Quirks: captions are raw (cased, punctuated, one holds an embedded
  newline inside quotes), and five test videos have one more row here than in the JSON.
  Only ``Language == "English"`` rows are kept. Video id = ``f"{VideoID}_{Start}_{End}"``;
  caption id = ``f"raw{n}"`` with ``n`` the unnamed row number (unique in the file).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fireval.core import Collection, InputError
from fireval.formats.msrvtt import _load_json
from fireval.formats.textio import PathLike, id_list, read_text


def read_msvd(
    captions_json: PathLike, test_list: PathLike | Sequence[str], *, name: str = "msvd-test"
) -> Collection:
    """MSVD captions ``{video: [captions]}`` restricted to (and ordered by) ``test_list``."""
    return msvd_collection(_load_json(captions_json), str(captions_json), test_list, name=name)


def msvd_collection(
    data: Any, src: str, test_list: PathLike | Sequence[str], *, name: str = "msvd-test"
) -> Collection:
    """:func:`read_msvd` on already parsed JSON ``data`` read from ``src``."""
    if not isinstance(data, dict) or not data:
        raise InputError("expected a non-empty JSON object {video: [captions]}", source=src)
    videos, list_src = id_list(test_list, "video")
    if not videos:
        raise InputError("the split list is empty", source=list_src)
    pairs: list[tuple[str, str, str]] = []
    for k, v in enumerate(videos):
        caps = data.get(v)
        if caps is None:
            raise InputError(f"video {v!r} (entry {k + 1} of {list_src}) is not in {src}", source=src)
        if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
            raise InputError(f"video {v!r}: expected a list of caption strings", source=src)
        if not caps:
            raise InputError(f"video {v!r} has no captions", source=src)
        pairs.extend((f"{v}#{i}", v, c) for i, c in enumerate(caps))
    return Collection.from_pairs(name, pairs, video_ids=videos, source=src)


def read_msvd_raw_corpus(
    path: PathLike,
    video_list: PathLike | Sequence[str] | None = None,
    *,
    language: str = "English",
    name: str = "msvd-raw",
) -> Collection:
    """The raw MSVD corpus CSV (see module docstring); videos in ``video_list`` order if given,
    else by first appearance. Rows of other languages are dropped (``language=None`` keeps all)."""
    return msvd_raw_collection(read_text(path), str(path), video_list, language=language, name=name)


def msvd_raw_collection(
    text: str,
    src: str,
    video_list: PathLike | Sequence[str] | None = None,
    *,
    language: str = "English",
    name: str = "msvd-raw",
) -> Collection:
    """:func:`read_msvd_raw_corpus` of the file's ``text`` (read once, gunzipped, BOM removed)."""
    import io

    import pandas as pd  # only for this CSV; not when `fireval.formats` is imported

    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"malformed CSV: {exc}", source=src) from None
    need = ["VideoID", "Start", "End", "Description"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InputError(
            f"missing column(s) {missing}; expected ,VideoID,Start,End,...,Language,Description", source=src
        )
    if language is not None and "Language" in df.columns:
        df = df[df["Language"] == language]
    if df.empty:
        raise InputError(f"no {language} rows", source=src)
    rowno = df[df.columns[0]] if df.columns[0].startswith("Unnamed") or df.columns[0] == "" else None
    ids = (
        ("raw" + rowno.astype(str))
        if rowno is not None
        else ("raw" + df.index.astype(str).to_series(index=df.index))
    )
    vids = df["VideoID"] + "_" + df["Start"] + "_" + df["End"]
    pairs = list(zip(ids.tolist(), vids.tolist(), df["Description"].tolist(), strict=True))
    videos = None
    if video_list is not None:
        videos, _ = id_list(video_list, "video")
        keep = set(videos)
        pairs = [p for p in pairs if p[1] in keep]
    return Collection.from_pairs(name, pairs, video_ids=videos, source=src)
