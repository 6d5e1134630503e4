"""fireval on torch tensors: counting on the tensors' device, and a metric for training loops.

* ``fireval.evaluate(tensor, collection=...)``: the judged docs of each query are counted with
  torch on the tensor's device (:mod:`fireval.torch.counting`); only those counts come to the
  host, where the measure definitions (:mod:`fireval.metrics.kernel`) run as for numpy input.
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

__all__ = ["TVRMetric", "is_tensor"]


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a torch tensor, without importing torch (a tensor's type is defined in
    a ``torch`` module, and torch is then already imported)."""
    mod = type(x).__module__ or ""
    if not (mod == "torch" or mod.startswith("torch.")) or "torch" not in sys.modules:
        return False
    return isinstance(x, sys.modules["torch"].Tensor)


def __getattr__(name: str) -> Any:
    if name == "TVRMetric":
        from fireval.torch.metric import TVRMetric

        return TVRMetric
    raise AttributeError(f"module 'fireval.torch' has no attribute {name!r}")
