"""The README's main job: `fireval demo` on bundled data only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_demo_runs_offline_from_bundled_data(tmp_path: Path):
    env = dict(os.environ, COLUMNS="200", FIREVAL_SHARED_DATA="/nonexistent", HOME=str(tmp_path))
    r = subprocess.run(
        [sys.executable, "-m", "fireval", "demo", "-o", tmp_path / "out"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "unjudged" in r.stdout
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    vals = {(x["direction"], x["unjudged"], x["measure"]): x["value"] for x in res["results"]}
    for d in ("t2v", "v2t"):
        lo, hi = vals[(d, "lower", "C@1")], vals[(d, "upper", "C@1")]
        assert 0 < lo <= hi <= 1
        # the instance labels judge one video per caption: at most 10% of a t2v top 10 is judged
        if d == "t2v":
            assert vals[(d, "lower", "judged@10")] <= 0.1 + 1e-12
    # the oracle sees the other 19 captions of each video: far above chance (1/1000)
    assert vals[("t2v", "lower", "C@1")] > 0.3
    assert (tmp_path / "out" / "per_query.tsv").stat().st_size > 0
    assert "proxy" in res
