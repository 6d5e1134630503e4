"""The on-disk cache of parsed collections (fireval.formats.collection_cache)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import fireval.formats.collection_cache as cc
from fireval.core.collection import Collection
from fireval.core.errors import InputError
from fireval.formats import read_collection

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "msrvtt"
OFFICIAL = DATA / "official_test" / "test.json"
JSF = DATA / "MSRVTT_JSFUSION_test.csv"


def _same(a: Collection, b: Collection) -> None:
    assert (a.name, a.video_ids, a.caption_ids, a.captions, a.source) == (
        b.name,
        b.video_ids,
        b.caption_ids,
        b.captions,
        b.source,
    )
    assert a.caption_video.dtype == b.caption_video.dtype and np.array_equal(a.caption_video, b.caption_video)


def _official(path: Path, data: dict[str, dict[str, str]]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


SMALL = {"v1": {"s1": "a man runs", "s2": "ünïcode ☃ text"}, "v2": {"s3": "a dog"}, "v3": {"s4": ""}}


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "collections").glob("*.bin"))


def test_hit_equals_a_fresh_read(tmp_path: Path) -> None:
    f = _official(tmp_path / "o.json", SMALL)
    cache = tmp_path / "cache"
    miss = cc.cached_collection(f, ["v2", "v1"], name="t", cache_dir=cache)
    assert len(_entries(cache)) == 1
    hit = cc.cached_collection(f, ["v2", "v1"], name="t", cache_dir=cache)
    fresh = read_collection(f, ["v2", "v1"], name="t")
    _same(miss, fresh)
    _same(hit, fresh)
    # the same bytes elsewhere: the same entry, the result names the path given now
    g = tmp_path / "copy.json"
    shutil.copyfile(f, g)
    moved = cc.cached_collection(g, ["v2", "v1"], name="t", cache_dir=cache)
    assert moved.source == str(g) and len(_entries(cache)) == 1
    _same(moved, read_collection(g, ["v2", "v1"], name="t"))


@pytest.mark.skipif(not OFFICIAL.exists(), reason="needs ../shared/data")
def test_real_msrvtt_official_with_1ka_videos(tmp_path: Path) -> None:
    videos = list(read_collection(JSF).video_ids)
    cache = tmp_path / "cache"
    cc.cached_collection(OFFICIAL, videos, name="test", cache_dir=cache)
    hit = cc.cached_collection(OFFICIAL, videos, name="test", cache_dir=cache)
    fresh = read_collection(OFFICIAL, videos, name="test")
    assert hit.n_captions == 20_000 and hit.n_videos == 1_000
    _same(hit, fresh)


def test_key_follows_content_split_name_and_layout(tmp_path: Path) -> None:
    f = _official(tmp_path / "o.json", SMALL)
    cache = tmp_path / "cache"
    cc.cached_collection(f, ["v1"], cache_dir=cache)
    _official(f, {**SMALL, "v1": {"s1": "a woman runs", "s2": "x"}})  # same path, new bytes
    changed = cc.cached_collection(f, ["v1"], cache_dir=cache)
    assert changed.captions == ("a woman runs", "x")
    assert len(_entries(cache)) == 2
    split = tmp_path / "split.txt"
    split.write_text("v2\nv1\n")
    by_file = cc.cached_collection(f, split, cache_dir=cache)
    assert by_file.video_ids == ("v2", "v1")
    split.write_text("v1\nv2\n")  # the split file's bytes are part of the key
    assert cc.cached_collection(f, split, cache_dir=cache).video_ids == ("v1", "v2")
    assert cc.cached_collection(f, ["v1"], name="other", cache_dir=cache).name == "other"
    assert len(_entries(cache)) == 5


def test_bad_input_is_never_cached(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    f.write_text('{"v1": {"s1": "a", "s1": "b"}}')  # duplicate key
    cache = tmp_path / "cache"
    for _ in range(2):
        with pytest.raises(InputError, match="duplicate"):
            cc.cached_collection(f, cache_dir=cache)
    assert _entries(cache) == []
    with pytest.raises(InputError):
        cc.cached_collection(_official(tmp_path / "o.json", SMALL), ["nope"], cache_dir=cache)
    assert _entries(cache) == []
    with pytest.raises((InputError, OSError)):
        cc.cached_collection(tmp_path / "missing.json", cache_dir=cache)


@pytest.mark.parametrize("damage", ["flip", "truncate", "magic", "empty"])
def test_damaged_entry_is_read_again_and_rewritten(tmp_path: Path, damage: str) -> None:
    f = _official(tmp_path / "o.json", SMALL)
    cache = tmp_path / "cache"
    cc.cached_collection(f, cache_dir=cache)
    (entry,) = _entries(cache)
    good = entry.read_bytes()
    bad = {
        "flip": good[:40] + bytes([good[40] ^ 1]) + good[41:],
        "truncate": good[:-5],
        "magic": b"X" + good[1:],
        "empty": b"",
    }[damage]
    entry.write_bytes(bad)
    _same(cc.cached_collection(f, cache_dir=cache), read_collection(f))
    assert entry.read_bytes() == good


def test_nul_in_a_caption_is_read_but_not_cached(tmp_path: Path) -> None:
    f = _official(tmp_path / "o.json", {"v1": {"s1": "a\u0000b"}})
    cache = tmp_path / "cache"
    got = cc.cached_collection(f, cache_dir=cache)
    assert got.captions == ("a\x00b",)
    assert _entries(cache) == []


def test_least_recently_used_entries_are_evicted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cc, "MAX_ENTRIES", 2)
    cache = tmp_path / "cache"
    files = [_official(tmp_path / f"o{i}.json", {f"v{i}": {f"s{i}": "t"}}) for i in range(3)]
    cc.cached_collection(files[0], cache_dir=cache)
    first = _entries(cache)[0]
    os.utime(first, ns=(1, 1))  # oldest
    cc.cached_collection(files[1], cache_dir=cache)
    second = next(p for p in _entries(cache) if p != first)
    os.utime(second, ns=(2, 2))
    cc.cached_collection(files[0], cache_dir=cache)  # a hit refreshes the first entry
    cc.cached_collection(files[2], cache_dir=cache)  # the third write evicts the second
    left = _entries(cache)
    assert len(left) == 2 and first in left and second not in left


def _read_one(args: tuple[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    path, cache = args
    c = cc.cached_collection(path, name="x", cache_dir=cache)
    return c.caption_ids, c.captions


def test_concurrent_writers_leave_one_valid_entry(tmp_path: Path) -> None:
    data = {f"v{i}": {f"s{i}_{k}": f"caption {i} {k}" for k in range(20)} for i in range(300)}
    f = _official(tmp_path / "o.json", data)
    cache = tmp_path / "cache"
    with ProcessPoolExecutor(4) as ex:
        results = list(ex.map(_read_one, [(str(f), str(cache))] * 8))
    assert all(r == results[0] for r in results)
    (entry,) = _entries(cache)
    assert not [p for p in (cache / "collections").iterdir() if p.suffix != ".bin"]  # no temporaries
    _same(cc.cached_collection(f, name="x", cache_dir=cache), read_collection(f, name="x"))


def test_read_only_cache_directory_still_reads(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root ignores directory permissions: make the cache path a file instead
        cache = tmp_path / "cache"
        cache.write_text("not a directory")
    else:
        cache = tmp_path / "ro"
        cache.mkdir()
        cache.chmod(0o500)
    f = _official(tmp_path / "o.json", SMALL)
    _same(cc.cached_collection(f, cache_dir=cache), read_collection(f))


@pytest.mark.skipif(not OFFICIAL.exists(), reason="needs ../shared/data")
def test_proxies_build_uses_the_cache_unless_told_not_to(tmp_path: Path) -> None:
    env = {**os.environ, "FIREVAL_CACHE_DIR": str(tmp_path / "cache")}
    exe = [sys.executable, "-m", "fireval"]
    base = ["proxies", "build", "--proxy", "bow", "-c", str(JSF), "--video-captions", str(OFFICIAL)]
    subprocess.run(
        [*exe, *base, "-o", str(tmp_path / "a.npz"), "--no-cache"], env=env, check=True, capture_output=True
    )
    assert not (tmp_path / "cache" / "collections").exists()
    for out in ("b.npz", "c.npz"):  # miss, then hit
        subprocess.run([*exe, *base, "-o", str(tmp_path / out)], env=env, check=True, capture_output=True)
    assert len(_entries(tmp_path / "cache")) == 1
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "c.npz") as c:
        for k in a.files:
            if k != "meta":
                assert np.array_equal(a[k], c[k]), k


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each file was opened (by real path) through io.open / open (pathlib, pandas)."""
    import builtins
    import io

    seen: Counter[str] = Counter()
    real = io.open

    def spy(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(file, (str, os.PathLike)):
            seen[os.path.realpath(file)] += 1
        return real(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", spy)
    monkeypatch.setattr(builtins, "open", spy)
    return seen


RAW_CORPUS = (
    ",VideoID,Start,End,WorkerID,Source,AnnotationTime,Language,Description\n"
    "0,vA,1,2,7,clean,5,English,A bird in a sink.\n"
    '1,vA,1,2,8,clean,5,English,"A bird,\nbathing."\n'
    "2,vB,3,4,9,clean,5,German,Ein Vogel.\n"
    "3,vB,3,4,9,clean,5,English,Two dogs.\n"
)


@pytest.mark.parametrize("kind", ["official", "official-gz", "msvd-raw", "jsonl"])
def test_each_file_is_read_once_on_a_miss_and_on_a_hit(
    tmp_path: Path, opened: Counter[str], kind: str
) -> None:
    import gzip

    if kind.startswith("official"):
        text, videos = json.dumps(SMALL), "v2\nv1\n"
    elif kind == "msvd-raw":
        text, videos = RAW_CORPUS, "vB_3_4\nvA_1_2\n"
    else:
        text = "".join(
            json.dumps({"caption_id": f"s{i}", "video_id": f"v{i % 2}", "text": f"t {i}"}) + "\n"
            for i in range(5)
        )
        videos = "v1\nv0\n"
    f = tmp_path / ("c.json.gz" if kind == "official-gz" else "c.txt")
    f.write_bytes(gzip.compress(text.encode()) if kind == "official-gz" else text.encode())
    split = tmp_path / "split.txt"
    split.write_text(videos)
    cache = tmp_path / "cache"
    fresh = read_collection(f, split, name="t")
    for _ in ("miss", "hit"):
        opened.clear()
        got = cc.cached_collection(f, split, name="t", cache_dir=cache)
        _same(got, fresh)
        assert opened[os.path.realpath(f)] == 1 and opened[os.path.realpath(split)] == 1, opened
    assert len(_entries(cache)) == 1


@pytest.mark.parametrize(
    ("content", "split_text", "name"),
    [
        (b"", None, "empty.json"),
        (b"   \n", None, "blank.json"),
        (b"not gzip", None, "named.json.gz"),
        (b"\xff\xfe{}", None, "latin.json"),
        (json.dumps(SMALL).encode(), "v1\nv1\n", "dup-split.json"),
        (json.dumps(SMALL).encode(), "v1\nnope\n", "unknown-video.json"),
        (json.dumps(SMALL).encode(), "", "empty-split.json"),
    ],
)
def test_a_miss_reports_what_a_fresh_read_reports(
    tmp_path: Path, content: bytes, split_text: str | None, name: str
) -> None:
    f = tmp_path / name
    f.write_bytes(content)
    split: Path | None = None
    if split_text is not None:
        split = tmp_path / "split.txt"
        split.write_text(split_text)
    with pytest.raises(InputError) as fresh:
        read_collection(f, split)
    with pytest.raises(InputError) as cached:
        cc.cached_collection(f, split, cache_dir=tmp_path / "cache")
    assert str(cached.value) == str(fresh.value)
    assert _entries(tmp_path / "cache") == []


def test_a_file_rewritten_while_read_is_not_cached_under_its_old_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = _official(tmp_path / "o.json", SMALL)
    old_bytes = f.read_bytes()
    new_data = {**SMALL, "v1": {"s1": "rewritten", "s2": "x"}}
    real = Path.read_bytes
    swapped: list[bool] = []

    def read_then_rewrite(self: Path) -> bytes:
        data = real(self)
        if self == f and not swapped:  # another process rewrites the file just after our read
            swapped.append(True)
            _official(f, new_data)
        return data

    monkeypatch.setattr(Path, "read_bytes", read_then_rewrite)
    cache = tmp_path / "cache"
    first = cc.cached_collection(f, cache_dir=cache)
    monkeypatch.undo()
    assert swapped and first.captions[:2] == ("a man runs", "ünïcode ☃ text")  # what was read
    f.write_bytes(old_bytes)
    again = cc.cached_collection(f, cache_dir=cache)  # a hit on the old bytes' key
    assert len(_entries(cache)) == 1
    _same(again, read_collection(f))
