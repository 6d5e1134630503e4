"""Fixtures for the input checks: real collections read with pandas (independent of fireval.formats)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fireval.core import Collection, Run

SIMS = {"msrvtt": "msrvtt", "didemo": "didemo"}


def one_per_video(shared: Path, dataset: str) -> Collection:
    if dataset == "msrvtt":
        df = pd.read_csv(shared / "msrvtt" / "MSRVTT_JSFUSION_test.csv")
        keys = list(df.key)
    else:
        df = pd.read_csv(shared / dataset / f"descs_ret_test_{dataset}.csv")
        keys = [f"{dataset}-{i}" for i in range(len(df))]
    return Collection.from_pairs(
        dataset, list(zip(keys, df.video_id, df.sentence)), video_ids=list(df.video_id)
    )


def real_run(shared: Path, dataset: str, model: str) -> Run:
    return Run(model, scores=np.load(shared / dataset / "sims" / f"{model}_{dataset}.npy", mmap_mode="r"))


@pytest.fixture(scope="session", params=["msrvtt", "didemo"])
def real(request: pytest.FixtureRequest, shared_data: Path) -> tuple[str, Collection, dict[str, Run]]:
    ds = request.param
    coll = one_per_video(shared_data, ds)
    return ds, coll, {m: real_run(shared_data, ds, m) for m in ("clip4clip", "GRAM", "VAST")}


@pytest.fixture(scope="session")
def vatex(shared_data: Path) -> Collection:
    """VATEX: 1252 videos x 10 captions (multi-caption), read with pandas."""
    df = pd.read_csv(shared_data / "vatex" / "descs_ret_test_vatex.csv")
    return Collection.from_pairs(
        "vatex", [(f"vx-{i}", v, s) for i, (v, s) in enumerate(zip(df.video_id, df.sentence))]
    )
