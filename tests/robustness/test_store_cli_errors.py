"""Issue 11, items 6 and 7 for ``fireval judgments``: bad input is one line on stderr, exit 2,
no traceback, and nothing written (no store created, no input changed, no 0-byte database).

The full disk is a real one (a 64 KiB tmpfs, where the test may mount one) and, everywhere,
SQLite's own "database or disk is full" error injected at the first write of a new store.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fireval.cli import main
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store


def run(args: list[str], capsys) -> tuple[int, str]:
    """Exit code and stderr of ``fireval ARGS`` run in-process."""
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    return code, err


def assert_clean_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, (n, err)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def npy(tmp_path) -> Path:
    p = tmp_path / "good.npy"
    np.save(p, np.arange(12, dtype=np.float32).reshape(3, 4))
    return p


def test_load_a_matrix_instead_of_a_pool(tmp_path, npy, capsys) -> None:
    before = digest(npy)
    code, err = run(["judgments", "load", str(npy), "--db", str(tmp_path / "s.db")], capsys)
    assert_clean_error(code, err, "good.npy", "not a fireval pool")
    assert digest(npy) == before and not (tmp_path / "s.db").exists()  # the store was not even created


def test_pool_of_an_unknown_version_is_refused(tmp_path, capsys) -> None:
    pool = tmp_path / "p.jsonl"
    pool.write_text('{"format": "fireval-pool", "version": 99}\n{"caption": "a", "video_id": "v"}\n')
    code, err = run(["judgments", "load", str(pool), "--db", str(tmp_path / "s.db")], capsys)
    assert_clean_error(code, err, "p.jsonl:1", "version 99 is not supported")
    assert not (tmp_path / "s.db").exists()


def test_init_on_a_directory(tmp_path, capsys) -> None:
    d = tmp_path / "somedir"
    d.mkdir()
    code, err = run(["judgments", "init", "--db", str(d) + "/"], capsys)
    assert_clean_error(code, err, "somedir", "is a directory")
    assert list(d.iterdir()) == []


def test_status_of_a_file_that_is_not_a_store(npy, capsys) -> None:
    before = digest(npy)
    for verb in (["status"], ["release"], ["annotators"]):
        code, err = run(["judgments", *verb, "--db", str(npy)], capsys)
        assert_clean_error(code, err, "good.npy", "not an annotation store")
    assert digest(npy) == before
    assert not Path(str(npy) + "-wal").exists() and not Path(str(npy) + "-shm").exists()


def test_a_foreign_sqlite_database_is_not_migrated(tmp_path, capsys) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    before = digest(other)
    code, err = run(["judgments", "status", "--db", str(other)], capsys)
    assert_clean_error(code, err, "other.db", "not an annotation store")
    assert digest(other) == before


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("mysql://root:secret@127.0.0.1/x", "unsupported annotation store backend 'mysql'"),
        ("oracle://u@h/x", "unsupported annotation store backend 'oracle'"),
        ("postgresql+psycopg2://a:b@127.0.0.1:1/x", "cannot open annotation store"),  # nothing listening
    ],
)
def test_unsupported_or_unreachable_databases(url: str, needle: str, capsys) -> None:
    for verb in (["init"], ["status"]):
        code, err = run(["judgments", *verb, "--db", url], capsys)
        assert_clean_error(code, err, needle)
        assert "secret" not in err and ":b@" not in err  # passwords are not printed


def test_release_refuses_negative_ages(tmp_path, capsys) -> None:
    db = str(tmp_path / "s.db")
    st = Store(db)
    st.add_items([PoolItem("a", ["c"], "v", {"A": 1})], "T")
    a, _ = st.add_annotator("a")
    b, _ = st.add_annotator("b")
    assert st.next_item(a.id) is not None  # a live claim
    st.close()
    for bad in ("-5", "nan", "-inf"):
        code, err = run(["judgments", "release", "--db", db, "--older-than-minutes", bad], capsys)
        assert_clean_error(code, err, "--older-than-minutes")
    st = Store(db)
    assert st.next_item(b.id) is None  # the claim was not released
    st.close()
    code, err = run(["judgments", "release", "--db", db, "--older-than-minutes", "0"], capsys)
    assert code == 0


def test_init_on_a_full_disk_injected(tmp_path, capsys, monkeypatch) -> None:
    """SQLite's SQLITE_FULL at the first write of a new store: one line, and no file left."""
    import fireval.judging.engine as engine

    def full(_engine, target="head"):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(engine, "migrate", full)
    db = tmp_path / "new.db"
    code, err = run(["judgments", "init", "--db", str(db)], capsys)
    assert_clean_error(code, err, "new.db", "database or disk is full")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no 0-byte database, no -wal/-shm


def _mount_small_tmpfs(where: Path) -> bool:
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True)
    return r.returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_init_on_a_really_full_disk(tmp_path, capsys) -> None:
    mnt = tmp_path / "small"
    if not _mount_small_tmpfs(mnt):
        pytest.skip("cannot mount a tmpfs here")
    try:
        for fill_kib in (64, 40):  # no room at all; room for the file but not for the schema
            filler = mnt / "filler"
            with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as fh:
                fh.write(b"\0" * fill_kib * 1024)
            code, err = run(["judgments", "init", "--db", str(mnt / "full.db")], capsys)
            assert_clean_error(code, err, "full.db")
            assert sorted(p.name for p in mnt.iterdir()) == ["filler"]
            filler.unlink()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)  # lazy: never left mounted
