"""fireval.scale: evaluation from embeddings, block by block, on one machine or on Dask.

* :mod:`fireval.scale.embeddings`: :class:`~fireval.scale.embeddings.EmbeddingScores` computes
  dot or cosine score blocks from caption and video embeddings on demand (several
  embeddings per item pooled by mean or max), :func:`~fireval.scale.embeddings.open_embeddings`
  opens ``.npy`` files (one or several shards) and Zarr arrays lazily, and
  :func:`~fireval.scale.embeddings.evaluate_embeddings` runs :func:`fireval.metrics.evaluate`
  on them without materialising the caption × video matrix.
* :mod:`fireval.scale.distributed`: the same chunks on ``dask.distributed`` (optional extra
  ``scale``; imported only when a client or scheduler is given).

Layer: imports :mod:`fireval.core` and :mod:`fireval.metrics` only. See ``docs/scale.md``.
"""

from fireval.scale.embeddings import EmbeddingScores, ShardedArray, evaluate_embeddings, open_embeddings

__all__ = ["EmbeddingScores", "ShardedArray", "evaluate_embeddings", "open_embeddings"]
