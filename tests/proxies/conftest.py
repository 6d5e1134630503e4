"""Fixtures for the proxies tests: WordNet, pipeline, and MSR-VTT captions from shared data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def wn():  # type: ignore[no-untyped-def]
    from fireval.proxies.wordnet import load_wordnet

    return load_wordnet()


@pytest.fixture(scope="session")
def pipeline(wn):  # type: ignore[no-untyped-def]
    from fireval.proxies.text import TextPipeline

    return TextPipeline(wordnet=wn)


@pytest.fixture(scope="session")
def msrvtt_captions(shared_data: Path) -> dict[str, list[str]]:
    """``{video_id: [20 captions]}`` of the MSR-VTT official test split."""
    data = json.loads((shared_data / "msrvtt" / "official_test" / "test.json").read_text())
    return {v: list(c.values()) for v, c in data.items()}


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, empty ``FIREVAL_CACHE_DIR`` for one test, with the default size cap."""
    from fireval.proxies.cache import MAX_MB_ENV

    d = tmp_path / "cache"
    monkeypatch.setenv("FIREVAL_CACHE_DIR", str(d))
    monkeypatch.delenv(MAX_MB_ENV, raising=False)
    return d
