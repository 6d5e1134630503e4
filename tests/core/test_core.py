"""The core data model: validation, merge policy, direction transposition, score checks."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.core import (
    Collection,
    ConflictError,
    Direction,
    FirevalError,
    InputError,
    Judgments,
    RankedLists,
    Run,
    merge,
    normalise,
)


def small_collection() -> Collection:
    return Collection.from_pairs(
        "toy",
        [("c0", "v0", "A man plays guitar"), ("c1", "v1", "a man  plays guitar/"), ("c2", "v0", "dog runs")],
        video_ids=["v0", "v1", "v2"],
    )


def test_normalise_matches_documented_examples():
    assert (
        normalise("a woman  creating a fondant baby and flower")
        == "a woman creating a fondant baby and flower"
    )
    assert normalise("a fearful animation scene/") == "a fearful animation scene"
    assert normalise("  It's   A_Test!! ") == "it s a test"


def test_collection_indices_and_repeats():
    c = small_collection()
    assert c.shape == (3, 3)
    assert c.normalised_index["a man plays guitar"] == [0, 1]
    assert list(c.captions_of(0)) == [0, 2]
    assert c.query_ids("v2t") == ("v0", "v1", "v2")
    assert c.captions[1] == "a man  plays guitar/"  # verbatim


@pytest.mark.parametrize(
    "pairs, videos, message",
    [
        ([("c0", "v0", "x"), ("c0", "v1", "y")], None, "duplicate caption id 'c0'"),
        ([("c0", "v0", "x")], ["v0", "v0"], "duplicate video id 'v0'"),
        ([("c0", "v9", "x")], ["v0"], "unknown video 'v9'"),
        ([], None, "no captions"),
    ],
)
def test_collection_rejects_bad_input(pairs, videos, message):
    with pytest.raises(InputError, match=message):
        Collection.from_pairs("bad", pairs, video_ids=videos, source="bad.csv")


def test_instance_judgments_and_transpose():
    c = small_collection()
    j = c.instance_judgments()
    t2v = j.matrix(Direction.T2V).toarray()
    v2t = j.matrix("v2t").toarray()
    assert t2v.tolist() == [[1, 0, 0], [0, 1, 0], [1, 0, 0]]
    np.testing.assert_array_equal(v2t, t2v.T)


def test_repeated_consistent_labels_collapse_and_conflicts_raise():
    j = Judgments.from_arrays((2, 2), [0, 0, 1], [1, 1, 0], [1, 1, 0], "human")
    assert len(j) == 2
    with pytest.raises(ConflictError, match="conflicting grades 1 and 0 for caption #0 and video #1"):
        Judgments.from_arrays((2, 2), [0, 0], [1, 1], [1, 0], "human", origin="labels.json")


@pytest.mark.parametrize(
    "rows, cols, grades, message",
    [
        ([0], [5], [1], "outside the 2 x 2"),
        ([0], [0], [np.nan], "finite"),
        ([0], [0], [-1], ">= 0"),
    ],
)
def test_judgments_reject_bad_values(rows, cols, grades, message):
    with pytest.raises(InputError, match=message):
        Judgments.from_arrays((2, 2), rows, cols, grades, "human")


def test_unknown_source_kind():
    with pytest.raises(InputError, match="unknown label source"):
        Judgments.from_arrays((1, 1), [0], [0], [1], "crowd")


def test_merge_precedence_human_overrides_instance_and_keeps_provenance():
    c = small_collection()
    inst = c.instance_judgments()
    human = Judgments.from_arrays(c.shape, [0, 1, 2], [1, 1, 0], [1, 0, 1], "human", unresolved=[[2, 2]])
    proxy = Judgments.from_arrays(c.shape, [1, 2], [0, 2], [0.3, 0.9], "proxy:bow")
    m = merge([inst, proxy, human])
    got = {(int(r), int(c_)): (g, s) for r, c_, g, s in zip(m.rows, m.cols, m.grades, m.source_per_label)}
    assert got[(1, 1)] == (0.0, "human")  # human irrelevant overrides the instance positive
    assert got[(0, 1)] == (1.0, "human")
    assert got[(0, 0)] == (1.0, "instance")
    assert got[(2, 2)] == (0.9, "proxy:bow")  # unresolved by humans, labelled by the proxy
    assert got[(1, 0)] == (0.3, "proxy:bow")
    # the other order of precedence flips the (1, 1) winner
    m2 = merge([inst, human], precedence=("instance", "human"))
    g2 = {(int(r), int(c_)): g for r, c_, g in zip(m2.rows, m2.cols, m2.grades)}
    assert g2[(1, 1)] == 1.0
    assert m.unresolved.tolist() == [[2, 2]]
    assert m.counts_by_source()["human"] == {"relevant": 2, "irrelevant": 1}


def test_merge_rejects_mismatched_shapes_and_empty():
    with pytest.raises(InputError, match="different collections"):
        merge([Judgments.empty((2, 2)), Judgments.empty((2, 3))])
    with pytest.raises(InputError, match="no label sources"):
        merge([])


def test_from_source_and_binarised():
    j = merge(
        [
            Judgments.from_arrays((2, 2), [0], [0], [1], "instance"),
            Judgments.from_arrays((2, 2), [1], [1], [0.4], "proxy:bow"),
        ]
    )
    assert len(j.from_source("proxy")) == 1
    assert len(j.from_source("instance", "proxy:bow")) == 2
    assert j.binarised(0.5).grades.tolist() == [1.0, 0.0]


def test_run_blocks_both_directions_and_rejects_nan():
    s = np.arange(12, dtype=np.float32).reshape(4, 3)
    run = Run("r", scores=s)
    np.testing.assert_array_equal(run.block("v2t", 1, 3), s[:, 1:3].T)
    s2 = s.copy()
    s2[2, 1] = np.nan
    with pytest.raises(InputError, match="NaN at t2v query #2, doc #1"):
        Run("bad", scores=s2).block("t2v", 0, 4)
    # a run read from a file names the file (large memory maps are checked here, not at load)
    with pytest.raises(InputError, match=r"^scores\.npy: score is NaN at v2t query #1, doc #2"):
        Run("bad", scores=s2, source="scores.npy").block("v2t", 0, 3)
    s3 = s.copy()
    s3[0, 0] = -np.inf  # allowed: excluded
    Run("ok", scores=s3).block("t2v", 0, 4)


def test_run_rejects_empty_and_wrong_ndim():
    with pytest.raises(InputError, match="empty"):
        Run("e", scores=np.zeros((0, 3)))
    with pytest.raises(InputError, match="2-D"):
        Run("e", scores=np.zeros(3))


def test_ranked_lists_dense_and_direction_guard():
    lists = RankedLists(
        Direction.V2T, (2, 3), np.array([0, 2, 3]), np.array([2, 0, 1]), np.array([0.9, 0.5, 0.1])
    )
    run = Run("sparse", lists=lists)
    assert run.shape == (3, 2)
    block = run.block("v2t", 0, 2)
    assert block[0].tolist() == [0.5, -np.inf, 0.9] and block[1].tolist() == [-np.inf, 0.1, -np.inf]
    with pytest.raises(FirevalError, match="only ranks v2t"):
        run.block("t2v", 0, 1)


def test_direction_parse():
    assert Direction.parse("V2T") is Direction.V2T
    with pytest.raises(FirevalError, match="unknown direction"):
        Direction.parse("x2y")


def test_matrix_keeps_judged_irrelevant_as_explicit_zeros():
    # the metrics read judged docs from the CSR structure, so grade-0 entries must survive
    j = Judgments.from_arrays((2, 3), [0, 0, 1], [2, 0, 1], [0.0, 2.0, 0.0], "human")
    for d in ("t2v", "v2t"):
        m = j.matrix(d)
        assert m.nnz == len(j) == 3
        assert m.has_sorted_indices
    m = j.matrix("v2t")
    assert m.indptr.tolist() == [0, 1, 2, 3]
    assert m.indices.tolist() == [0, 1, 0] and m.data.tolist() == [2.0, 0.0, 0.0]
