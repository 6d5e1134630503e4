"""Atomic writes: all or nothing, usual file mode."""

from __future__ import annotations

import stat

import pytest

from fireval.atomic import atomic_write


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_success_replaces_and_uses_umask_mode(tmp_path, monkeypatch, umask, mode):
    import fireval.atomic

    monkeypatch.setattr(fireval.atomic, "_UMASK", umask)
    p = tmp_path / "out.txt"
    p.write_text("old")
    with atomic_write(p) as fh:
        fh.write("new")
    assert p.read_text() == "new"
    assert stat.S_IMODE(p.stat().st_mode) == mode
    assert [f.name for f in tmp_path.iterdir()] == ["out.txt"]


def test_failure_leaves_target_untouched_and_no_temp(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text("old")
    with pytest.raises(RuntimeError), atomic_write(p) as fh:
        fh.write("half")
        raise RuntimeError("boom")
    assert p.read_text() == "old"
    assert [f.name for f in tmp_path.iterdir()] == ["out.txt"]
