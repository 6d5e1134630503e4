"""Fixtures of the torch tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def torch_kernel_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Count CPU tensors with the torch kernel, with the strategies of an accelerator (CI has no GPU)."""
    import fireval.torch
    from fireval.torch import counting

    monkeypatch.setattr(fireval.torch, "HOST_DEVICES", frozenset())
    monkeypatch.setattr(counting, "DIRECT_MAX_BY_DEVICE", {})


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """One intra-op thread: on a loaded 2-core machine torch's OpenMP threads spin against each
    other (benchmarks/README.md, issue 23: the one-pass floor at 1k x 1k took 4x longer on 2)."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
