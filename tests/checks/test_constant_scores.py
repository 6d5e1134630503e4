"""A TREC run whose listed scores are all one value warns (and is not reinterpreted).

trec_eval orders such lists by docno and ignores the rank column; fireval (tie-aware) treats each
list as one tie. The runs here are the real MSR-VTT 1k-A clip4clip matrix written as a top-100
TREC run with numpy (independent of fireval's writer): with its real scores, with every score
1.0, and with one constant score per query. The rank column stays the real order in all three.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tests.checks.test_cli_check import run_cli

from fireval import api
from fireval.checks import Status, run_checks

DEPTH = 100


def write_run(path: Path, captions: list[str], videos: list[str], sims: np.ndarray, scores: str) -> Path:
    top = np.argsort(-sims, axis=1, kind="stable")[:, :DEPTH]
    with path.open("w") as fh:
        for q, row in enumerate(top):
            for rank, d in enumerate(row, start=1):
                s = {"real": repr(float(sims[q, d])), "one": "1.0", "per_query": str(q % 7)}[scores]
                fh.write(f"{captions[q]} Q0 {videos[d]} {rank} {s} c4c\n")
    return path


@pytest.fixture(scope="module")
def runs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    csv = shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"
    df = pd.read_csv(csv)
    sims = np.load(shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy")
    out = tmp_path_factory.mktemp("trec")
    caps, vids = list(df.key), list(df.video_id)
    paths = {s: write_run(out / f"{s}.trec", caps, vids, sims, s) for s in ("real", "one", "per_query")}
    return {"csv": csv, **paths}


def test_warns_on_constant_scores_only(runs):
    coll = api.load_collection(runs["csv"])
    loaded = {s: api.load_run(runs[s], coll, name=s) for s in ("real", "one", "per_query")}
    rep = run_checks(coll, loaded, pairs=False)
    for s, want in (("one", "the same score (1)"), ("per_query", "one score per query")):
        res = rep.runs[s]["truncation"]
        assert res.status is Status.WARN
        assert want in res.message and "score = -rank" in res.message, res.message
        assert res.figures["directions"]["t2v"]["constant_scores"] is True
        # the cut is still reported, after the note
        assert "cut to its top 100" in res.message
    real = rep.runs["real"]["truncation"]
    assert "carry no order" not in real.message
    assert "constant_scores" not in real.figures["directions"]["t2v"]
    # not reinterpreted: the lists keep their constant scores (one tie each)
    assert np.all(loaded["one"].lists.scores == 1.0)


def test_evaluate_prints_it_and_keeps_it_in_the_evaluation(runs):
    r = run_cli("evaluate", runs["one"], "-c", runs["csv"], "-m", "C@1")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "carry no order" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: one: truncation check warn: t2v:"), r.stderr
    r = run_cli("evaluate", runs["real"], "-c", runs["csv"], "-m", "C@1")
    assert r.returncode == 0 and "carry no order" not in r.stderr, r.stderr
    coll = api.load_collection(runs["csv"])
    run = api.load_run(runs["one"], coll)
    ev = api.evaluate(run, coll, direction="t2v", measures=["C@1"], checks=True)
    assert sum("carry no order" in w for w in ev.warnings) == 1, ev.warnings


def test_queries_missing_at_the_end_neither_crash_nor_hide_it(runs, tmp_path):
    """The last queries absent (empty lists at the end of the CSR arrays), the rest constant."""
    part = tmp_path / "part.trec"
    part.write_text("".join(runs["one"].read_text().splitlines(keepends=True)[: 600 * DEPTH]))
    coll = api.load_collection(runs["csv"])
    rep = run_checks(coll, {"part": api.load_run(part, coll)}, pairs=False)
    msg = rep.runs["part"]["truncation"].message
    assert "carry no order" in msg and "400 retrieve nothing" in msg, msg
