"""Shared test fixtures.

``shared_data`` points at the public data beside the repository (``../shared/data``, or
``$FIREVAL_SHARED_DATA``). CI has it; tests that need it use the fixture and fail loudly
in CI when it is missing (they skip only outside CI).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The proxies' parse cache must not touch the user's cache directory during tests: one private
# directory per test session (subprocesses inherit it through the environment). Tests of the
# cache itself set their own directory.
if "FIREVAL_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _CACHE_DIR = tempfile.mkdtemp(prefix="fireval-test-cache-")
    os.environ["FIREVAL_CACHE_DIR"] = _CACHE_DIR
    atexit.register(shutil.rmtree, _CACHE_DIR, True)


def _shared_dir() -> Path:
    env = os.environ.get("FIREVAL_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = _shared_dir()
    if not path.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"shared data not found at {path}")
        pytest.skip(f"shared data not found at {path}")
    return path


CHROMIUM = Path("/usr/bin/chromium")


CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
"""Flags for Debian Chromium here: without the networking flags it tries to reach Google's hosts."""


@pytest.fixture(scope="session")
def chromium_args() -> list[str]:
    return list(CHROMIUM_ARGS)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("/usr/bin/chromium is missing (apt-get install chromium)")
        pytest.skip("/usr/bin/chromium is missing")
    return str(CHROMIUM)


def _fire_annotation(
    query: str, video_id: str, label: str = "relevant", models: list[str] | None = None
) -> dict:
    """One annotation record in the FIRE authors' schema (single annotator)."""
    return {
        "annotator_ids": [1],
        "label": label,
        "video_id": video_id,
        "query": query,
        "annotator_labels": [label],
        "response_ids": [1],
        "queue_ids": [1],
        "models": models or ["CLIP4CLIP"],
        "dataset": "MSRVTT",
    }


@pytest.fixture()
def fire_annotation():
    """``fire_annotation(query, video_id, label="relevant", models=None) -> dict`` (FIRE schema)."""
    return _fire_annotation


@pytest.fixture()
def write_fire_json(tmp_path: Path):
    """``write_fire_json(annotations) -> path`` of a FIRE JSON file with the authors' top-level keys."""
    import json

    def write(annotations: list[dict], name: str = "fire.json") -> Path:
        doc = {
            "annotations": annotations,
            "disagreements": [],
            "source_ds": "test",
            "source_data_md5": "",
            "source_annotator_map_md5": "",
            "created_ds": "2026-11-22",
            "email": "",
            "creator": "test",
            "website": "",
            "license": "",
            "datasets": ["MSRVTT"],
        }
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return path

    return write
