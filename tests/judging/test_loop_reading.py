"""``Database.loop_reading``: the SQLite read connection the web app's event loop keeps
(``GET /api/peek`` runs on the loop with it instead of a worker thread)."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store, StoreUnavailableError


def _store(tmp_path: Path) -> tuple[Store, str]:
    st = Store(f"sqlite:///{tmp_path / 'loop.db'}")
    st.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}) for i in range(5)], "T")
    st.add_annotator("ann")
    ann = next(a for a in st.annotators() if a.name == "ann")
    return st, st.open_session(ann.id, timedelta(hours=1))


def _count(conn: sa.Connection) -> int:
    return int(conn.exec_driver_sql("SELECT count(*) FROM labels").scalar_one())


def test_each_read_sees_the_latest_commit(tmp_path: Path) -> None:
    st, sid = _store(tmp_path)
    try:
        with st.db.loop_reading() as conn:
            assert _count(conn) == 0
        kept = st.db._loop_conn
        ann = next(a for a in st.annotators() if a.name == "ann")
        item = st.next_item(ann.id)
        assert item is not None
        st.submit(ann.id, item.id, "relevant")
        with st.db.loop_reading() as conn:
            assert _count(conn) == 1  # a new read transaction: no stale snapshot
        assert st.db._loop_conn is kept  # the same connection, kept between reads
        assert st.peek_in_session(sid, on_loop=True) == st.peek_in_session(sid)
    finally:
        st.close()


def test_another_thread_falls_back_to_the_pool(tmp_path: Path) -> None:
    st, _ = _store(tmp_path)
    try:
        with st.db.loop_reading():
            pass
        kept = st.db._loop_conn
        seen: list[object] = []

        def other() -> None:
            with st.db.loop_reading() as conn:
                seen.append(conn)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert kept is not None and seen and seen[0] is not kept[1]
        assert st.db._loop_conn is kept
    finally:
        st.close()


def test_a_storage_error_drops_the_kept_connection(tmp_path: Path) -> None:
    st, _ = _store(tmp_path)
    try:
        with st.db.loop_reading():
            pass
        first = st.db._loop_conn
        with pytest.raises(StoreUnavailableError), st.db.loop_reading() as conn:
            raise sa.exc.OperationalError("SELECT 1", {}, Exception("disk I/O error"))
        assert st.db._loop_conn is None
        with st.db.loop_reading() as conn:
            assert _count(conn) == 0
        assert st.db._loop_conn is not None and st.db._loop_conn is not first
    finally:
        st.close()


def test_a_read_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    st, sid = _store(tmp_path)
    holding, done = threading.Event(), threading.Event()

    def writer() -> None:  # holds SQLite's write lock until the reader has finished
        with st.db.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE items SET open_slots = open_slots")
            holding.set()
            done.wait(30)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert holding.wait(30)
        result: list[object] = []
        reader = threading.Thread(target=lambda: result.append(st.peek_in_session(sid, on_loop=True)))
        reader.start()
        reader.join(10)  # WAL: never waits for the writer (a wait would hang until done is set)
        assert not reader.is_alive() and result == [(True, None)]
    finally:
        done.set()
        t.join()
        st.close()
