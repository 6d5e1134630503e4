"""No output may be, or alias, an annotation store or one of its companion files (issue 26, item 1).

``fireval judgments export --db labels.db -o labels.db-wal`` used to exit 0 and, with a server
running, replace the live WAL (acknowledged answers lost). Every output option of every verb
is aimed here at a live store's database, ``-wal``, ``-shm`` and ``-journal`` file (a sqlite3
connection holds the WAL open, as a server would) and through a symlink and a hard link: each is
refused with exit 2 and one line, and the store's files are byte-for-byte unchanged.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from tests.cli_helpers import refused, write_1ka_run_and_collection

from fireval.cli import main
from fireval.core import InputError


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A 1k-A run, its collection and a store ``labels.db``, made once."""
    d = tmp_path_factory.mktemp("companions")
    write_1ka_run_and_collection(d)
    with pytest.raises(SystemExit) as info:
        main(["judgments", "init", "--db", str(d / "labels.db")])
    assert info.value.code in (0, None)
    return d


@pytest.fixture()
def live(template, tmp_path, monkeypatch):
    """A copy of the template with its store ``labels.db`` held open in WAL mode."""
    tmp_path = tmp_path / "w"
    shutil.copytree(template, tmp_path)
    monkeypatch.chdir(tmp_path)
    con = sqlite3.connect(tmp_path / "labels.db")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE scratch(x)")  # a committed write: the WAL has its header
    con.commit()
    con.execute("BEGIN")
    con.execute("SELECT count(*) FROM alembic_version").fetchall()  # a reader: the WAL stays
    assert (tmp_path / "labels.db-wal").exists() and (tmp_path / "labels.db-shm").exists()
    yield tmp_path
    con.close()


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file() and not p.is_symlink()}


def _refused(args: list[str], capsys) -> str:
    capsys.readouterr()
    return refused(args, capsys)[1]


#: every output option of every verb; OUT is replaced by the target
CASES = [
    ["judgments", "export", "--db", "labels.db", "-o", "OUT"],
    ["judgments", "export", "--db", "labels.db", "-o", "x.json", "--provenance", "OUT"],
    ["judgments", "export", "--db", "sqlite:///labels.db", "-o", "OUT"],
    ["judgments", "stats", "--db", "labels.db", "--json", "OUT"],
    ["evaluate", "good.npy", "-c", "coll.csv.gz", "--json", "OUT"],
    ["evaluate", "good.npy", "-c", "coll.csv.gz", "-l", "labels.db", "--per-query", "OUT"],
    ["compare", "good.npy", "good.npy", "-c", "coll.csv.gz", "--json", "OUT"],
    ["report", "good.npy", "-c", "coll.csv.gz", "-o", "OUT"],
    ["report", "good.npy", "-c", "coll.csv.gz", "-o", "r.html", "--markdown", "OUT"],
    ["report", "good.npy", "-c", "coll.csv.gz", "-o", "r.html", "--latex", "OUT"],
    ["pool", "good.npy", "-c", "coll.csv.gz", "-o", "OUT"],
    ["check", "good.npy", "-c", "coll.csv.gz", "--json", "OUT"],
    ["proxies", "build", "-c", "coll.csv.gz", "-o", "OUT"],
    ["labels", "auto", "--threshold", "0.9", "-c", "coll.csv.gz", "-o", "OUT"],
]
TARGETS = ["labels.db-wal", "labels.db-shm", "labels.db-journal", "labels.db", "./sub/../labels.db-wal"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a[:2]) + " " + a[a.index("OUT") - 1])
def test_output_onto_a_store_file_is_refused(live, capsys, args, target):
    before = _files(live)
    err = _refused([target if a == "OUT" else a for a in args], capsys)
    assert "refusing to overwrite" in err or "unknown table format" in err, err
    assert _files(live) == before


def test_symlink_and_hard_link_to_the_wal(live, capsys):
    before = _files(live)
    os.symlink(live / "labels.db-wal", live / "link.json")
    _refused(["judgments", "export", "--db", "labels.db", "-o", "link.json"], capsys)
    os.symlink(live / "labels.db-journal", live / "dangling.json")  # no journal yet: by name
    _refused(["judgments", "export", "--db", "labels.db", "-o", "dangling.json"], capsys)
    os.link(live / "labels.db-wal", live / "hard.json")
    _refused(["evaluate", "good.npy", "-c", "coll.csv.gz", "--json", "hard.json"], capsys)
    assert {k: v for k, v in _files(live).items() if k != "hard.json"} == before


def test_library_writers_refuse_store_files(live):
    from fireval.atomic import atomic_write
    from fireval.paths import guard_outputs

    for name in ("labels.db", "labels.db-wal", "labels.db-shm"):
        with pytest.raises(InputError, match="refusing"), atomic_write(live / name) as fh:
            fh.write("x")
    with pytest.raises(InputError, match="wal file"):
        guard_outputs([("-o", "copy/../labels.db-wal")], [("store", "sqlite:///labels.db")])
    # a store input's companions are protected even before SQLite made them
    with pytest.raises(InputError, match="journal"):
        guard_outputs([("-o", "other.db-journal")], [("store", "other.db")])
