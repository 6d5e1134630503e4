"""The blockwise evaluation on dask.distributed (LocalCluster, 2 workers) equals the local path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fireval.core import Judgments
from fireval.scale import evaluate_embeddings

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def client():  # type: ignore[no-untyped-def]
    # in-process workers: reliable and quick on a 2-core CI; tasks still go through the scheduler
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _case(seed: int, n_c: int = 120, n_v: int = 40) -> tuple[np.ndarray, np.ndarray, Judgments]:
    rng = np.random.default_rng(seed)
    vals = np.array([-2.0, -1.0, 1.0, 2.0])  # exact products, many ties, no zero vector (cosine)
    t = vals[rng.integers(0, 4, size=(n_c, 3))]
    v = vals[rng.integers(0, 4, size=(n_v, 4, 3))]  # 4 frames per video
    rows = np.arange(n_c)
    j = Judgments.from_arrays((n_c, n_v), rows, rows % n_v, np.ones(n_c), "instance")
    return t, v, j


def _values(ev) -> list:  # type: ignore[no-untyped-def]
    return ev.table[["direction", "unjudged", "measure", "value"]].to_numpy().tolist()


@pytest.mark.parametrize("pool", ["mean", "max"])
def test_dask_equals_single_process(client, pool: str) -> None:  # type: ignore[no-untyped-def]
    t, v, j = _case(1)
    opts = {"sim": "dot", "pool": pool, "block_size": 9, "unjudged": ("lower", "upper"), "per_query": True}
    local = evaluate_embeddings(t, v, j, **opts)
    with distributed.get_task_stream(client) as ts:
        remote = evaluate_embeddings(t, v, j, client=client, **opts)
    # the chunks ran as tasks on the cluster: ceil(120/9) t2v + v2t chunks, for each bound
    names = [task["key"] for task in ts.data if "evaluate_chunk" in str(task["key"])]
    assert len(names) >= 2 * 14
    assert _values(remote) == _values(local)
    assert remote.per_query is not None and local.per_query is not None
    assert remote.per_query.equals(local.per_query)
    assert remote.tie_report == local.tie_report


def test_dask_over_npy_shards_and_zarr(client, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t, v, j = _case(2)
    t32, v32 = t.astype(np.float32), v.astype(np.float32)
    local = evaluate_embeddings(t32, v32, j, sim="cosine", block_size=16)
    shards = []
    for i, lo in enumerate(range(0, t32.shape[0], 50)):
        p = tmp_path / f"text-{i:02d}.npy"
        np.save(p, t32[lo : lo + 50])
        shards.append(p)
    np.save(tmp_path / "video.npy", v32)
    remote = evaluate_embeddings(
        shards, tmp_path / "video.npy", j, sim="cosine", block_size=16, client=client
    )
    assert _values(remote) == _values(local)
    zarr = pytest.importorskip("zarr")
    z = zarr.open_array(str(tmp_path / "text.zarr"), mode="w", shape=t32.shape, chunks=(32, 3), dtype="f4")
    z[:] = t32
    remote_z = evaluate_embeddings(
        str(tmp_path / "text.zarr"), v32, j, sim="cosine", block_size=16, client=client
    )
    assert _values(remote_z) == _values(local)


def test_dask_error_in_a_chunk_reaches_the_caller(client) -> None:  # type: ignore[no-untyped-def]
    from fireval.core.errors import InputError

    t, v, j = _case(3)
    t[100, 0] = np.nan  # a NaN score in the last blocks
    with pytest.raises(InputError, match="NaN"):
        evaluate_embeddings(t, v, j, sim="dot", block_size=9, client=client, directions="t2v")
