"""Read-only hits in the parse cache (fireval.proxies.cache): a hit writes nothing, the reads of
a cache are recorded together (on close or before its next write), and eviction still follows
least-recently-used order exactly.

Before: every ``get_columns`` hit ran a ``BEGIN IMMEDIATE`` write transaction to move its
blob's ``used`` clock (about 2 ms each, two per warm ``fireval proxies build``).
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
from collections import OrderedDict
from pathlib import Path

import pytest

from fireval.proxies.cache import DB_NAME, ParseCache

SIZE = 1000


def _blob(key: str) -> bytes:
    seed = hashlib.sha256(key.encode()).digest()
    return (seed * (SIZE // len(seed) + 1))[:SIZE]


def _stored(d: Path) -> list[str]:
    con = sqlite3.connect(d / DB_NAME)
    try:
        return sorted(k for (k,) in con.execute("SELECT digest FROM columns"))
    finally:
        con.close()


def _order(d: Path) -> list[str]:
    """Blobs from least to most recently used (the eviction order)."""
    con = sqlite3.connect(d / DB_NAME)
    try:
        return [k for (k,) in con.execute("SELECT digest FROM columns ORDER BY used, rowid")]
    finally:
        con.close()


class _Commits:
    """Counts commits by other connections: SQLite's ``PRAGMA data_version`` changes when
    another connection commits to the file."""

    def __init__(self, d: Path) -> None:
        self.con = sqlite3.connect(d / DB_NAME, isolation_level=None)
        self.last = self._now()

    def _now(self) -> int:
        return int(self.con.execute("PRAGMA data_version").fetchone()[0])

    def changed(self) -> bool:
        now = self._now()
        out, self.last = now != self.last, now
        return out


def _fill(d: Path, keys: str, cap: int = 100 * SIZE) -> None:
    with ParseCache(d, version="v", max_bytes=cap) as c:
        for k in keys:
            c.put_columns(k, _blob(k))


def test_warm_repeat_writes_nothing(tmp_path: Path) -> None:
    """The same lists read again in the same order (a warm build run twice): no commit at all."""
    _fill(tmp_path, "xqd")
    with ParseCache(tmp_path, version="v") as c:  # first warm run: q, d move above x (one write)
        assert c.get_columns("q") == _blob("q") and c.get_columns("d") == _blob("d")
    assert _order(tmp_path) == ["x", "q", "d"]
    commits = _Commits(tmp_path)
    for _ in range(3):
        with ParseCache(tmp_path, version="v") as c:
            assert c.get_columns("q") == _blob("q")
            assert c.get_columns("d") == _blob("d")
            assert not commits.changed()  # a hit is read-only
        assert not commits.changed()  # and so is closing, as the order would not change
    assert _order(tmp_path) == ["x", "q", "d"]


def test_reads_are_recorded_on_close_in_order_of_last_read(tmp_path: Path) -> None:
    _fill(tmp_path, "abcd")
    commits = _Commits(tmp_path)
    with ParseCache(tmp_path, version="v") as c:
        for k in "bab":  # last reads: a, then b
            assert c.get_columns(k) == _blob(k)
        assert c.get_columns("zz") is None  # a miss is not a use
        assert not commits.changed() and _order(tmp_path) == list("abcd")
    assert commits.changed()  # recorded on close, in one transaction
    assert _order(tmp_path) == list("cdab")
    # reading the top blobs in another order is a change, and is recorded
    with ParseCache(tmp_path, version="v") as c:
        c.get_columns("b")
        c.get_columns("a")
    assert commits.changed() and _order(tmp_path) == list("cdba")


def test_reads_are_recorded_before_the_next_write(tmp_path: Path) -> None:
    """A read not yet recorded is not evicted by a write of the same cache."""
    _fill(tmp_path, "abc", cap=3 * SIZE)
    with ParseCache(tmp_path, version="v", max_bytes=3 * SIZE) as c:
        c.get_columns("b")
        c.get_columns("a")
        c.put_columns("d", _blob("d"))  # over the cap: c is the least recently used
        assert _stored(tmp_path) == ["a", "b", "d"]
        assert _order(tmp_path) == ["b", "a", "d"]  # the reads come before the write


def test_record_reads_without_close_and_a_left_open_cache(tmp_path: Path) -> None:
    _fill(tmp_path, "abc")
    c = ParseCache(tmp_path, version="v")
    c.get_columns("a")
    c.record_reads()
    assert _order(tmp_path) == list("bca")
    c.get_columns("b")
    del c  # garbage-collected without close(): its reads are still recorded
    assert _order(tmp_path) == list("cab")


@pytest.mark.parametrize("seed", range(6))
def test_eviction_equals_lru_model(tmp_path: Path, seed: int) -> None:
    """Random reads, writes and re-openings against an in-memory LRU that records each read at
    once: the stored blobs and their order are the model's after every step."""
    rnd = random.Random(seed)
    cap_n = rnd.randint(2, 5)
    model: OrderedDict[str, None] = OrderedDict()  # least recently used first
    c = ParseCache(tmp_path, version="v", max_bytes=cap_n * SIZE)
    keys = [f"k{i}" for i in range(9)]
    for _ in range(120):
        op = rnd.random()
        k = rnd.choice(keys)
        if op < 0.45:
            got = c.get_columns(k)
            assert (got is not None) == (k in model)
            if got is not None:
                assert got == _blob(k)
                model.move_to_end(k)
        elif op < 0.85:
            c.put_columns(k, _blob(k))
            model[k] = None
            model.move_to_end(k)
            while len(model) > cap_n:
                model.popitem(last=False)
            assert _order(tmp_path) == list(model)
        else:
            c.close()
            assert _order(tmp_path) == list(model)
            c = ParseCache(tmp_path, version="v", max_bytes=cap_n * SIZE)
    c.close()
    assert _order(tmp_path) == list(model)
    assert not c._broken


def test_index_on_use_is_created_for_an_existing_cache(tmp_path: Path) -> None:
    """Caches written before the index get it on open; the clock and eviction read it, not the
    table (whose ``used`` sits after the blob)."""
    tmp_path.mkdir(exist_ok=True)
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute(
        "CREATE TABLE columns (version TEXT NOT NULL, digest TEXT NOT NULL, value BLOB NOT NULL,"
        " used INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version, digest))"
    )
    con.executemany("INSERT INTO columns VALUES ('v', ?, ?, ?)", [("a", _blob("a"), 1), ("b", _blob("b"), 2)])
    con.commit()
    con.close()
    with ParseCache(tmp_path, version="v", max_bytes=2 * SIZE) as c:
        assert c.get_columns("a") == _blob("a")
        c.put_columns("c", _blob("c"))  # a was read: b goes
    assert _stored(tmp_path) == ["a", "c"]
    con = sqlite3.connect(tmp_path / DB_NAME)
    plan = " ".join(
        str(r) for r in con.execute("EXPLAIN QUERY PLAN SELECT digest FROM columns ORDER BY used, rowid")
    )
    con.close()
    assert "columns_by_use" in plan
