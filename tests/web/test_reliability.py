"""A real server process on loopback: concurrent annotators, kill -9, restart.

Small load here (10 annotators x 200 labels); ``benchmarks/load_annotation.py`` runs 50 annotators
at a larger size on SQLite and PostgreSQL and prints the figures.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import sqlalchemy as sa
from benchmarks.loadgen import ServerProcess, run_load

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store

pytestmark = pytest.mark.slow


def make_store(path, n_items: int, n_annotators: int) -> tuple[str, dict[str, str]]:
    db = f"sqlite:///{path}"
    st = Store(db)
    st.add_items(
        [
            PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}, double=(i % 10 == 0))
            for i in range(n_items)
        ],
        "T",
    )
    tokens = {f"ann{k}": st.add_annotator(f"ann{k}")[1] for k in range(n_annotators)}
    st.close()
    return db, tokens


def db_labels(db: str) -> list[tuple[int, int, int]]:
    st = Store(db, upgrade=False)
    try:
        v = st.votes()
        return list(zip(v["label_id"].tolist(), v["item_id"].tolist(), v["annotator_id"].tolist()))
    finally:
        st.close()


def test_concurrent_load_no_label_lost_or_duplicated(tmp_path) -> None:
    db, tokens = make_store(tmp_path / "load.db", 400, 10)
    server = ServerProcess(db, log=tmp_path / "server.log").start()
    try:
        res = run_load(server.url, tokens, 200, seed=1, secret=server.secret)
    finally:
        server.stop()
    assert res.errors == []
    assert len(res.acked) >= 200
    rows = db_labels(db)
    acked_ids = sorted(lid for lid, _, _ in res.acked)
    assert sorted(lid for lid, _, _ in rows) == acked_ids  # nothing lost, nothing extra
    assert len(set(acked_ids)) == len(acked_ids)
    assert len({(i, a) for _, i, a in rows}) == len(rows)  # one label per (item, annotator)
    assert res.duplicates_ok > 0  # resubmissions were answered as duplicates
    per_item = np.bincount([i for _, i, _ in rows])
    assert per_item.max() <= 3
    print(
        f"load: {len(res.acked)} labels in {res.elapsed:.2f}s, p50 {res.percentile(50) * 1000:.1f} ms, "
        f"p95 {res.percentile(95) * 1000:.1f} ms"
    )


def test_kill9_keeps_every_acknowledged_label(tmp_path) -> None:
    db, tokens = make_store(tmp_path / "crash.db", 2000, 8)
    server = ServerProcess(db, log=tmp_path / "server.log").start()
    stop = threading.Event()
    out = {}
    worker = threading.Thread(
        target=lambda: out.setdefault(
            "res", run_load(server.url, tokens, 10**6, stop=stop, secret=server.secret)
        )
    )
    worker.start()
    deadline = time.monotonic() + 60
    db_path = str(tmp_path / "crash.db")
    engine = sa.create_engine(f"sqlite:///{db_path}")
    try:
        while time.monotonic() < deadline:  # bounded wait until the run is well under way
            with engine.connect() as conn:
                if conn.exec_driver_sql("SELECT count(*) FROM labels").scalar_one() >= 150:
                    break
            time.sleep(0.05)
        server.kill9()
    finally:
        engine.dispose()
        stop.set()
        worker.join(60)
    res = out["res"]
    assert len(res.acked) >= 100
    assert any("transport" in e for e in res.errors)  # clients saw the crash
    # restart on the same database: every acknowledged label is there
    server2 = ServerProcess(db, log=tmp_path / "server2.log").start()
    try:
        st = Store(db, upgrade=False)
        with st.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
        st.close()
        present = {lid for lid, _, _ in db_labels(db)}
        assert {lid for lid, _, _ in res.acked} <= present
        # at most the in-flight requests (one per annotator) committed without an acknowledgement
        assert len(present) - len(res.acked) <= len(tokens)
        # the restarted server keeps serving
        more = run_load(server2.url, dict(list(tokens.items())[:2]), 20, seed=5, secret=server2.secret)
        assert more.errors == [] and len(more.acked) >= 20
    finally:
        server2.stop()
