"""Bounded column blobs in the parse cache (fireval.proxies.cache): least recently used first,
on write, under a size cap; safe with concurrent writers; a warm hit still gives the analyses.

Before: ``put_columns`` kept every blob until ``clear()`` (``ParseCache`` had no cap), and there
was no command to see the cache's size or clear it.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from fireval.core import InputError
from fireval.proxies.cache import DB_NAME, DEFAULT_MAX_BYTES, MAX_MB_ENV, ParseCache

SIZE = 1000  # bytes per test blob


pytestmark = pytest.mark.usefixtures("private_cache")  # conftest: a private cache directory


def _blob(key: str, size: int = SIZE) -> bytes:
    """Content determined by the key, so a survivor can be checked against what was written."""
    seed = hashlib.sha256(key.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def _stored(d: Path) -> dict[str, int]:
    con = sqlite3.connect(d / DB_NAME)
    try:
        return dict(con.execute("SELECT digest, length(value) FROM columns"))
    finally:
        con.close()


def test_least_recently_used_blob_goes_first(tmp_path: Path) -> None:
    with ParseCache(tmp_path, version="v", max_bytes=3 * SIZE) as c:
        for k in "abc":
            c.put_columns(k, _blob(k))
        assert c.get_columns("a") == _blob("a")  # a is now the most recently used
        c.put_columns("d", _blob("d"))  # over the cap by one blob: b goes
        assert sorted(_stored(tmp_path)) == ["a", "c", "d"]
        c.put_columns("e", _blob("e"))  # then c
        assert sorted(_stored(tmp_path)) == ["a", "d", "e"]
        assert c.get_columns("b") is None and c.get_columns("c") is None
        c.put_columns("d", _blob("d"))  # rewriting a key refreshes it and evicts nothing
        assert sorted(_stored(tmp_path)) == ["a", "d", "e"]
        c.put_columns("f", _blob("f"))  # a (read before d, e were written) is now the oldest
        assert sorted(_stored(tmp_path)) == ["d", "e", "f"]
        for k in "def":
            assert c.get_columns(k) == _blob(k)


def test_total_never_exceeds_the_cap(tmp_path: Path) -> None:
    cap = 5 * SIZE + 500
    sizes = np.random.default_rng(0).integers(100, 2500, size=60)
    with ParseCache(tmp_path, version="v", max_bytes=cap) as c:
        for i, n in enumerate(sizes.tolist()):
            c.put_columns(f"k{i}", _blob(f"k{i}", n))
            stored = _stored(tmp_path)
            assert sum(stored.values()) <= cap
            assert f"k{i}" in stored  # the blob just written is never the one evicted
            assert c.stats()["blob_bytes"] == sum(stored.values())
        # the survivors are the most recent writes that fit, newest first
        fit, total = [], 0
        for i in range(len(sizes) - 1, -1, -1):
            if total + int(sizes[i]) > cap:
                break
            fit.append(f"k{i}")
            total += int(sizes[i])
        assert sorted(stored) == sorted(fit)


def test_blob_over_the_cap_is_not_stored_and_evicts_nothing(tmp_path: Path) -> None:
    with ParseCache(tmp_path, version="v", max_bytes=2 * SIZE) as c:
        c.put_columns("a", _blob("a"))
        c.put_columns("huge", _blob("huge", 2 * SIZE + 1))
        assert c.get_columns("huge") is None and c.get_columns("a") == _blob("a")
    with ParseCache(tmp_path / "zero", version="v", max_bytes=0) as c:
        c.put_columns("a", _blob("a"))
        assert c.get_columns("a") is None
        c.put_many([("a dog", (("DET", "NOUN"), ("a", "dog")))])  # per-caption rows are not capped
        assert c.get_many(["a dog"]) == {"a dog": (("DET", "NOUN"), ("a", "dog"))}


def test_cap_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ParseCache(tmp_path).max_bytes == DEFAULT_MAX_BYTES == 256 * 2**20
    monkeypatch.setenv(MAX_MB_ENV, "0.5")
    assert ParseCache(tmp_path).max_bytes == 2**19
    assert ParseCache(tmp_path, max_bytes=7).max_bytes == 7  # the argument wins
    for bad in ("abc", "-1", "nan", "inf"):
        monkeypatch.setenv(MAX_MB_ENV, bad)
        with pytest.raises(InputError, match=MAX_MB_ENV):
            ParseCache(tmp_path)


def test_cache_written_before_eviction_is_upgraded(tmp_path: Path) -> None:
    """An existing cache file without the ``used`` column: its blobs stay readable and are the
    first to go."""
    tmp_path.mkdir(exist_ok=True)
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute(
        "CREATE TABLE columns (version TEXT NOT NULL, digest TEXT NOT NULL, value BLOB NOT NULL,"
        " PRIMARY KEY (version, digest))"
    )
    con.executemany("INSERT INTO columns VALUES ('v', ?, ?)", [(k, _blob(k)) for k in ("old1", "old2")])
    con.commit()
    con.close()
    with ParseCache(tmp_path, version="v", max_bytes=2 * SIZE) as c:
        c.put_columns("new", _blob("new"))
        assert sorted(_stored(tmp_path)) == ["new", "old2"]
        assert c.get_columns("old2") == _blob("old2") and not c._broken


def _blob_writer(directory: str, who: int, n: int, cap: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    try:
        with ParseCache(directory, version="v", max_bytes=cap) as c:
            for i in range(n):
                k = f"p{who}-{i}"
                c.put_columns(k, _blob(k))
                got = c.get_columns(k)  # may already be evicted by the other writer: then None
                assert got is None or got == _blob(k)
                c.get_columns(f"p{1 - who}-{i}")  # reads of the other's keys move the clock too
            assert not c._broken
        out.put("ok")
    except BaseException as exc:  # report to the parent
        out.put(repr(exc))


def test_two_processes_write_and_evict_concurrently(tmp_path: Path) -> None:
    cap = 10 * SIZE
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_blob_writer, args=(str(tmp_path), w, 80, cap, q)) for w in (0, 1)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["ok", "ok"]
    stored = _stored(tmp_path)
    assert len(stored) == 10 and sum(stored.values()) == cap  # full, and not over
    with ParseCache(tmp_path, version="v", max_bytes=cap) as c:
        for k in stored:
            assert c.get_columns(k) == _blob(k)  # every survivor is intact
    con = sqlite3.connect(tmp_path / DB_NAME)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    used = [u for (u,) in con.execute("SELECT used FROM columns")]
    con.close()
    assert len(set(used)) == len(used)  # the logical clock never gave two blobs one value


def test_warm_hit_after_eviction_gives_identical_analyses(wn, msrvtt_captions, private_cache: Path) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.text import TextPipeline, texts_digest

    vids = sorted(msrvtt_captions)
    first = [c for v in vids[:12] for c in msrvtt_captions[v]]
    second = [c for v in vids[12:24] for c in msrvtt_captions[v]]
    ref1 = TextPipeline(wordnet=wn).analyse_columns(first).to_blob()
    ref2 = TextPipeline(wordnet=wn).analyse_columns(second).to_blob()
    cap = max(len(ref1), len(ref2)) + 10  # room for one blob only
    with ParseCache(private_cache, version="p", max_bytes=cap) as c:
        TextPipeline(wordnet=wn, cache=c).analyse_columns(first)
        TextPipeline(wordnet=wn, cache=c).analyse_columns(second)  # evicts the first blob
        assert c.get_columns(texts_digest(first)) is None
    with ParseCache(private_cache, version="p", max_bytes=cap) as c:
        warm = TextPipeline(wordnet=object(), tagger=_NoTagger(), cache=c).analyse_columns(second)
        assert c.hits == c.misses == 0  # served by the blob
        assert warm.to_blob() == ref2
        # the evicted list comes back from the per-caption rows, still without the tagger
        again = TextPipeline(wordnet=object(), tagger=_NoTagger(), cache=c).analyse_columns(first)
        assert c.misses == 0 and c.hits > 0
        assert again.to_blob() == ref1


class _NoTagger:
    def __getattr__(self, name: str) -> object:
        raise AssertionError("the tagger was used although every caption was cached")


def test_cli_cache_shows_size_and_clears(tmp_path: Path, private_cache: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tests.cli_helpers import exit_code

    assert exit_code(["proxies", "cache"]) == 0
    assert "not created yet" in capsys.readouterr().out and not private_cache.exists()
    with ParseCache(private_cache, version="v") as c:
        c.put_columns("a", _blob("a"))
        c.put_many([("a dog", (("DET", "NOUN"), ("a", "dog")))])
    out = tmp_path / "cache.json"
    assert exit_code(["proxies", "cache", "--json", str(out)]) == 0
    st = json.loads(out.read_text())
    assert (st["blobs"], st["blob_bytes"], st["analyses"], st["max_bytes"]) == (1, SIZE, 1, DEFAULT_MAX_BYTES)
    assert "column blobs: 1" in capsys.readouterr().out
    assert exit_code(["proxies", "cache", "--clear", "--json", str(out)]) == 0
    st = json.loads(out.read_text())
    assert (st["blobs"], st["analyses"]) == (0, 0)
    with ParseCache(private_cache, version="v") as c:
        assert c.get_columns("a") is None
    # the JSON may not be written over the cache itself
    assert exit_code(["proxies", "cache", "--json", str(private_cache / DB_NAME)]) == 2
