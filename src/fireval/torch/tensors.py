"""Tensors without torch: recognise a torch tensor, and tell where fireval counts it.

The shared piece of :mod:`fireval.torch` that :mod:`fireval.api` needs (to dispatch a tensor
to the device path or to the numpy kernels); it imports nothing heavy, never torch itself (a
tensor's type is defined in a ``torch`` module, so torch is already imported when one exists).
:mod:`fireval.torch` re-exports every name; setting ``fireval.torch.HOST_DEVICES`` sets the one
here, which :func:`on_device` reads.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["HOST_DEVICES", "host_array", "is_tensor", "on_device"]


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a torch tensor, without importing torch (a tensor's type is defined in
    a ``torch`` module, and torch is then already imported)."""
    mod = type(x).__module__ or ""
    if not (mod == "torch" or mod.startswith("torch.")) or "torch" not in sys.modules:
        return False
    return isinstance(x, sys.modules["torch"].Tensor)


#: device types whose tensors are counted by the numpy kernels, in place: a CPU tensor's memory
#: is the host's (``Tensor.numpy()`` copies nothing), and the numpy kernels (layered and
#: compiled column counts) are faster there than torch's. The tests empty it to run the torch
#: kernel on the CPU, as it runs on an accelerator.
HOST_DEVICES: frozenset[str] = frozenset({"cpu"})


def on_device(x: Any) -> bool:
    """Whether ``x`` is a tensor that fireval counts with torch where it lives (an accelerator)."""
    return is_tensor(x) and x.device.type not in HOST_DEVICES


def host_array(x: Any) -> Any:
    """A host tensor as a numpy array without copying (detached; half types widened to
    float32, as :func:`fireval.api.as_score_matrix` does); anything else as it is."""
    if not is_tensor(x):
        return x
    t = x.detach()
    if str(t.dtype) in ("torch.float16", "torch.bfloat16"):
        t = t.float()
    return t.cpu().numpy()
