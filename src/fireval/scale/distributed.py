"""Chunks of an evaluation on ``dask.distributed`` (optional extra ``scale``; imported lazily).

:func:`fireval.metrics.evaluate` splits each direction into chunks of query rows and runs
:func:`fireval.metrics.kernel.evaluate_chunk` on each (a module-level, pure function). Here
that map goes to a Dask cluster: the arguments every chunk shares (the run, i.e. the embedding
source, and the labels' CSR arrays) are scattered once to every worker (``client.scatter``,
``broadcast=True``), then one task per chunk is submitted with ``client.map`` and the results are
gathered in submission order, so aggregation is the same code as on one machine and the
results are identical. Scheduling, retries and data movement are Dask's; nothing here
schedules.

What each worker needs: fireval and numpy (the same versions as the client), and read access
to the embedding files at the same paths (``.npy`` shards are memory-mapped on the worker,
Zarr arrays opened there). In-memory arrays are shipped once per worker by the scatter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from fireval.core.errors import FirevalError

#: most chunk tasks in flight at once (bounds the memory of results waiting to be aggregated)
MAX_IN_FLIGHT = 64


def _require_distributed() -> Any:
    try:
        import distributed
    except ImportError:  # pragma: no cover - depends on the environment
        raise FirevalError(
            "Dask is not installed: install the optional extra with pip install 'fireval[scale]'"
        ) from None
    return distributed


def dask_mapper(
    client: Any,
) -> Callable[[Callable[..., Any], Sequence[int], Mapping[str, Any]], Iterator[Any]]:
    """A chunk mapper (see :func:`fireval.metrics.kernel.chunk_mapper`) running on ``client``."""

    def mapper(fn: Callable[..., Any], starts: Sequence[int], shared: Mapping[str, Any]) -> Iterator[Any]:
        # scatter the large shared values once per worker; small ones travel with the tasks
        kwargs = {
            k: client.scatter(v, broadcast=True, hash=False) if _is_large(v) else v for k, v in shared.items()
        }
        pending: list[Any] = []
        it = iter(starts)
        try:
            while True:
                while len(pending) < MAX_IN_FLIGHT:
                    s = next(it, None)
                    if s is None:
                        break
                    pending.append(client.submit(fn, s, pure=False, **kwargs))
                if not pending:
                    break
                fut = pending.pop(0)
                yield fut.result()
                fut.release()
        finally:
            if pending:
                client.cancel(pending)
            for v in kwargs.values():
                if hasattr(v, "release") and hasattr(v, "key"):
                    v.release()

    return mapper


def _is_large(v: Any) -> bool:
    """Arrays over 64 KB and the run (it may hold the embeddings) are scattered."""
    nbytes = getattr(v, "nbytes", None)
    if nbytes is not None:
        return bool(nbytes > 1 << 16)
    return hasattr(v, "block")


def get_client(scheduler: str, *, n_workers: int | None = None) -> tuple[Any, Any]:
    """``(client, cluster)`` for ``scheduler``: ``"local"`` starts a LocalCluster (``cluster`` is
    returned so that the caller closes it), anything else is a scheduler address
    (``tcp://host:8786``), connected to as is (``cluster`` is None)."""
    distributed = _require_distributed()
    if scheduler == "local":
        cluster = distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        return distributed.Client(cluster), cluster
    try:
        return distributed.Client(scheduler, timeout="20s"), None
    except OSError as exc:
        raise FirevalError(f"--scheduler: cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None


@contextmanager
def scheduler_context(scheduler: str | None) -> Iterator[Any]:
    """Inside the block every evaluation's chunks run on Dask (``scheduler``: an address or
    ``"local"``); yields the client (None without a scheduler: the local thread pool is used)."""
    if scheduler is None:
        yield None
        return
    from fireval.metrics.kernel import chunk_mapper

    client, cluster = get_client(scheduler)
    try:
        with chunk_mapper(dask_mapper(client)):
            yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
