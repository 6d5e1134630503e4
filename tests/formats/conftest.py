from __future__ import annotations

import numpy as np
import pytest

from fireval.core import Collection


@pytest.fixture
def tiny() -> Collection:
    """3 videos; captions c0..c5 (two per video); two captions share a text."""
    pairs = [
        ("c0", "v0", "A man is cooking."),
        ("c1", "v0", "a man  cooks pasta"),
        ("c2", "v1", "a dog runs"),
        ("c3", "v1", "A man is cooking"),
        ("c4", "v2", "a cat sleeps"),
        ("c5", "v2", "kids play football"),
    ]
    return Collection.from_pairs("msrvtt-tiny", pairs)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)
