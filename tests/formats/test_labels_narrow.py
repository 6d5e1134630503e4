"""Graded-label files read into narrow arrays: int32 indices when the collection fits, the
file's float32 grades kept as float32 (never rounded: float64 files stay float64), on the
full-grid fast path and on the general path alike; evaluation over them is unchanged.

Oracle: the members as :func:`numpy.load` reads them (values), and an evaluation over the
same labels given as float64 grades in a shuffled order (which takes the lexsort path).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fireval import api
from fireval.core import Collection, Judgments, Run
from fireval.core.judgments import FIRE_PRECEDENCE, merge
from fireval.formats.labels import GradedNpz, read_graded_labels, write_graded_arrays, write_graded_dense
from fireval.metrics import evaluate


def _collection(n: int, m: int) -> Collection:
    vids = [f"v{j}" for j in range(m)]
    return Collection.from_pairs("g", [(f"c{i}", vids[i % m], "t") for i in range(n)], video_ids=vids)


@pytest.fixture(params=["fast", "general"])
def path_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "general":
        monkeypatch.setattr(GradedNpz, "grid_shape", lambda self, scan=False: None)
    return str(request.param)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int16])
def test_grid_keeps_the_files_grade_precision(tmp_path: Path, dtype: type, path_kind: str) -> None:
    n, m = 13, 7
    coll = _collection(n, m)
    rng = np.random.default_rng(3)
    g = (rng.integers(0, 5, (n, m)) / (1 if np.dtype(dtype).kind == "i" else 3)).astype(dtype)
    p = tmp_path / "g.npz"
    write_graded_dense(p, g, source="proxy:bow", caption_ids=coll.caption_ids, video_ids=coll.video_ids)
    j = read_graded_labels(p, coll)
    want = np.float32 if np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize <= 4 else np.float64
    assert j.grades.dtype == want and j.rows.dtype == np.int32 and j.cols.dtype == np.int32
    assert np.array_equal(j.grades, g.reshape(-1).astype(np.float64))  # exact values
    assert np.array_equal(j.rows, np.repeat(np.arange(n), m)) and np.array_equal(
        j.cols, np.tile(np.arange(m), n)
    )
    assert j.is_sorted()


def test_permuted_ids_and_sparse_files_read_the_same_values(tmp_path: Path, path_kind: str) -> None:
    n, m = 11, 6
    coll = _collection(n, m)
    rng = np.random.default_rng(4)
    g = (rng.integers(0, 4, (n, m)) / 7).astype(np.float32)
    rp, cp = rng.permutation(n), rng.permutation(m)
    p = tmp_path / "perm.npz"
    write_graded_dense(
        p,
        g[rp][:, cp],
        source="proxy:bow",
        caption_ids=[coll.caption_ids[i] for i in rp],
        video_ids=[coll.video_ids[j] for j in cp],
    )
    j = read_graded_labels(p, coll)
    assert j.grades.dtype == np.float32 and j.rows.dtype == np.int32
    assert np.array_equal(j.grades.reshape(n, m), g) and j.is_sorted()
    cells = rng.choice(n * m, 20, replace=False)
    q = tmp_path / "sparse.npz"
    write_graded_arrays(
        q,
        shape=(n, m),
        rows=cells // m,
        cols=cells % m,
        grades=g.reshape(-1)[cells].astype(np.float64),
        source="proxy:bow",
        caption_ids=coll.caption_ids,
        video_ids=coll.video_ids,
    )
    k = read_graded_labels(q, coll)
    assert k.grades.dtype == np.float64 and k.rows.dtype == np.int32
    order = np.argsort(cells)
    assert np.array_equal(k.rows.astype(np.int64) * m + k.cols, cells[order])
    assert np.array_equal(k.grades, g.reshape(-1)[cells[order]].astype(np.float64))


def _shuffled(j: Judgments, seed: int) -> Judgments:
    """The same entries in another order, as int64 / float64 (the lexsort path of evaluate)."""
    p = np.random.default_rng(seed).permutation(len(j))
    return Judgments(
        j.shape,
        j.rows[p].astype(np.int64),
        j.cols[p].astype(np.int64),
        j.grades[p].astype(np.float64),
        j.source_codes[p],
        j.sources,
        j.details,
        j.unresolved,
        j.overruled,
        j.regraded,
        j.warnings,
    )


@pytest.mark.shared
def test_real_run_with_a_proxy_grid_evaluates_as_before(shared_data: Path, tmp_path: Path) -> None:
    coll = api.load_collection(str(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"))
    scores = np.load(shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy")
    rng = np.random.default_rng(0)
    g = (rng.integers(0, 4, coll.shape) * rng.integers(0, 2, coll.shape) / 7).astype(np.float32)
    p = tmp_path / "bow.npz"
    write_graded_dense(p, g, source="proxy:bow", caption_ids=coll.caption_ids, video_ids=coll.video_ids)
    grid = read_graded_labels(p, coll)
    merged = merge([coll.instance_judgments(), grid], FIRE_PRECEDENCE)
    assert merged.rows is grid.rows and merged.grades.dtype == np.float32
    ref = _shuffled(merged, 1)
    assert not ref.is_sorted()
    run = Run("clip4clip", scores=scores)
    kw = {"directions": ("t2v", "v2t"), "unjudged": ("lower", "upper", "condensed"), "per_query": True}
    a = evaluate(run, merged, **kw)
    b = evaluate(run, ref, **kw)
    assert a.table.equals(b.table)
    assert a.per_query is not None and b.per_query is not None and a.per_query.equals(b.per_query)
    assert a.tie_report == b.tie_report


@pytest.mark.parametrize("bad", [np.nan, np.inf, -0.5, 100.5])
@pytest.mark.parametrize("source", ["proxy:bow", "auto:exact"])
def test_a_bad_grade_in_a_grid_is_reported_at_its_label(
    tmp_path: Path, bad: float, source: str, path_kind: str
) -> None:
    from fireval.core import InputError

    n, m = 9, 5
    coll = _collection(n, m)
    g = np.ones((n, m), np.float32)
    g[6, 3] = bad
    p = tmp_path / "bad.npz"
    write_graded_dense(p, g, source=source, caption_ids=coll.caption_ids, video_ids=coll.video_ids)
    with pytest.raises(InputError, match=rf"label {6 * m + 3}: grade [-\w.]+ is not"):
        read_graded_labels(p, coll)
