"""`fireval evaluate --unjudged ...,worst,best`: exact bound columns in the bounds table, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run_cli(*args: object) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    cmd = [sys.executable, "-m", "fireval", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def test_bounds_table_gets_exact_columns(shared_data: Path, tmp_path: Path) -> None:
    sims = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    out = tmp_path / "res.json"
    r = run_cli(
        "evaluate", sims, "-c", "msrvtt-1ka", "-d", "t2v", "--no-checks", "--json", out,
        "--unjudged", "lower,condensed,upper,worst,best", "-m", "C@1,AP,Recall@10,MnR,AP_hits@10",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    flat = " ".join(r.stdout.split())
    assert "worst (exact)" in r.stdout and "best (exact)" in r.stdout
    assert "worst / best (exact): the extremes over every labelling" in flat
    rows = {ln.split("│")[4].strip(): ln for ln in r.stdout.splitlines() if ln.count("│") > 8}
    cells = {k: [c.strip() for c in v.split("│")[6:12]] for k, v in rows.items()}
    # worst | unjudged irrelevant | condensed | unjudged relevant | best | condensed reaches
    assert cells["Recall@10‡"] == ["0.1", "65.0", "100.0", "1.0", "96.8", "outside"]
    assert cells["AP‡"][0] == "2.6" and cells["AP‡"][4] == "100.0"
    assert cells["C@1"][:5] == ["34.4", "34.4", "100.0", "100.0", "100.0"]
    assert cells["MnR"][0] == cells["MnR"][1]  # monotone: worst is unjudged irrelevant
    assert cells["AP_hits@10‡"][0] == "24.2" and cells["AP_hits@10‡"][4] == "100.0"
    assert "no exact bound" not in r.stderr
    res = json.loads(out.read_text())
    got = {(x["unjudged"], x["measure"]): x["value"] for x in res["results"]}
    assert got[("worst", "Recall@10")] < got[("lower", "Recall@10")] < got[("best", "Recall@10")]


def test_fire2023_preset_bounds_ap_hits(shared_data: Path, tmp_path: Path) -> None:
    """The fire2023 preset's AP_hits@20 gets exact worst/best in both directions (instance
    labels: every pair but the ground truth is unjudged, so the best puts every unjudged video
    of the top 20 relevant: 100%)."""
    sims = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    out = tmp_path / "fire.json"
    r = run_cli(
        "evaluate", sims, "-c", "msrvtt-1ka", "--preset", "fire2023", "--no-checks", "-q", "--json", out,
        "--unjudged", "lower,worst,best",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "no exact bound" not in r.stderr
    res = json.loads(out.read_text())
    got = {
        (x["direction"], x["unjudged"]): (x["value"], x["n"])
        for x in res["results"]
        if x["measure"] == "AP_hits@20"
    }
    for d in ("t2v", "v2t"):
        (w, nw), (lo, _), (b, nb) = got[(d, "worst")], got[(d, "lower")], got[(d, "best")]
        assert w < lo < b == 1.0 and nw == nb == 1000, d
    assert (
        round(got[("t2v", "worst")][0] * 100, 1) == 18.0 and round(got[("v2t", "worst")][0] * 100, 1) == 17.2
    )


def test_label_dependent_tie_order_is_refused(shared_data: Path) -> None:
    sims = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    r = run_cli("evaluate", sims, "-c", "msrvtt-1ka", "--unjudged", "worst", "--ties", "optimistic", "-q")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "tie-aware or docid" in r.stderr
