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


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("/usr/bin/chromium is missing (apt-get install chromium)")
        pytest.skip("/usr/bin/chromium is missing")
    return str(CHROMIUM)
