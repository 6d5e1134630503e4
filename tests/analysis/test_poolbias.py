from __future__ import annotations

import numpy as np
import pytest

from fireval.analysis.poolbias import (
    OTHER_POOL,
    Provenance,
    judged_at_k,
    leave_one_out,
    pool_bias_table,
    provenance_from_topk,
)
from fireval.core.judgments import Judgments, merge


def _labels() -> Judgments:
    return merge(
        [
            Judgments.instance([0, 1, 2], 4),
            Judgments.from_arrays((3, 4), [0, 0, 1, 2], [1, 2, 3, 3], [1, 0, 1, 1], "human"),
        ]
    )


def test_provenance_from_topk_and_mapping_agree() -> None:
    tops = {"A": np.array([[1, 2], [3, 1], [0, -1]]), "B": np.array([[1, 3], [0, 1], [3, 2]])}
    p1 = provenance_from_topk(tops, (3, 4), "t2v")
    mapping: dict[tuple[int, int], set[str]] = {}
    for name, t in tops.items():
        for q in range(3):
            for d in t[q]:
                if d >= 0:
                    mapping.setdefault((q, int(d)), set()).add(name)
    p2 = Provenance.from_mapping((3, 4), mapping, runs=["A", "B"])
    np.testing.assert_array_equal(p1.keys, p2.keys)
    np.testing.assert_array_equal(p1.bits, p2.bits)
    # v2t: queries are videos, lists hold caption indices
    p3 = provenance_from_topk({"A": np.array([[0], [2], [1], [-1]])}, (3, 4), "v2t")
    np.testing.assert_array_equal(p3.lookup([0, 2, 1, 0], [0, 1, 2, 1]), [1, 1, 1, 0])


def test_leave_one_out_keeps_unpooled_and_others() -> None:
    j = _labels()
    prov = Provenance.from_mapping((3, 4), {(0, 1): {"A"}, (0, 2): {"A", "B"}, (1, 3): {"B"}, (2, 3): {"A"}})
    loo_a = leave_one_out(j, prov, "A")
    pairs = set(zip(loo_a.rows.tolist(), loo_a.cols.tolist()))
    # instance (0,0),(1,1),(2,2) unpooled -> kept; (0,2) also from B -> kept; (1,3) from B -> kept
    assert pairs == {(0, 0), (1, 1), (2, 2), (0, 2), (1, 3)}
    loo_b = leave_one_out(j, prov, "B")
    assert (1, 3) not in set(zip(loo_b.rows.tolist(), loo_b.cols.tolist()))
    assert len(loo_b) == len(j) - 1
    # instance labels are never removed, even when a run's pool proposed them
    prov2 = Provenance.from_mapping((3, 4), {(0, 0): {"A"}, (1, 3): {"A"}})
    loo = leave_one_out(j, prov2, "A")
    assert set(zip(loo.rows.tolist(), loo.cols.tolist())) == {(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (2, 3)}
    assert len(leave_one_out(j, prov2, "A", pooled=("human", "instance"))) == len(j) - 2


def test_judged_at_k() -> None:
    j = _labels()
    top = np.array([[0, 3], [3, 1], [2, -1]])
    np.testing.assert_allclose(judged_at_k(top, j, "t2v"), [0.5, 1.0, 0.5])


def test_pool_bias_table_with_simple_scorer() -> None:
    j = _labels()
    prov = Provenance.from_mapping((3, 4), {(0, 1): {"A"}, (1, 3): {"B"}, (2, 3): {"A"}})

    def scorer(run: str, labels: Judgments) -> dict[str, float]:
        return {"relevant": float((labels.grades > 0).sum())}

    rows = pool_bias_table(["A", "B"], j, prov, scorer)
    assert rows[0] == {
        "run": "A",
        "measure": "relevant",
        "all_labels": 6.0,
        "leave_one_out": 4.0,
        "drop": 2.0,
    }
    assert rows[1]["drop"] == pytest.approx(1.0)
    # given full scores are used as they are; the scorer only sees the reduced labels
    seen: list[int] = []

    def loo_only(run: str, labels: Judgments) -> dict[str, float]:
        seen.append(len(labels))
        return scorer(run, labels)

    given = pool_bias_table(["A"], j, prov, loo_only, full_scores={"A": {"relevant": 10.0}})
    assert given[0]["all_labels"] == 10.0 and given[0]["drop"] == 6.0 and seen == [len(j) - 2]


def test_provenance_from_fire_style_details() -> None:
    details = {
        (0, 1): {"models": ["CLIP4CLIP"]},
        (1, 3): {"models": ["CE", "SSB"]},
        (2, 3): {"models": ["ssb"]},
    }
    human = Judgments.from_arrays((3, 4), [0, 1, 2], [1, 3, 3], [1, 1, 1], "human", details=details)
    j = merge([Judgments.instance([0, 1, 2], 4), human])
    prov = Provenance.from_details(j, {"c4c": "CLIP4CLIP", "ssb": "SSB"})
    assert prov.runs == ("c4c", "ssb", OTHER_POOL)
    np.testing.assert_array_equal(prov.lookup([0, 1, 2, 0], [1, 3, 3, 0]), [1, 2 | 4, 2, 0])
    # leaving out ssb: (2,3) was proposed by SSB only -> removed; (1,3) also by CE (not a run here) -> kept
    loo = leave_one_out(j, prov, "ssb")
    assert set(zip(loo.rows.tolist(), loo.cols.tolist())) == {(0, 0), (1, 1), (2, 2), (0, 1), (1, 3)}
    with pytest.raises(Exception, match="no label names"):
        Provenance.from_details(j, {"x": "OTHER"})
