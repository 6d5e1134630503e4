"""Issue 11, item 7: crashes and full disks at the store's write, on SQLite and PostgreSQL.

- kill -9 during submits: writer *processes* answer items as fast as they can and print each
  label id once ``submit`` has returned (= acknowledged); all are killed with SIGKILL mid-run.
  Every acknowledged label must be stored (lost = 0), no (item, annotator) pair twice
  (duplicated = 0), at most one committed-but-unacknowledged answer per writer (the one in
  flight), and the store keeps working afterwards.
- ENOSPC at the write: a real full disk (a small tmpfs, where the test may mount one) and the
  SQLite error injected at the label insert: the store raises ``StoreUnavailableError``
  (503 in the web app), nothing acknowledged is lost, and it works again once there is room.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
import sqlalchemy as sa
from benchmarks.loadgen import reset_postgres

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store, StoreUnavailableError

WRITER = r"""
import sys
from fireval.judging.store import Store
url, ann = sys.argv[1], int(sys.argv[2])
st = Store(url, upgrade=False)
it = st.next_item(ann)
while it is not None:
    label = ("relevant", "irrelevant")[(it.id * 31 + ann) % 2]
    res = st.submit(ann, it.id, label, claim_next=True)
    print(res.label_id, res.item_id, flush=True)  # acknowledged: the answer is committed
    it = res.next
print("done", flush=True)
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'crash.db'}"
    pg = os.environ.get("FIREVAL_PG_URL")
    if not pg:
        if os.environ.get("CI"):
            pytest.fail("FIREVAL_PG_URL is not set in CI")
        pytest.skip("FIREVAL_PG_URL not set")
    reset_postgres(pg)
    return pg


def fill(url: str, n_items: int, n_annotators: int) -> list[int]:
    st = Store(url)
    st.add_items(
        [PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}, double=(i % 4 == 0)) for i in range(n_items)],
        "T",
    )
    ids = [st.add_annotator(f"w{k}")[0].id for k in range(n_annotators)]
    st.close()
    return ids


def test_kill9_during_submit_loses_and_duplicates_nothing(url: str) -> None:
    writers = fill(url, 3000, 4)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, str(a)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for a in writers
    ]
    acked: list[tuple[int, int]] = []
    lock = threading.Lock()

    def read(p: subprocess.Popen) -> None:
        assert p.stdout is not None
        for line in p.stdout:
            if re.fullmatch(r"\d+ \d+\n", line):
                with lock:
                    acked.append(tuple(int(x) for x in line.split()))

    readers = [threading.Thread(target=read, args=(p,)) for p in procs]
    for t in readers:
        t.start()
    deadline = time.monotonic() + 120  # bounded: kill once the writers are well under way
    while time.monotonic() < deadline:
        with lock:
            if len(acked) >= 300:
                break
        if all(p.poll() is not None for p in procs):
            break
        time.sleep(0.02)
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
    for p in procs:
        p.wait(30)
    for t in readers:
        t.join(30)
    errors = [p.stderr.read() for p in procs if p.stderr is not None]
    assert all(p.returncode == -signal.SIGKILL for p in procs), errors  # killed mid-run, no crash before
    assert len(acked) >= 300
    st = Store(url, upgrade=False)
    try:
        if not st.is_postgres:
            with st.engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
        v = st.votes()
        stored = set(v["label_id"].tolist())
        acked_ids = [lid for lid, _ in acked]
        lost = set(acked_ids) - stored
        pairs = list(zip(v["item_id"].tolist(), v["annotator_id"].tolist()))
        duplicated = (len(pairs) - len(set(pairs))) + (len(acked_ids) - len(set(acked_ids)))
        assert (len(lost), duplicated) == (0, 0)
        assert len(stored - set(acked_ids)) <= len(writers)  # at most the answers in flight
        # the store goes on: each writer's open item (if any) is still theirs, and answers are taken
        for a in writers:
            it = st.next_item(a)
            assert it is not None
            assert st.submit(a, it.id, "relevant").status == "created"
    finally:
        st.close()


class DiskFull:
    """SQLite's SQLITE_FULL raised at the label insert while ``on`` (fault injection)."""

    def __init__(self, store: Store) -> None:
        self.on = False
        sa.event.listen(store.engine, "before_cursor_execute", self)

    def __call__(self, conn, cursor, statement, params, context, executemany) -> None:
        if self.on and statement.lstrip().upper().startswith("INSERT INTO LABELS"):
            raise sqlite3.OperationalError("database or disk is full")


def answer_all(st: Store, ann: int, n: int) -> list[int]:
    out = []
    for _ in range(n):
        it = st.next_item(ann)
        out.append(st.submit(ann, it.id, "relevant").label_id)
    return out


def test_enospc_injected_at_the_write(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"
    (a,) = fill(url, 50, 1)
    st = Store(url)
    fault = DiskFull(st)
    try:
        acked = answer_all(st, a, 5)
        fault.on = True
        it = st.next_item(a)
        with pytest.raises(StoreUnavailableError, match="database or disk is full"):
            st.submit(a, it.id, "relevant")
        assert sorted(st.votes()["label_id"].tolist()) == sorted(acked)  # nothing lost, nothing half-written
        fault.on = False
        acked.append(st.submit(a, it.id, "relevant").label_id)
        assert sorted(st.votes()["label_id"].tolist()) == sorted(acked)
    finally:
        st.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_really_full_disk_mid_session(tmp_path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True
    ).returncode:
        pytest.skip("cannot mount a tmpfs here")
    st = None
    try:
        url = f"sqlite:///{mnt / 's.db'}"
        (a,) = fill(url, 400, 1)
        st = Store(url)
        acked = answer_all(st, a, 20)
        filler = mnt / "filler"
        with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as fh:  # take every free byte
            while True:
                fh.write(b"\0" * 4096)
        failed = False
        for _ in range(200):  # the WAL's free pages run out within a few answers
            try:
                it = st.next_item(a)  # a claim is a write too
                acked.append(st.submit(a, it.id, "relevant").label_id)
            except StoreUnavailableError as exc:
                assert "database or disk is full" in str(exc)
                failed = True
                break
        assert failed
        filler.unlink()
        acked += answer_all(st, a, 3)  # room again: the store goes on
        st.close()
        st = Store(url, upgrade=False)
        assert sorted(st.votes()["label_id"].tolist()) == sorted(acked)  # lost 0, extra 0
    finally:
        if st is not None:
            st.close()
        subprocess.run(["umount", "-l", str(mnt)], check=False)  # lazy: never left mounted
