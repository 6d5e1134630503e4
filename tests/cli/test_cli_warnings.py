"""The clip4clip preset warns when its tie procedure moves a value (heavily tied GRAM matrix)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("matrix, warns", [("GRAM_msrvtt.npy", True), ("clip4clip_msrvtt.npy", False)])
def test_clip4clip_preset_warns_only_on_ties(shared_data: Path, matrix: str, warns: bool):
    d = shared_data / "msrvtt"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fireval",
            "evaluate",
            str(d / "sims" / matrix),
            "-c",
            str(d / "MSRVTT_JSFUSION_test.csv"),
            "--preset",
            "clip4clip",
            "-d",
            "t2v",
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert ("warning:" in r.stderr and "each pair once" in r.stderr) is warns
    if not warns:
        assert "warning:" not in r.stderr
