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
nothing heavy, and :func:`is_tensor` recognises a tensor without importing torch. The tensor
helpers (:func:`is_tensor`, :func:`on_device`, :func:`host_array`, :data:`HOST_DEVICES`) live in
:mod:`fireval.torch.tensors`, below :mod:`fireval.api`, which uses them; they are re-exported here.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from fireval.torch import tensors
from fireval.torch.tensors import host_array, is_tensor, on_device

if TYPE_CHECKING:
    from fireval.torch.metric import TVRMetric
    from fireval.torch.tensors import HOST_DEVICES

__all__ = ["HOST_DEVICES", "TVRMetric", "host_array", "is_tensor", "on_device"]


def __getattr__(name: str) -> Any:
    if name == "TVRMetric":
        from fireval.torch.metric import TVRMetric

        return TVRMetric
    raise AttributeError(f"module 'fireval.torch' has no attribute {name!r}")


class _Package(types.ModuleType):
    """The package's module type: ``HOST_DEVICES`` reads and sets the one of
    :mod:`fireval.torch.tensors`, where :func:`on_device` reads it (the tests empty it to run
    the torch kernel on the CPU; a data descriptor, so that ``monkeypatch.setattr`` restores it)."""

    @property
    def HOST_DEVICES(self) -> frozenset[str]:
        return tensors.HOST_DEVICES

    @HOST_DEVICES.setter
    def HOST_DEVICES(self, value: frozenset[str]) -> None:
        tensors.HOST_DEVICES = value


sys.modules[__name__].__class__ = _Package
