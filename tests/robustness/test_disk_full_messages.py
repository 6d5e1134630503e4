"""A full disk names the condition and the user's file, never a savepoint or a temporary (issue 26, item 9).

- ``judgments load`` when SQLite reports SQLITE_FULL mid-transaction (it rolls the transaction
  back itself, as on a real full disk: simulated by a cursor listener that rolls back and raises
  "database or disk is full"): one line naming the store file and "disk is full", exit 2; it used
  to say "no such savepoint: fireval_op". Nothing is stored; the store works afterwards.
- ``judgments export`` when the disk fills while writing (ENOSPC from ``fsync``): one line naming
  the output file, never its ``.export.tmp`` temporary, and no file left behind.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from fireval.cli import main
from fireval.judging.store import Store

POOL = '{"format": "fireval-pool", "version": 1}\n' + "".join(
    json.dumps(
        {
            "caption": f"cap {i}",
            "caption_ids": [f"c{i}"],
            "video_id": f"v{i}",
            "runs": {"a": 1},
            "double": False,
        }
    )
    + "\n"
    for i in range(5)
)


def _run(args, capsys) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(args)
    return int(info.value.code or 0), capsys.readouterr().err


@pytest.fixture()
def store(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pool.jsonl").write_text(POOL)
    assert _run(["judgments", "init", "--db", "s.db"], capsys)[0] == 0
    return tmp_path / "s.db"


def test_load_on_a_full_disk_says_so(store, capsys):
    def full(conn, cursor, statement, params, context, executemany):
        if statement.lstrip().upper().startswith("INSERT INTO ITEMS"):
            cursor.execute("ROLLBACK")  # what SQLite does on SQLITE_FULL in a transaction
            raise sqlite3.OperationalError("database or disk is full")

    event.listen(Engine, "before_cursor_execute", full)
    try:
        code, err = _run(["judgments", "load", "pool.jsonl", "--db", "s.db"], capsys)
    finally:
        event.remove(Engine, "before_cursor_execute", full)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "savepoint" not in err and "Traceback" not in err
    assert "disk is full" in err and "s.db" in err, err
    st = Store(str(store), create=False)
    try:
        assert st.items_table() == []
    finally:
        st.close()
    code, err = _run(["judgments", "load", "pool.jsonl", "--db", "s.db"], capsys)
    assert code == 0, err


def test_export_on_a_full_disk_names_the_output(store, tmp_path, capsys, monkeypatch):
    assert _run(["judgments", "load", "pool.jsonl", "--db", "s.db"], capsys)[0] == 0
    (tmp_path / "out").mkdir()

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)
    code, err = _run(["judgments", "export", "--db", "s.db", "-o", "out/labels.json", "--extended"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "out/labels.json" in err and "No space left on device" in err, err
    assert ".tmp" not in err, err
    assert list((tmp_path / "out").iterdir()) == []
