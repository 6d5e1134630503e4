"""Evaluation from embeddings equals the dense path on the same scores (exact arithmetic, ties)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fireval.core import Judgments, Run
from fireval.core.errors import InputError
from fireval.metrics import evaluate
from fireval.scale import ShardedArray, evaluate_embeddings, open_embeddings
from fireval.scale.embeddings import EmbeddingScores

MEASURES = "C@1,C@5,C@10,MdR,MnR,RR,AP,nDCG@10,P@10,Recall@10,judged@10,meanR,geoC"


def _labels(rng: np.random.Generator, n_c: int, n_v: int) -> Judgments:
    """Instance labels (caption i -> video i % n_v) plus some graded and judged-irrelevant pairs."""
    rows = np.arange(n_c)
    cols = rows % n_v
    grades = np.ones(n_c)
    extra_r = rng.integers(0, n_c, 40)
    extra_c = rng.integers(0, n_v, 40)
    keep = extra_c != extra_r % n_v
    rows = np.concatenate([rows, extra_r[keep]])
    cols = np.concatenate([cols, extra_c[keep]])
    grades = np.concatenate([grades, rng.integers(0, 3, int(keep.sum())).astype(float)])
    pairs = dict(zip(zip(rows.tolist(), cols.tolist(), strict=True), grades.tolist(), strict=True))
    r, c = zip(*pairs, strict=True)
    return Judgments.from_arrays((n_c, n_v), list(r), list(c), list(pairs.values()), "human")


def _ints(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Small integers in float64: every product and sum is exact, and scores tie often."""
    return rng.integers(-2, 3, size=shape).astype(np.float64)


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    cols = ["direction", "unjudged", "ties", "measure", "value"]
    pd_a, pd_b = a.table[cols].reset_index(drop=True), b.table[cols].reset_index(drop=True)
    assert pd_a.equals(pd_b), (pd_a, pd_b)
    assert a.tie_report == b.tie_report


@pytest.mark.parametrize("ties", ["tie-aware", "optimistic", "pessimistic", "docid"])
def test_dot_equals_dense_with_ties(ties: str) -> None:
    rng = np.random.default_rng(0)
    t, v = _ints(rng, 90, 3), _ints(rng, 30, 3)
    j = _labels(rng, 90, 30)
    dense = evaluate(
        Run("r", scores=t @ v.T), j, measures=MEASURES, ties=ties, unjudged=("lower", "upper", "condensed")
    )
    assert dense.tie_report["t2v"]["queries_with_relevant_in_tie"] > 0  # the case has ties
    for block in (None, 1, 7, 90):
        got = evaluate_embeddings(
            t,
            v,
            j,
            sim="dot",
            block_size=block,
            measures=MEASURES,
            ties=ties,
            unjudged=("lower", "upper", "condensed"),
        )
        _same(got, dense)


def test_per_query_values_equal() -> None:
    rng = np.random.default_rng(1)
    t, v = _ints(rng, 50, 4), _ints(rng, 20, 4)
    j = _labels(rng, 50, 20)
    a = evaluate(Run("embeddings", scores=t @ v.T), j, per_query=True)
    b = evaluate_embeddings(t, v, j, sim="dot", block_size=3, per_query=True)
    assert a.per_query is not None and b.per_query is not None
    assert a.per_query.equals(b.per_query)


def _dyadic(rng: np.random.Generator, n: int) -> np.ndarray:
    """Vectors whose norm is a power of two, so that cosine normalisation is exact."""
    base = np.array(
        [[2, 0, 0, 0], [0, 2, 0, 0], [1, 1, 1, 1], [1, -1, 1, -1], [0, 0, 4, 0], [1, 1, -1, -1]], float
    )
    return base[rng.integers(0, len(base), n)] * rng.choice([-1.0, 1.0, 0.5], size=(n, 1))


def test_cosine_equals_dense() -> None:
    rng = np.random.default_rng(2)
    t, v = _dyadic(rng, 60), _dyadic(rng, 25)
    j = _labels(rng, 60, 25)
    tn = t / np.linalg.norm(t, axis=1, keepdims=True)
    vn = v / np.linalg.norm(v, axis=1, keepdims=True)
    _same(evaluate_embeddings(t, v, j, sim="cosine", block_size=4), evaluate(Run("r", scores=tn @ vn.T), j))


def test_mean_and_max_pooling_over_frames() -> None:
    rng = np.random.default_rng(3)
    t, frames = _ints(rng, 48, 3), _ints(rng, 16, 4, 3)  # 4 frames per video: the mean is exact
    j = _labels(rng, 48, 16)
    mean_dense = t @ frames.mean(axis=1).T
    max_dense = np.einsum("cd,vkd->cvk", t, frames).max(axis=2)
    _same(
        evaluate_embeddings(t, frames, j, sim="dot", pool="mean", block_size=5),
        evaluate(Run("r", scores=mean_dense), j),
    )
    _same(
        evaluate_embeddings(t, frames, j, sim="dot", pool="max", block_size=5),
        evaluate(Run("r", scores=max_dense), j),
    )


def test_id_map_equals_3d_array_and_resolves_names() -> None:
    rng = np.random.default_rng(4)
    t, frames = _ints(rng, 30, 3), _ints(rng, 10, 2, 3)
    j = _labels(rng, 30, 10)
    rows = frames.reshape(20, 3)
    owner = np.repeat(np.arange(10), 2)
    perm = rng.permutation(20)  # rows of one video need not be adjacent
    names = [f"v{i}" for i in range(10)]
    for pool in ("mean", "max"):
        ref = evaluate_embeddings(t, frames, j, sim="dot", pool=pool)
        by_index = evaluate_embeddings(t, rows[perm], j, sim="dot", pool=pool, video_ids=owner[perm])
        _same(by_index, ref)
        src = EmbeddingScores(
            t, rows[perm], sim="dot", pool=pool, video_ids=[names[i] for i in owner[perm]], video_names=names
        )
        np.testing.assert_array_equal(
            src.block("t2v", 0, 30), EmbeddingScores(t, frames, sim="dot", pool=pool).block("t2v", 0, 30)
        )


def test_shards_and_zarr_equal_in_memory(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    t, v = _ints(rng, 70, 3).astype(np.float32), _ints(rng, 21, 3).astype(np.float32)
    j = _labels(rng, 70, 21)
    ref = evaluate_embeddings(t, v, j, sim="dot")
    paths = []
    for i, (lo, hi) in enumerate([(0, 25), (25, 26), (26, 70)]):
        p = tmp_path / f"t-{i}.npy"
        np.save(p, t[lo:hi])
        paths.append(p)
    np.save(tmp_path / "v.npy", v)
    sh = open_embeddings(str(tmp_path / "t-*.npy"))
    assert isinstance(sh, ShardedArray) and sh.shape == (70, 3)
    np.testing.assert_array_equal(sh[20:30], t[20:30])
    np.testing.assert_array_equal(sh[np.array([69, 0, 25])], t[[69, 0, 25]])
    _same(evaluate_embeddings(paths, tmp_path / "v.npy", j, sim="dot", block_size=8), ref)
    zarr = pytest.importorskip("zarr")
    z = zarr.open_array(str(tmp_path / "t.zarr"), mode="w", shape=t.shape, chunks=(16, 3), dtype="f4")
    z[:] = t
    _same(evaluate_embeddings(str(tmp_path / "t.zarr"), v, j, sim="dot", block_size=8), ref)


def test_bad_inputs_raise_clear_errors(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    t, v = _ints(rng, 10, 3), _ints(rng, 5, 3)
    j = _labels(rng, 10, 5)
    with pytest.raises(InputError, match="dimension 3 but video embeddings 4"):
        evaluate_embeddings(t, _ints(rng, 5, 4), j)
    z = v.copy()
    z[2] = 0
    with pytest.raises(InputError, match="norm 0"):
        evaluate_embeddings(t, z, j, sim="cosine")
    with pytest.raises(InputError, match="unknown similarity"):
        evaluate_embeddings(t, v, j, sim="l2")
    with pytest.raises(InputError, match="video 'v4' has no embedding row"):
        EmbeddingScores(
            t, v, video_ids=["v0", "v1", "v2", "v3", "v3"], video_names=[f"v{i}" for i in range(5)]
        )
    with pytest.raises(InputError, match="unknown video id 'zz'"):
        EmbeddingScores(
            t, v, video_ids=["v0", "v1", "v2", "v3", "zz"], video_names=[f"v{i}" for i in range(5)]
        )
    with pytest.raises(InputError, match="not found"):
        open_embeddings(str(tmp_path / "missing.npy"))
    with pytest.raises(InputError, match="block-size"):
        evaluate_embeddings(t, v, j, block_size=0)
    np.save(tmp_path / "a.npy", t)
    np.save(tmp_path / "b.npy", _ints(rng, 4, 2))
    with pytest.raises(InputError, match="disagree"):
        open_embeddings([tmp_path / "a.npy", tmp_path / "b.npy"])


def test_cli_embeddings_equal_dense_matrix(tmp_path: Path) -> None:
    from fireval import api

    coll = api.load_collection("example")
    rng = np.random.default_rng(7)
    t = _ints(rng, coll.shape[0], 3)
    v = _ints(rng, coll.shape[1], 3)
    np.save(tmp_path / "T.npy", t)
    np.save(tmp_path / "V.npy", v)
    np.save(tmp_path / "embeddings.npy", t @ v.T)
    env = dict(os.environ, COLUMNS="200")

    def run(*args: str) -> dict:
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}.json"
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "fireval",
                "evaluate",
                *args,
                "-c",
                "example",
                "-q",
                "--no-checks",
                "--json",
                str(out),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        return json.loads(out.read_text())

    dense = run(str(tmp_path / "embeddings.npy"))
    emb = run(
        "--text-emb",
        str(tmp_path / "T.npy"),
        "--video-emb",
        str(tmp_path / "V.npy"),
        "--sim",
        "dot",
        "--block-size",
        "64",
    )
    assert dense["results"] == emb["results"]
    r = subprocess.run(
        [sys.executable, "-m", "fireval", "evaluate", "--text-emb", str(tmp_path / "T.npy"), "-c", "example"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 2 and "--text-emb and --video-emb go together" in r.stderr
    assert "Traceback" not in r.stderr


def test_top_level_evaluate_accepts_embeddings() -> None:
    import fireval

    rng = np.random.default_rng(8)
    t, v = _ints(rng, 1000, 3), _ints(rng, 1000, 3)  # the bundled example collection is 1000 x 1000
    a = fireval.evaluate(collection="example", text_emb=t, video_emb=v, sim="dot", block_size=100)
    b = fireval.evaluate(t @ v.T, "example", name="embeddings")
    _same(a, b)
    assert a.table["run"].eq("embeddings").all()
    with pytest.raises(InputError, match="not both"):
        fireval.evaluate(t @ v.T, "example", text_emb=t, video_emb=v)
    with pytest.raises(InputError, match="only apply with text_emb"):
        fireval.evaluate(t @ v.T, "example", pool="max")


def test_embedding_errors_name_the_option_file_and_item(tmp_path: Path) -> None:
    """A shape that does not fit the collection names the option, the file and both counts; an
    embedding of norm 0 names its file and the caption or video it belongs to."""
    from fireval import api

    coll = api.load_collection("example")
    n_c, n_v = coll.shape
    rng = np.random.default_rng(8)
    t, v = _ints(rng, n_c, 3), _ints(rng, n_v, 3)
    t[:, 0], v[:, 0] = np.abs(t[:, 0]) + 1, np.abs(v[:, 0]) + 1  # no row of norm 0 but the one made below
    np.save(tmp_path / "T.npy", t)
    np.save(tmp_path / "V.npy", v)
    np.save(tmp_path / "T_short.npy", t[:-1])
    z = v.copy()
    z[5] = 0
    np.save(tmp_path / "V_zero.npy", z)

    def cli(text: str, video: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fireval", "evaluate", "--text-emb", text, "--video-emb", video]
            + ["-c", "example", "-q", "--no-checks"],
            capture_output=True,
            text=True,
            timeout=300,
        )

    r = cli(str(tmp_path / "T_short.npy"), str(tmp_path / "V.npy"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert "T_short.npy" in line and "--text-emb" in line, line
    assert f"{n_c - 1} captions" in line and f"has {n_c}" in line, line
    r = cli(str(tmp_path / "T.npy"), str(tmp_path / "V_zero.npy"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert "V_zero.npy" in line and "norm 0" in line and repr(coll.video_ids[5]) in line, line
    # in the API, without a collection: the item's index
    with pytest.raises(InputError, match=r"video 5 \(0-based\) has norm 0"):
        evaluate_embeddings(t, z, _labels(rng, n_c, n_v), sim="cosine")
