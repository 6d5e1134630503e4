"""Fixtures for the judging tests: MSR-VTT 1k-A read independently of fireval.formats."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fireval.core import Collection, Run


def msrvtt_collection(shared: Path) -> Collection:
    df = pd.read_csv(shared / "msrvtt" / "MSRVTT_JSFUSION_test.csv")
    return Collection.from_pairs(
        "msrvtt-1k-A", list(zip(df.key, df.video_id, df.sentence)), video_ids=list(df.video_id)
    )


def msrvtt_runs(shared: Path) -> list[Run]:
    sims = shared / "msrvtt" / "sims"
    return [
        Run(name, scores=np.load(sims / f"{stem}_msrvtt.npy", mmap_mode="r"))
        for name, stem in (("CLIP4CLIP", "clip4clip"), ("GRAM", "GRAM"), ("VAST", "VAST"))
    ]


@pytest.fixture(scope="session")
def msrvtt(shared_data: Path) -> tuple[Collection, list[Run]]:
    return msrvtt_collection(shared_data), msrvtt_runs(shared_data)


def store_urls() -> list:
    """SQLite always; PostgreSQL when FIREVAL_PG_URL is set (required in CI)."""
    params: list = ["sqlite"]
    params.append(pytest.param("postgres", marks=pytest.mark.postgres))
    return params


@pytest.fixture(params=store_urls())
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    url = os.environ.get("FIREVAL_PG_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("FIREVAL_PG_URL is not set in CI (scripts/start_postgres.sh prints it)")
        pytest.skip("FIREVAL_PG_URL not set")
    from benchmarks.loadgen import reset_postgres

    reset_postgres(url)  # a fresh schema per test: every table, trigger and function goes
    return url


@pytest.fixture
def store(store_url: str):
    """A fresh store on each backend of ``store_url`` (closed after the test)."""
    from fireval.judging.store import Store

    st = Store(store_url)
    yield st
    st.close()
