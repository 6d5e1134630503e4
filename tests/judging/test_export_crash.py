"""The FIRE file and its provenance sidecar as a pair: interrupted exports and what a reader sees.

The failure is injected between (and before) the two renames, in process (``os.replace``
raising) and by killing a child process at that point; the reader
(:func:`fireval.judging.provenance.read_sidecar`) must refuse every mismatched pair with a
one-line error and accept every consistent one; leftover temporaries are removed by the next
export.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fireval.core.errors import InputError
from fireval.judging import export as X
from fireval.judging import provenance as P
from fireval.judging.export import export_fire_json
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store


def small_store(path: Path) -> tuple[str, int]:
    url = f"sqlite:///{path}"
    st = Store(url)
    try:
        st.add_items(
            [PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"CLIP4CLIP": 1}) for i in range(4)], "MSRVTT"
        )
        a = st.add_annotator("a")[0]
        st.submit(a.id, st.next_item(a.id).id, "relevant")
        return url, a.id
    finally:
        st.close()


def answer_one_more(url: str, annotator: int) -> None:
    st = Store(url)
    try:
        st.submit(annotator, st.next_item(annotator).id, "irrelevant")
    finally:
        st.close()


def temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def refused(side: Path, match: str) -> str:
    with pytest.raises(InputError, match=match) as info:
        P.read_sidecar(side)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(side))
    return msg


@pytest.mark.parametrize("where", ["before", "between"])
def test_a_failure_at_a_rename_leaves_a_pair_the_reader_can_judge(tmp_path, monkeypatch, where) -> None:
    url, a = small_store(tmp_path / "s.db")
    out, side = tmp_path / "f.json", tmp_path / "f.provenance.json"
    export_fire_json(url, out, provenance=side)
    old_fire, old_side = out.read_bytes(), side.read_bytes()
    assert P.read_sidecar(side)["fire_json"]["sha256"] == P.sha256_of(out)
    answer_one_more(url, a)  # the next export differs

    real = os.replace
    fail_at = side if where == "before" else out

    def failing(src, dst, *args, **kw):  # type: ignore[no-untyped-def]
        if os.fspath(dst) == os.fspath(fail_at):
            raise OSError(errno.EIO, "Input/output error")
        return real(src, dst, *args, **kw)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError) as info:
        export_fire_json(url, out, provenance=side)
    monkeypatch.setattr(os, "replace", real)
    assert out.read_bytes() == old_fire  # the FIRE file is replaced last: still the old, whole file
    assert temporaries(tmp_path) == []  # an exception cleans its temporaries up
    if where == "before":  # both old: a consistent pair
        assert side.read_bytes() == old_side
        assert P.read_sidecar(side)["summary"]["labels"] == 1
    else:  # a new sidecar beside the old FIRE file: the reader refuses the pair
        assert side.read_bytes() != old_side
        assert "export again" in str(info.value) and str(side) in str(info.value)
        refused(side, "does not describe .*f.json.*different exports")
        with pytest.raises(InputError, match="does not describe"):  # whoever names the FIRE file
            P.read_sidecar(side, out)
    export_fire_json(url, out, provenance=side)  # the next export repairs the pair
    doc = P.read_sidecar(side)
    assert doc["summary"]["labels"] == 2 and len(json.loads(out.read_text())["annotations"]) == 2


CHILD = """
import os, sys
from fireval.judging.export import export_fire_json
store, out, side = sys.argv[1:4]
real = os.replace
def dying(src, dst, *args, **kw):
    if os.fspath(dst) == out:
        os._exit(9)  # killed between the two renames: no cleanup of any kind
    return real(src, dst, *args, **kw)
os.replace = dying
export_fire_json(store, out, provenance=side)
"""


def killed_export(url: str, out: Path, side: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-c", CHILD, url, str(out), str(side)], capture_output=True, text=True
    )
    assert r.returncode == 9, r.stderr


def test_an_export_killed_between_the_renames(tmp_path) -> None:
    url, a = small_store(tmp_path / "s.db")
    out, side = tmp_path / "f.json", tmp_path / "f.provenance.json"
    # the first export ever is killed: a sidecar without its FIRE file
    killed_export(url, out, side)
    assert not out.exists() and side.exists()
    refused(side, "does not exist")
    left = temporaries(tmp_path)
    assert len(left) == 1 and left[0].startswith(".f.json.") and left[0].endswith(".export.tmp")
    # an export that completes removes the dead one's temporary
    export_fire_json(url, out, provenance=side)
    assert temporaries(tmp_path) == []
    good_fire = out.read_bytes()
    assert P.read_sidecar(side)["summary"]["labels"] == 1
    # killed again after a change: the new sidecar beside the old FIRE file
    answer_one_more(url, a)
    killed_export(url, out, side)
    assert out.read_bytes() == good_fire
    json.loads(good_fire)  # the FIRE file alone is still the old, complete one
    refused(side, "does not describe")
    assert len(temporaries(tmp_path)) == 1
    export_fire_json(url, out, provenance=side)
    assert temporaries(tmp_path) == [] and P.read_sidecar(side)["summary"]["labels"] == 2


def test_only_dead_exports_temporaries_are_removed(tmp_path) -> None:
    target = tmp_path / "f.json"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    names = {
        f".f.json.{X._HOST}-{dead_pid}-abc.export.tmp": False,  # a dead export's: removed
        f"..f.json.{X._HOST}-{dead_pid}-abc.export.tmp.xyz.tmp": False,  # its atomic_write inner one
        f".f.json.{X._HOST}-{os.getppid()}-abc.export.tmp": True,  # a live process's: kept
        f".f.json.{X._HOST}-{os.getpid()}-abc.export.tmp": True,  # this process's: kept
        f".f.json.{'0' * 8 if X._HOST != '0' * 8 else '1' * 8}-{dead_pid}-abc.export.tmp": True,  # another host's
        f".g.json.{X._HOST}-{dead_pid}-abc.export.tmp": True,  # another output's
        f".f.json.{X._HOST}-{dead_pid}-abc.export": True,  # not a temporary
        "f.json": True,
    }
    for n in names:
        (tmp_path / n).write_text("x")
    removed = X.remove_stale_temporaries(target)
    assert sorted(p.name for p in removed) == sorted(n for n, keep in names.items() if not keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n for n, keep in names.items() if keep)


def test_renames_are_ordered_and_fsynced(tmp_path, monkeypatch) -> None:
    url, _ = small_store(tmp_path / "s.db")
    out, side = tmp_path / "out" / "f.json", tmp_path / "prov" / "f.provenance.json"
    steps: list[tuple[str, str]] = []
    real_replace, real_fsync_dir = os.replace, X._fsync_dir

    def replace(src, dst, *args, **kw):  # type: ignore[no-untyped-def]
        if Path(dst) in (out, side):
            steps.append(("replace", Path(dst).name))
        return real_replace(src, dst, *args, **kw)

    def fsync_dir(d):  # type: ignore[no-untyped-def]
        steps.append(("fsync dir", Path(d).name))
        real_fsync_dir(d)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(X, "_fsync_dir", fsync_dir)
    export_fire_json(url, out, provenance=side)
    assert steps == [
        ("replace", "f.provenance.json"),
        ("fsync dir", "prov"),
        ("replace", "f.json"),
        ("fsync dir", "out"),
    ]
    doc = P.read_sidecar(side)  # in another directory: found through fire_json.path
    assert doc["fire_json"]["path"] == "../out/f.json" and doc["fire_json"]["file"] == "f.json"


def test_the_reader_refuses_what_is_not_a_consistent_sidecar(tmp_path) -> None:
    url, _ = small_store(tmp_path / "s.db")
    out, side = tmp_path / "f.json", tmp_path / "f.provenance.json"
    export_fire_json(url, out, provenance=side)
    doc = json.loads(side.read_text())
    bad = tmp_path / "bad.json"
    for text, match in (
        ("{not json", "not JSON"),
        (json.dumps({"format": "something else"}), "expected format 'fireval-provenance'"),
        (json.dumps({**doc, "version": 99}), "version 99"),
        (json.dumps({**doc, "fire_json": {}}), "names no FIRE file"),
        (json.dumps({**doc, "fire_json": {**doc["fire_json"], "sha256": "0" * 64}}), "does not describe"),
    ):
        bad.write_text(text)
        refused(bad, match)
    refused(tmp_path / "missing.json", "cannot read the provenance sidecar")
    # a version-1 sidecar (no fire_json.path) is read: its FIRE file is beside it
    v1 = {**doc, "version": 1, "fire_json": {k: v for k, v in doc["fire_json"].items() if k != "path"}}
    bad.write_text(json.dumps(v1))
    assert P.read_sidecar(bad)["version"] == 1
    out.write_text(out.read_text() + " ")  # the FIRE file changed by hand
    refused(side, "does not describe")
    with pytest.raises(InputError, match="cannot be the FIRE file"):
        export_fire_json(url, out, provenance=out)
