"""The clip4clip preset warns when its tie procedure moves a value (heavily tied GRAM matrix)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_clip4clip_preset_warns_on_ties(shared_data: Path):
    sims = shared_data / "msrvtt" / "sims" / "GRAM_msrvtt.npy"
    csv = shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fireval",
            "evaluate",
            str(sims),
            "-c",
            str(csv),
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
    assert "warning:" in r.stderr and "each pair once" in r.stderr


def test_no_warning_without_ties(shared_data: Path):
    sims = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    csv = shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fireval",
            "evaluate",
            str(sims),
            "-c",
            str(csv),
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
    assert "warning:" not in r.stderr
