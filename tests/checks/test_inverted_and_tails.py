"""Inverted scores (distances) and the two kinds of truncated tails, on real and synthetic runs.

Moved here from tests/qa_pending (test_check_distances.py, test_truncation_message_ranked_lists.py)
once fixed; the messages are checked against what ``api.evaluate`` actually computes.
"""

from __future__ import annotations

import numpy as np
import pytest

from fireval import api
from fireval.checks import run_checks
from fireval.core import Collection, Run
from fireval.formats.trec import read_trec_run, write_trec_run


def _alignment(coll: Collection, run: Run):  # type: ignore[no-untyped-def]
    return run_checks(coll, {run.name: run}, pairs=False).runs[run.name]["alignment"]


def test_negated_clip4clip_is_reported_as_inverted_not_misaligned(shared_data) -> None:
    coll = api.load_collection(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv")
    scores = -np.load(shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy")
    run = api.load_run(scores, coll, name="neg")
    rep = run_checks(coll, {"neg": run}, pairs=False)
    res = rep.runs["neg"]["alignment"]
    msg = str(res.message).lower()
    assert res.failed
    assert "invert" in msg and "negate" in msg
    assert "another order" not in msg
    for fig in res.figures["directions"].values():
        assert fig["inverted"] is True
        assert fig["ratio"] < 0 < fig["ratio_negated"]


def test_real_runs_keep_their_verdicts_negated_or_not(real) -> None:
    """No false alarm: clip4clip passes, GRAM/VAST (another order) stay 'another order' both as
    given and negated (negating a misaligned run does not make it follow the text); only negated
    clip4clip is called inverted."""
    _, coll, runs = real
    for name, run in runs.items():
        for neg in (False, True):
            r = Run(name, scores=-np.asarray(run.scores) if neg else run.scores)
            res = _alignment(coll, r)
            dirs = res.figures["directions"].values()
            if name == "clip4clip" and not neg:
                assert res.status.value == "pass"
            elif name == "clip4clip":
                assert res.failed and "inverted" in res.message
                assert all(f["inverted"] for f in dirs)
            else:
                assert res.failed and "another order" in res.message, (name, neg, res.message)
                assert not any(f.get("inverted") for f in dirs)


def test_negated_and_permuted_is_misaligned_not_inverted(real) -> None:
    """Both wrong at once: the negated scores do not follow the text either, so the order is
    what the message names."""
    _, coll, runs = real
    s = np.asarray(runs["clip4clip"].scores)
    perm = np.random.default_rng(1).permutation(s.shape[1])
    res = _alignment(coll, Run("x", scores=-s[:, perm]))
    assert res.failed and "another order" in res.message and "invert" not in res.message


def test_negation_keeps_unretrieved_cells_unretrieved(real) -> None:
    """A distance matrix with -inf cells (never retrieved): negating must not turn them into +inf."""
    _, coll, runs = real
    s = -np.asarray(runs["clip4clip"].scores, dtype=np.float64)
    s[:, -5:] = -np.inf
    res = _alignment(coll, Run("x", scores=s))
    assert res.failed and "inverted" in res.message


def _cut_collection(n: int = 60) -> tuple[Collection, np.ndarray]:
    coll = Collection.from_pairs("x", [(f"c{i}", f"v{i}", f"caption {i}") for i in range(n)])
    return coll, np.random.default_rng(0).normal(size=(n, n)) + 1.0 * np.eye(n)


def _c_at(run: Run, coll: Collection) -> dict[str, float]:
    ev = api.evaluate(run, coll, measures=["C@10", "C@20", "C@50"], direction="t2v")
    return {r["measure"]: r["value"] for r in ev.records}


def test_ranked_lists_cutoffs_beyond_depth_are_not_called_expectations(tmp_path) -> None:
    coll, s = _cut_collection()
    path = tmp_path / "r.run"
    write_trec_run(path, api.load_run(s, coll), coll, "t2v", depth=10)
    run = read_trec_run(path, coll)
    rep = run_checks(coll, {"r": run}, pairs=False, directions=("t2v",))
    res = rep.runs["r"]["truncation"]
    assert "cut to its top 10" in res.message
    assert "cutoffs beyond 10 are expectations" not in res.message
    assert "not retrieved" in res.message and "C@K for K > 10 equals C@10" in res.message
    assert res.figures["directions"]["t2v"]["tail"] == "unretrieved"
    c = _c_at(run, coll)  # what the message claims is what evaluate does
    assert c["C@10"] == c["C@20"] == c["C@50"] < 1.0


@pytest.mark.parametrize("tail", ["unretrieved", "tie"])
def test_cut_matrix_message_matches_evaluate(tail: str) -> None:
    """A matrix cut to its top 10: -inf below is 'not retrieved' (as ranked lists), a finite tie
    is an expectation; the message says which, and evaluate agrees."""
    coll, s = _cut_collection()
    kth = -np.sort(-s, axis=1)[:, 9:10]
    cut = s.copy()
    cut[s < kth] = -np.inf if tail == "unretrieved" else s.min() - 1.0
    run = Run("m", scores=cut)
    res = run_checks(coll, {"m": run}, pairs=False, directions=("t2v",)).runs["m"]["truncation"]
    assert res.figures["directions"]["t2v"]["tail"] == tail
    assert "cut to its top 10" in res.message
    c = _c_at(run, coll)
    if tail == "unretrieved":
        assert "not retrieved" in res.message and "expectations over an undefined tail" not in res.message
        assert c["C@10"] == c["C@20"] == c["C@50"]
    else:
        assert "cutoffs beyond 10 are expectations over an undefined tail" in res.message
        assert c["C@10"] < c["C@20"] < c["C@50"]
