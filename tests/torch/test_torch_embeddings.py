"""Embeddings on the device (torch) equal the dense path on the same scores: dot and cosine,
mean and max pooling over frames, id maps, any block size, every unjudged mode, both directions."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_helpers import all_measures, collection, labels  # noqa: E402

import fireval  # noqa: E402
from fireval.core import Run  # noqa: E402
from fireval.core.direction import Direction  # noqa: E402
from fireval.core.errors import InputError  # noqa: E402
from fireval.metrics import evaluate  # noqa: E402
from fireval.torch import sources  # noqa: E402
from fireval.torch.sources import TensorEmbeddings  # noqa: E402

MEASURES = all_measures(estimators=False)
ESTIMATORS = all_measures(estimators=True)  # bpref, infAP, infNDCG: not under worst/best
pytestmark = pytest.mark.usefixtures("torch_kernel_on_cpu")
MODES = ("lower", "upper", "condensed", "best")


def _ints(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Small integers in float64: every product and sum is exact, and scores tie often."""
    return rng.integers(-2, 3, size=shape).astype(np.float64)


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    assert a.records == b.records
    assert a.tie_report == b.tie_report


@pytest.mark.parametrize("block", [None, 1, 7])
def test_dot_equals_dense_every_measure_and_mode(block: int | None) -> None:
    rng = np.random.default_rng(0)
    coll = collection(15, 3)
    t, v = _ints(rng, 45, 3), _ints(rng, 15, 3)
    j = labels(rng, 45, 15, 3, extra=60)
    plain = tuple(m for m in MODES if m != "best")  # the estimators' modes
    for measures, modes in ((MEASURES, MODES), (ESTIMATORS, plain)):
        kw = dict(measures=measures, unjudged=modes, ties="tie-aware")
        dense = evaluate(Run("embeddings", scores=t @ v.T), j, collection=coll, **kw)
        assert dense.tie_report["t2v"]["queries_with_relevant_in_tie"] > 0  # the case has ties
        got = fireval.evaluate(
            collection=coll,
            labels=j,
            text_emb=torch.from_numpy(t),
            video_emb=torch.from_numpy(v),
            sim="dot",
            block_size=block,
            **kw,
        )
        _same(got, dense)


def test_cosine_and_docid_ties() -> None:
    rng = np.random.default_rng(2)
    base = np.array([[2, 0, 0, 0], [0, 2, 0, 0], [1, 1, 1, 1], [1, -1, 1, -1], [0, 0, 4, 0]], float)
    t = base[rng.integers(0, 5, 24)] * rng.choice([-1.0, 1.0, 0.5], size=(24, 1))
    v = base[rng.integers(0, 5, 8)] * rng.choice([-1.0, 1.0, 0.5], size=(8, 1))
    tn = t / np.linalg.norm(t, axis=1, keepdims=True)  # norms are powers of two: exact
    vn = v / np.linalg.norm(v, axis=1, keepdims=True)
    coll = collection(8, 3)
    for ties in ("docid", "optimistic"):
        want = fireval.evaluate(tn @ vn.T, collection=coll, ties=ties, name="embeddings")
        got = fireval.evaluate(
            collection=coll, text_emb=torch.from_numpy(t), video_emb=torch.from_numpy(v), ties=ties
        )
        _same(got, want)


def test_mean_and_max_pooling_and_id_maps() -> None:
    rng = np.random.default_rng(3)
    coll = collection(12, 2)
    t, frames = _ints(rng, 24, 3), _ints(rng, 12, 4, 3)  # 4 frames per video: the mean is exact
    j = labels(rng, 24, 12, 2, extra=30)
    dense = {
        "mean": t @ frames.mean(axis=1).T,
        "max": np.einsum("cd,vkd->cvk", t, frames).max(axis=2),
    }
    rows = frames.reshape(48, 3)
    owner = np.repeat(np.arange(12), 4)
    perm = rng.permutation(48)  # rows of one video need not be adjacent
    for pool, s in dense.items():
        want = fireval.evaluate(s, collection=coll, labels=j, measures=MEASURES, name="embeddings")
        for block in (None, 5):
            got = fireval.evaluate(
                collection=coll,
                labels=j,
                measures=MEASURES,
                text_emb=torch.from_numpy(t),
                video_emb=torch.from_numpy(frames),
                sim="dot",
                pool=pool,
                block_size=block,
            )
            _same(got, want)
        by_ids = fireval.evaluate(
            collection=coll,
            labels=j,
            measures=MEASURES,
            text_emb=torch.from_numpy(t),
            video_emb=torch.from_numpy(rows[perm]),
            video_ids=[coll.video_ids[i] for i in owner[perm]],
            sim="dot",
            pool=pool,
        )
        _same(by_ids, want)
        # several rows per caption too (max over both sides)
        src = TensorEmbeddings(
            torch.from_numpy(np.stack([t, t], 1)), torch.from_numpy(frames), sim="dot", pool=pool
        )
        np.testing.assert_array_equal(src.block(Direction.T2V, 0, 24), s)


def test_blocks_follow_the_memory_budget_and_never_the_whole_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "CPU_BLOCK_ELEMS", 40)  # 40 scores per block
    shapes: list[tuple[int, int]] = []
    real = TensorEmbeddings.device_block

    def spy(self, direction, start, stop):  # type: ignore[no-untyped-def]
        out = real(self, direction, start, stop)
        shapes.append(tuple(out.shape))
        return out

    monkeypatch.setattr(TensorEmbeddings, "device_block", spy)
    rng = np.random.default_rng(4)
    coll = collection(10, 2)
    t, v = _ints(rng, 20, 3), _ints(rng, 10, 3)
    got = fireval.evaluate(
        collection=coll, text_emb=torch.from_numpy(t), video_emb=torch.from_numpy(v), sim="dot"
    )
    _same(got, fireval.evaluate(t @ v.T, collection=coll, name="embeddings"))
    assert shapes and max(a * b for a, b in shapes) <= 40


def test_bad_embeddings_raise_clear_errors() -> None:
    coll = collection(5, 2)
    t, v = torch.ones(10, 3), torch.ones(5, 3)
    with pytest.raises(InputError, match="dimension 3 but video embeddings 4"):
        fireval.evaluate(collection=coll, text_emb=t, video_emb=torch.ones(5, 4))
    z = v.clone()
    z[2] = 0
    with pytest.raises(InputError, match="norm 0"):
        fireval.evaluate(collection=coll, text_emb=t, video_emb=z, sim="cosine")
    with pytest.raises(InputError, match="unknown similarity"):
        fireval.evaluate(collection=coll, text_emb=t, video_emb=v, sim="l2")
    with pytest.raises(InputError, match="video_emb gives 4 videos but collection 'toy' has 5"):
        fireval.evaluate(collection=coll, text_emb=t, video_emb=torch.ones(4, 3))
    with pytest.raises(InputError, match="NaN or inf"):
        fireval.evaluate(collection=coll, text_emb=t, video_emb=v * float("nan"))
    with pytest.raises(InputError, match="video 'v4' has no embedding row"):
        fireval.evaluate(collection=coll, text_emb=t, video_emb=v, video_ids=["v0", "v1", "v2", "v3", "v3"])
