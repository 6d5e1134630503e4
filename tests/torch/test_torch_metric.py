"""TVRMetric: one process equals fireval.evaluate; two gloo processes (DDP, DistributedSampler
padding included) equal one process on every rank; missing and unknown ids are refused."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_helpers import collection  # noqa: E402

import fireval  # noqa: E402
from fireval.core.errors import InputError  # noqa: E402
from fireval.torch import TVRMetric  # noqa: E402

N_VIDEOS, PER_VIDEO, DIM = 13, 3, 4  # 39 captions: DistributedSampler pads one repeat on 2 ranks
MEASURES = "C@1,C@5,C@10,MdR,MnR,RR,AP,nDCG@10,meanR,geoC"


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Small-integer embeddings (exact products, many ties) and each caption's video."""
    rng = np.random.default_rng(11)
    text = rng.integers(-2, 3, (N_VIDEOS * PER_VIDEO, DIM)).astype(np.float64)
    frames = rng.integers(-2, 3, (N_VIDEOS, 2, DIM)).astype(np.float64)  # two frames per video
    owner = np.arange(N_VIDEOS * PER_VIDEO) // PER_VIDEO
    return text, frames, owner


def _feed(
    metric: TVRMetric,
    indices: list[int],
    *,
    drop: int | None = None,
    bad: int | None = None,
    nan: int | None = None,
) -> None:
    """What a validation loop does: batches of samples, each a caption with its video."""
    text, frames, owner = _data()
    if nan is not None:
        text[nan, 0] = np.nan
    coll = metric.collection
    idx = [i for i in indices if i != drop]
    for lo in range(0, len(idx), 4):
        b = idx[lo : lo + 4]
        caps = [coll.caption_ids[i] if i != bad else "no-such-caption" for i in b]
        metric.update(
            text_emb=torch.from_numpy(text[b]),
            video_emb=torch.from_numpy(frames[owner[b]]),
            caption_ids=caps,
            video_ids=[coll.video_ids[owner[i]] for i in b],
        )


def _expected(pool: str) -> dict:
    text, frames, _ = _data()
    coll = collection(N_VIDEOS, PER_VIDEO)
    ev = fireval.evaluate(
        collection=coll, text_emb=text, video_emb=frames, sim="dot", pool=pool, measures=MEASURES
    )
    return ev.to_dict(names="tvr")


@pytest.mark.parametrize("pool", ["mean", "max"])
def test_one_process_equals_evaluate(pool: str) -> None:
    m = TVRMetric(collection(N_VIDEOS, PER_VIDEO), measures=MEASURES, sim="dot", pool=pool)
    order = list(np.random.default_rng(0).permutation(N_VIDEOS * PER_VIDEO))
    _feed(m, order + order[:5])  # shuffled, with repeats
    assert m.compute() == _expected(pool)
    m.reset()
    with pytest.raises(InputError, match="were never given"):
        m.compute()


def test_missing_and_unknown_ids_one_line() -> None:
    m = TVRMetric(collection(N_VIDEOS, PER_VIDEO), measures=MEASURES, sim="dot")
    _feed(m, list(range(N_VIDEOS * PER_VIDEO)), drop=7)
    with pytest.raises(InputError, match=r"1 of the 39 captions .* \(first: 'c7'\)") as e:
        m.compute()
    assert "\n" not in str(e.value)
    m.reset()
    _feed(m, list(range(N_VIDEOS * PER_VIDEO)), bad=2)
    with pytest.raises(InputError, match="caption id 'no-such-caption'"):
        m.compute()
    with pytest.raises(InputError, match="needs caption_ids"):
        m.update(text_emb=torch.zeros(2, DIM))


def _worker(rank: int, world: int, init: str, out: str) -> None:
    import os

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)  # two processes on a shared 2-core machine
    import importlib

    import torch.distributed as dist
    from torch.utils.data.distributed import DistributedSampler

    import fireval.torch

    engine = importlib.import_module("fireval.metrics.driver")  # (it runs the chunks)

    calls = []
    real = engine.evaluate_chunk
    engine.evaluate_chunk = lambda *a, **k: calls.append(1) or real(*a, **k)  # chunks this rank counted
    dist.init_process_group(
        "gloo", init_method=init, rank=rank, world_size=world, timeout=timedelta(seconds=60)
    )
    try:
        coll = collection(N_VIDEOS, PER_VIDEO)
        sampler = DistributedSampler(
            range(len(coll.caption_ids)), num_replicas=world, rank=rank, shuffle=False
        )
        mine = list(sampler)
        res: dict = {}
        for pool in ("mean", "max"):  # numpy kernels on host memory, then the torch kernel
            fireval.torch.HOST_DEVICES = frozenset({"cpu"}) if pool == "mean" else frozenset()
            m = TVRMetric(coll, measures=MEASURES, sim="dot", pool=pool)
            _feed(m, mine)
            res[pool] = m.compute()
        res["chunks"] = len(calls)
        fireval.torch.HOST_DEVICES = frozenset({"cpu"})  # a NaN score meets one rank's chunk only
        for case, kw in (("missing", {"drop": 3}), ("unknown", {"bad": 0}), ("nan", {"nan": 30})):
            m = TVRMetric(coll, measures=MEASURES, sim="dot")
            _feed(m, mine, **(kw if rank == (1 if case == "missing" else 0) else {}))
            try:
                m.compute()
                res[case] = "no error"
            except InputError as exc:
                res[case] = str(exc)
        res["padded"] = len(mine) * world - len(coll.caption_ids)
        Path(out, f"{rank}.json").write_text(json.dumps(res))
    finally:
        dist.destroy_process_group()


@pytest.mark.timeout(240)
def test_two_gloo_processes_equal_one_process(tmp_path: Path) -> None:
    import torch.multiprocessing as mp

    init = f"file://{tmp_path / 'rendezvous'}"  # a file store: no port to collide with
    mp.spawn(_worker, args=(2, init, str(tmp_path)), nprocs=2, join=True)
    got = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(2)]
    want = {pool: _expected(pool) for pool in ("mean", "max")}
    for res in got:
        assert res["padded"] == 1  # DistributedSampler repeated one sample
        assert res["mean"] == want["mean"] and res["max"] == want["max"]
        assert res["chunks"] > 0  # each rank counted its share of the query rows
        assert res["missing"].startswith("TVRMetric: 1 of the 39 captions") and "'c3'" in res["missing"]
        assert "caption id 'no-such-caption'" in res["unknown"]
        assert "score is NaN at t2v query #30" in res["nan"]  # raised where it was met, on both ranks
    for case in ("missing", "unknown", "nan"):
        assert got[0][case] == got[1][case]
