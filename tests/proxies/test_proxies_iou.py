from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fireval.proxies.iou import binary_matrix, iou_blocks, iou_dense
from fireval.proxies.relevance import _words25, reduce_to_videos


def _py_iou(a: set[str], b: set[str]) -> float:
    # Wray et al.'s create_iou: |a ∩ b| / |a ∪ b|, 0.0001 as denominator for two empty sets
    u = len(a | b)
    return len(a & b) / (u if u else 0.0001)


def _parts(q, d):  # type: ignore[no-untyped-def]
    vocab: dict[str, int] = {}
    qm, vocab = binary_matrix(q, vocab)
    dm, vocab = binary_matrix(d, vocab)
    return (qm, dm)


def test_hand_computed_iou() -> None:
    q = [["man", "dog", "run"], ["cat"], []]
    d = [["dog", "man"], ["cat", "dog", "run", "man"], [], ["bird"]]
    got = iou_dense([_parts(q, d)])
    want = np.array(
        [
            [2 / 3, 3 / 4, 0, 0],
            [0, 1 / 4, 0, 0],
            [0, 0, 0, 0],
        ]
    )
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_pos_style_mean_of_two_ious_hand_computed() -> None:
    verbs = _parts([["run"], ["eat"]], [["run", "jump"], []])
    nouns = _parts([["man"], ["pizza", "man"]], [["man"], ["pizza"]])
    got = iou_dense([verbs, nouns])
    want = np.array([[(1 / 2 + 1) / 2, (0 + 0) / 2], [(0 + 1 / 2) / 2, (0 + 1 / 2) / 2]])
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_vectorised_equals_per_pair_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(30)]

    def sets(n: int) -> list[list[str]]:
        return [list(rng.choice(words, size=rng.integers(0, 7))) for _ in range(n)]

    q, d = sets(70), sets(90)
    ref = np.array([[_py_iou(set(a), set(b)) for b in d] for a in q])
    got = iou_dense([_parts(q, d)], chunk=16)
    np.testing.assert_allclose(got, ref, atol=1e-6)
    blocks = list(iou_blocks([_parts(q, d)], chunk=32))
    assert [s for s, _ in blocks] == [0, 32, 64]


def test_reduce_to_videos_max_and_mean() -> None:
    rng = np.random.default_rng(5)
    dense = rng.random((6, 11)) * (rng.random((6, 11)) > 0.5)
    doc_video = np.array([2, 0, 1, 2, 2, 0, 1, 3, 3, 0, 2])
    block = sp.csr_matrix(dense)
    mx = reduce_to_videos(block, doc_video, 5, "max")
    mn = reduce_to_videos(block, doc_video, 5, "mean")
    for v in range(5):
        cols = doc_video == v
        want_max = dense[:, cols].max(1) if cols.any() else np.zeros(6)
        want_mean = dense[:, cols].mean(1) if cols.any() else np.zeros(6)
        np.testing.assert_allclose(mx[:, v], want_max, rtol=1e-6)
        np.testing.assert_allclose(mn[:, v], want_mean, rtol=1e-6)


def test_words25_presence_rule() -> None:
    sets = [["dog", "man"], ["dog"], ["dog", "ball"], ["cat"], ["cat", "sofa"]]
    doc_video = np.array([0, 0, 0, 0, 1])
    # video 0 has 4 captions: dog 3/4, man 1/4, ball 1/4, cat 1/4 -> all >= 25%
    # with presence 0.5 only dog survives
    v = _words25(sets, doc_video, 2, 0.5)
    assert v[0] == ["dog"] and sorted(v[1]) == ["cat", "sofa"]
    v = _words25(sets, doc_video, 2, 0.25)
    assert sorted(v[0]) == ["ball", "cat", "dog", "man"]
