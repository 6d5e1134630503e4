"""Real similarity matrices from ../shared/data (MSR-VTT 1k-A, diagonal ground truth)."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.core import Judgments, Run
from fireval.metrics import evaluate

pytestmark = pytest.mark.shared


def _load(shared_data, name: str) -> tuple[Run, Judgments]:
    s = np.load(shared_data / "msrvtt" / "sims" / f"{name}_msrvtt.npy")
    return Run(name, scores=s), Judgments.instance(np.arange(s.shape[0]), s.shape[1])


def test_clip4clip_t2v_recall(shared_data) -> None:
    run, judg = _load(shared_data, "clip4clip")
    ev = evaluate(run, judg, directions="t2v")
    got = [round(100 * ev.value(f"C@{k}"), 1) for k in (1, 5, 10)]
    assert got == [34.4, 55.1, 65.0]
    assert ev.tie_report["t2v"]["queries_with_relevant_in_tie"] == 0


@pytest.mark.parametrize(
    ("name", "tied", "recall"), [("GRAM", 100, [53.1, 74.3, 82.4]), ("VAST", 212, [49.4, 68.0, 74.0])]
)
def test_sparsified_ties(shared_data, name: str, tied: int, recall: list[float]) -> None:
    run, judg = _load(shared_data, name)
    ms = ["C@1", "C@5", "C@10", "AP", "RR", "nDCG@10", "MnR", "MdR", "AP_hits@20"]
    vals = {}
    for ties in ("optimistic", "tie-aware", "pessimistic"):
        ev = evaluate(run, judg, measures=ms, directions="t2v", ties=ties)
        vals[ties] = {m: ev.value(m) for m in ms}
        rep = ev.tie_report["t2v"]
        # ground truth tied at 0 with the ~950 zeros beyond the top 50
        assert rep["queries_with_relevant_in_tie"] == tied
        assert rep["straddling"] == {1: 0, 5: 0, 10: 0, 20: 0}  # those ties start at rank 51
    assert [round(100 * vals["tie-aware"][f"C@{k}"], 1) for k in (1, 5, 10)] == recall
    for m in ms:
        lo, mid, hi = vals["pessimistic"][m], vals["tie-aware"][m], vals["optimistic"][m]
        if m in ("MnR", "MdR"):
            lo, hi = hi, lo
        assert lo <= mid + 1e-12 and mid <= hi + 1e-12, m
    # the ties sit below rank 50, so cutoff measures agree and only full-ranking ones move
    assert vals["optimistic"]["C@10"] == vals["pessimistic"]["C@10"]
    assert vals["optimistic"]["MnR"] < vals["tie-aware"]["MnR"] < vals["pessimistic"]["MnR"]
    assert vals["optimistic"]["AP"] > vals["tie-aware"]["AP"] > vals["pessimistic"]["AP"]
