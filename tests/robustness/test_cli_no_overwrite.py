"""No command overwrites one of its inputs (issue 11, item 1).

Every verb that writes a file refuses, before any work, an output that is the same file as an
input (run, collection, split list, labels, annotation store) or as another output: the same
path, ``./x`` vs ``x``, an absolute path, a symlink and a hard link. Exit code 2, one line naming
the output and the input, and the input is byte-for-byte unchanged.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from tests.cli_helpers import refused, write_1ka_run_and_collection

from fireval.cli import main
from fireval.core import InputError


def _refused(args: list[str], capsys) -> str:
    _, err = refused(args, capsys)
    assert "refusing to overwrite an input" in err or "are the same file" in err, err
    return err


@pytest.fixture()
def work(tmp_path, monkeypatch):
    """A directory with a good 1k-A run, its collection and a qrels file; cwd is that directory."""
    monkeypatch.chdir(tmp_path)
    write_1ka_run_and_collection(tmp_path)
    (tmp_path / "coll.csv").write_bytes(gzip.decompress((tmp_path / "coll.csv.gz").read_bytes()))
    (tmp_path / "labels.qrels").write_text("ret0 0 video9770 1\n")
    return tmp_path


def _snapshot(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.iterdir() if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "good.npy", "--json", "good.npy"],
        ["evaluate", "good.npy", "--json", "./good.npy"],
        ["evaluate", "./good.npy", "--per-query", "good.npy.tsv", "--json", "good.npy.tsv"],
        ["evaluate", "good.npy", "-c", "coll.csv", "--per-query", "coll.csv"],
        ["evaluate", "good.npy", "-l", "labels.qrels", "--json", "labels.qrels"],
        ["compare", "good.npy", "good.npy", "--json", "good.npy"],
        ["report", "good.npy", "-o", "good.npy"],
        ["report", "good.npy", "-l", "labels.qrels", "-o", "r.html", "--markdown", "labels.qrels"],
        ["report", "good.npy", "-o", "r.html", "--markdown", "r.md", "--latex", "./r.md"],
        ["pool", "good.npy", "-c", "coll.csv", "-o", "coll.csv"],
        ["pool", "good.npy", "-c", "coll.csv.gz", "-o", "coll.csv.gz"],
        ["pool", "mine=good.npy", "-o", "good.npy"],
        ["proxies", "build", "-c", "coll.csv.gz", "-o", "coll.csv.gz"],
        ["labels", "auto", "--threshold", "0.9", "-c", "coll.csv.gz", "-o", "coll.csv.gz"],
    ],
)
def test_output_equal_to_an_input_is_refused(work, capsys, args):
    before = _snapshot(work)
    _refused(args, capsys)
    assert _snapshot(work) == before


def test_absolute_symlink_and_hard_link(work, capsys):
    before = _snapshot(work)
    _refused(["evaluate", "good.npy", "--json", str(work / "good.npy")], capsys)
    os.symlink(work / "good.npy", work / "link.json")
    _refused(["evaluate", "good.npy", "--json", "link.json"], capsys)
    os.link(work / "good.npy", work / "hard.npy")
    err = _refused(["evaluate", "hard.npy", "--json", "good.npy"], capsys)
    assert "good.npy" in err and "hard.npy" in err
    (work / "sub").mkdir()
    os.symlink(work, work / "sub" / "up")
    _refused(["evaluate", "good.npy", "--json", "sub/up/good.npy"], capsys)
    assert {k: v for k, v in _snapshot(work).items() if k != "hard.npy"} == before


@pytest.mark.parametrize("db_spec", ["x.db", "sqlite:///x.db", "./x.db"])
def test_judgments_export_onto_its_store(work, capsys, db_spec):
    with pytest.raises(SystemExit):
        main(["judgments", "init", "--db", "x.db"])
    capsys.readouterr()
    store = (work / "x.db").read_bytes()
    err = _refused(["judgments", "export", "--db", db_spec, "-o", "x.db"], capsys)
    assert "annotation store" in err
    assert (work / "x.db").read_bytes() == store
    with pytest.raises(SystemExit) as info:
        main(["judgments", "status", "--db", "x.db"])
    assert info.value.code in (0, None)


def test_library_guard():
    from fireval.paths import guard_outputs, local_file, same_file

    assert local_file("sqlite:///a/b.db") == Path("a/b.db")
    assert local_file("sqlite:////abs/b.db?mode=ro") == Path("/abs/b.db")
    assert local_file("sqlite://") is None and local_file("sqlite:///:memory:") is None
    assert local_file("postgresql+psycopg2://u:p@127.0.0.1/db") is None
    assert same_file("x", "./x") and not same_file("x", "y")
    with pytest.raises(InputError, match="out.json: output --json is the same file as the run"):
        guard_outputs([("--json", "out.json")], [("run", "./out.json")])
    with pytest.raises(InputError, match="outputs --a and --b are the same file"):
        guard_outputs([("--a", "o"), ("--b", "./o")], [])
    guard_outputs([("--json", None), ("--out", "o2")], [("run", "o1"), ("store", "postgresql://h/db")])
