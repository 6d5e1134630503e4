"""Fixtures of the torch tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def torch_kernel_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Count CPU tensors with the torch kernel, as on an accelerator (CI has no GPU)."""
    import fireval.torch

    monkeypatch.setattr(fireval.torch, "HOST_DEVICES", frozenset())
