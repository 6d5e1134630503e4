"""Fixtures for the judging tests: MSR-VTT 1k-A read independently of fireval.formats."""

from __future__ import annotations

import os
from collections.abc import Iterator
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


def private_pg_schema(url: str) -> Iterator[str]:
    """``url`` with a schema of its own (``search_path``), created empty and dropped after.

    Each test's store (tables, triggers, functions, alembic_version) lives in that schema, so
    test processes that share one server (several checkouts at once) never see or drop each
    other's stores, and the database's ``public`` schema is left alone. The drop waits at most
    10 s for locks; a schema left behind by a test that leaked a transaction is only clutter.
    """
    import uuid

    import sqlalchemy as sa

    schema = f"fireval_test_{uuid.uuid4().hex[:12]}"
    eng = sa.create_engine(url)
    try:
        with eng.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
        sep = "&" if "?" in url else "?"
        yield f"{url}{sep}options=-csearch_path%3D{schema}"
    finally:
        try:
            with eng.begin() as conn:
                conn.exec_driver_sql("SET LOCAL lock_timeout = '10s'")
                conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        except sa.exc.OperationalError:
            pass
        eng.dispose()


@pytest.fixture(params=store_urls())
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    url = os.environ.get("FIREVAL_PG_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("FIREVAL_PG_URL is not set in CI (scripts/start_postgres.sh prints it)")
        pytest.skip("FIREVAL_PG_URL not set")
    yield from private_pg_schema(url)  # a fresh, private schema per test


@pytest.fixture
def store(store_url: str):
    """A fresh store on each backend of ``store_url`` (closed after the test)."""
    from fireval.judging.store import Store

    st = Store(store_url)
    yield st
    st.close()
