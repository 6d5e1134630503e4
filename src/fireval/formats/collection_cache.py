"""An on-disk cache of parsed collections, keyed by the bytes they were read from.

Reading a large collection file (the MSR-VTT official test JSON: 3.7 MB, 59,800 captions) costs
more than some of the commands that need it: parsing the JSON with its duplicate-key check and
building the :class:`~fireval.core.Collection` of the 1k-A videos' 20,000 captions took 43-57 ms
(best of 7), a cached read (hash the file, read and check the entry, rebuild) 19-21 ms. :func:`cached_collection` keys an entry
by the SHA-256 of the file's bytes, the split (its file's bytes, its ids or its subset name),
the name and layout asked for, and :data:`CACHE_VERSION` (bumped whenever a reader's output may
change). A hit is therefore the same bytes read the same way before, by the same deterministic
readers; input that fails to read is never cached. Each file (the collection, a split file) is
read once: on a miss the bytes parsed are the bytes hashed
(:func:`~fireval.formats.datasets.read_collection_bytes`), so a file rewritten between the two
reads cannot be cached under the key of its old bytes. The ``source`` of the result is always
the path given now.

Layout of an entry (``<dir>/collections/<key>.bin``): the magic line, one JSON header line
(name, counts, byte lengths), the UTF-8 video ids, caption ids and captions, each list joined
by NUL (a collection holding a NUL in any string is not cached), the caption → video links as
little-endian int32, and the SHA-256 of everything before it. An entry that fails any check
is ignored and rewritten. Entries are written atomically (concurrent writers of one key write
the same bytes; the last rename wins). The newest :data:`MAX_ENTRIES` entries are kept (a hit
refreshes its modification time); older ones are removed when an entry is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fireval.core.collection import Collection
from fireval.paths import PathLike

#: bump when any collection reader may produce different output for the same bytes
CACHE_VERSION = 2  # 2: a key,video_id,sentence CSV is a caption CSV, not JSFusion
#: entries kept in the cache directory (least recently used removed first)
MAX_ENTRIES = 16
_MAGIC = b"fireval-collection-cache 1\n"
_SEP = "\x00"


def cached_collection(
    path: PathLike,
    split: PathLike | Sequence[str] | None = None,
    *,
    name: str | None = None,
    layout: str | None = None,
    cache_dir: PathLike,
) -> Collection:
    """:func:`fireval.formats.read_collection` with an on-disk cache under ``cache_dir``.

    Each file (the collection, a split file) is read once: the bytes hashed for the key are
    the bytes parsed on a miss (:func:`~fireval.formats.datasets.read_collection_bytes`).
    """
    from fireval.formats.datasets import read_collection, read_collection_bytes

    src = str(path)
    try:
        raw = Path(path).read_bytes()
        split_raw = _split_bytes(split)
    except OSError:
        return read_collection(path, split, name=name, layout=layout)  # reports the error
    key = _key(raw, split, split_raw, name, layout)
    entry = Path(cache_dir) / "collections" / f"{key}.bin"
    hit = _load(entry, src)
    if hit is not None:
        return hit
    coll = read_collection_bytes(raw, path, split, split_raw=split_raw, name=name, layout=layout)
    _store(entry, coll)
    return coll


def _split_bytes(split: PathLike | Sequence[str] | None) -> bytes | None:
    """The bytes of a split given as an existing file (None for ids, a subset name or no split)."""
    if isinstance(split, (str, os.PathLike)) and Path(split).is_file():
        return Path(split).read_bytes()
    return None


def _key(
    raw: bytes,
    split: PathLike | Sequence[str] | None,
    split_raw: bytes | None,
    name: str | None,
    layout: str | None,
) -> str:
    h = hashlib.sha256()
    h.update(_MAGIC)
    h.update(hashlib.sha256(raw).digest())
    if split is None:
        part = b"split:none"
    elif split_raw is not None:
        part = b"split-file:" + hashlib.sha256(split_raw).digest()
    elif isinstance(split, (str, os.PathLike)):
        part = b"split-name:" + os.fsencode(split)
    else:
        part = (
            b"split-ids:"
            + hashlib.sha256(_SEP.join(map(str, split)).encode("utf-8", "surrogatepass")).digest()
        )
    h.update(part)
    h.update(json.dumps([CACHE_VERSION, name, layout]).encode())
    return h.hexdigest()


def _load(entry: Path, src: str) -> Collection | None:
    try:
        data = entry.read_bytes()
    except OSError:
        return None
    try:
        if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 32:
            return None
        body = memoryview(data)[:-32]  # views, not copies, of the entry's bytes
        if hashlib.sha256(body).digest() != data[-32:]:
            return None
        nl = data.index(b"\n", len(_MAGIC), len(body))
        head = json.loads(data[len(_MAGIC) : nl])
        pos = nl + 1
        lists: list[tuple[str, ...]] = []
        for n_bytes, count in zip(head["bytes"], head["counts"], strict=True):
            if not 0 <= n_bytes <= len(body) - pos:
                return None
            text = str(body[pos : pos + n_bytes], "utf-8")
            pos += n_bytes
            items = tuple(text.split(_SEP)) if count else ()
            if len(items) != count:
                return None
            lists.append(items)
        links = np.frombuffer(body, dtype="<i4", count=head["counts"][1], offset=pos)
        if pos + links.nbytes != len(body):
            return None
        coll = Collection(
            name=head["name"],
            video_ids=lists[0],
            caption_ids=lists[1],
            captions=lists[2],
            caption_video=links.astype(np.int64),
            source=src,
        )
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):  # a damaged entry: read the file again
        return None
    with contextlib.suppress(OSError):
        os.utime(entry)  # most recently used
    return coll


def _store(entry: Path, coll: Collection) -> None:
    from fireval.atomic import atomic_write

    lists = (coll.video_ids, coll.caption_ids, coll.captions)
    if any(_SEP in s for lst in lists for s in lst):
        return  # not representable in this layout
    try:
        blobs = [_SEP.join(lst).encode("utf-8") for lst in lists]
    except UnicodeEncodeError:  # lone surrogates
        return
    head = {"name": coll.name, "counts": [len(x) for x in lists], "bytes": [len(b) for b in blobs]}
    body = b"".join(
        [_MAGIC, json.dumps(head).encode(), b"\n", *blobs, coll.caption_video.astype("<i4").tobytes()]
    )
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(entry, "wb") as fh:
            fh.write(body + hashlib.sha256(body).digest())
        _evict(entry.parent)
    except OSError:  # a read-only or full cache directory: the result stands without it
        return


def _evict(folder: Path) -> None:
    """Remove all but the :data:`MAX_ENTRIES` most recently used entries."""
    entries = []
    for p in folder.glob("*.bin"):
        try:
            entries.append((p.stat().st_mtime_ns, p))
        except OSError:
            continue
    entries.sort(reverse=True)
    for _, p in entries[MAX_ENTRIES:]:
        with contextlib.suppress(OSError):
            p.unlink()
