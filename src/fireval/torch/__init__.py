"""fireval on torch tensors: counting on the tensors' device, and a metric for training loops.

* ``fireval.evaluate(tensor, collection=...)``: the judged docs of each query are counted with
  torch on the tensor's device (:mod:`fireval.torch.counting`); only those counts come to the
  host, where the measure definitions (:mod:`fireval.metrics.kernel`) run as for numpy input.
  A CPU tensor is already on the host: the numpy kernels count it in place (:data:`HOST_DEVICES`).
* ``fireval.evaluate(collection=..., text_emb=T, video_emb=V)`` with tensors: blocks of scores
  (matmul, then counts) on their device (:mod:`fireval.torch.sources`).
* :class:`TVRMetric`: accumulate embeddings and ids over batches, ``compute()`` the TVR
  measures; under ``torch.distributed`` it gathers, drops DistributedSampler's padded repeats
  and shards the work by query rows (:mod:`fireval.torch.metric`).

torch is optional (``pip install fireval[torch]``): this package's ``__init__`` imports
nothing heavy, and :func:`is_tensor` recognises a tensor without importing torch.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["HOST_DEVICES", "TVRMetric", "host_array", "is_tensor", "on_device"]


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


def __getattr__(name: str) -> Any:
    if name == "TVRMetric":
        from fireval.torch.metric import TVRMetric

        return TVRMetric
    raise AttributeError(f"module 'fireval.torch' has no attribute {name!r}")
