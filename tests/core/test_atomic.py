"""Atomic writes: all or nothing, usual file mode."""

from __future__ import annotations

import os
import stat

import pytest

from fireval.atomic import atomic_write


def test_success_replaces_and_uses_umask_mode(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text("old")
    old = os.umask(0o022)
    try:
        with atomic_write(p) as fh:
            fh.write("new")
    finally:
        os.umask(old)
    assert p.read_text() == "new"
    assert stat.S_IMODE(p.stat().st_mode) == 0o644
    assert [f.name for f in tmp_path.iterdir()] == ["out.txt"]


def test_failure_leaves_target_untouched_and_no_temp(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text("old")
    with pytest.raises(RuntimeError), atomic_write(p) as fh:
        fh.write("half")
        raise RuntimeError("boom")
    assert p.read_text() == "old"
    assert [f.name for f in tmp_path.iterdir()] == ["out.txt"]
