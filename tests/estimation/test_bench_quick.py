"""``benchmarks/bench_estimate.py --quick`` runs end to end on the real 1k-A CLIP4Clip matrix: the
simulated estimates are close to the truth, and the real ``--exact`` rounds need exactly the
sequential minimum of judgments (an independent count, from the top-10 slots)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_estimate.py"


def test_bench_quick(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_estimate", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sims = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    assert mod.main(["--quick", "--sims", str(sims)]) == 0
    out = capsys.readouterr().out
    budget = next(line for line in out.splitlines() if "| budget 500" in line)
    for bias, cover in re.findall(r"bias ([-+][0-9.]+) \(±[0-9.]+\), cover ([0-9.]+)%", budget):
        assert abs(float(bias)) <= 0.5 and float(cover) >= 80.0, budget
    exact = next(line for line in out.splitlines() if "--exact" in line)
    assert "(1.00x)" in exact, exact
    pool = float(re.search(r"pooling its top 10: \d+ \(([0-9.]+)x\)", exact).group(1))  # type: ignore[union-attr]
    assert pool <= 0.2, exact
