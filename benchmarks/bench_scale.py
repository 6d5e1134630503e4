"""Evaluation from embeddings (not a test): ``.venv/bin/python benchmarks/bench_scale.py [--quick]``.

Every number is measured in the same run and printed with its ratio:

1. Embeddings vs dense, 20,000 captions x 2,000 videos, dim 256, float32, instance labels,
   all default measures, both directions: the dense path (``T @ V.T`` once, then ``evaluate``)
   against ``evaluate_embeddings`` (blocks computed and ranked one at a time). Each in a fresh
   child process, so that peak RSS (``VmHWM``) is its own. Results must be identical: the
   script checks it.
2. Growth with the number of queries: t2v from embeddings, 10,000 videos, dim 32, captions from
   10k to 1M (``--quick``: to 100k), each point in a child process: wall time, time per query,
   peak RSS. The dense matrix at 1M x 10k would be 40 GB (float32); the blockwise path never
   holds more than one block per thread.
3. The same blockwise evaluation on a Dask LocalCluster (2 worker processes, 1 thread each)
   at 100,000 x 10,000 (``--quick``: 20,000), against the single-process path (2 threads).

Timings are wall clock on a shared 2-core machine; compare the ratios, not the absolutes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _peak_rss_gib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024 / 1024
    return float("nan")  # pragma: no cover - non-Linux


def _data(n_c: int, n_v: int, dim: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Model-like embeddings: each caption is its video's embedding plus noise (normalised later)."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n_v, dim), dtype=np.float32)
    t = np.empty((n_c, dim), np.float32)
    step = 1 << 16
    for lo in range(0, n_c, step):
        hi = min(n_c, lo + step)
        t[lo:hi] = v[np.arange(lo, hi) % n_v] + 1.5 * rng.standard_normal((hi - lo, dim), dtype=np.float32)
    return t, v


def _labels(n_c: int, n_v: int) -> Any:
    from fireval.core import Judgments

    rows = np.arange(n_c)
    return Judgments.from_arrays((n_c, n_v), rows, rows % n_v, np.ones(n_c), "instance")


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """One measurement in a fresh process (``--child JSON``); prints a JSON line."""
    from fireval.core import Run
    from fireval.metrics import evaluate
    from fireval.scale import evaluate_embeddings

    n_c, n_v, dim = spec["n_c"], spec["n_v"], spec["dim"]
    t, v = _data(n_c, n_v, dim)
    j = _labels(n_c, n_v)
    dirs = spec.get("directions", ("t2v", "v2t"))
    base = _peak_rss_gib()
    t0 = time.perf_counter()
    if spec["mode"] == "dense":
        tn = t / np.linalg.norm(t, axis=1, keepdims=True)
        vn = v / np.linalg.norm(v, axis=1, keepdims=True)
        scores = tn @ vn.T
        t_mm = time.perf_counter() - t0
        ev = evaluate(Run("embeddings", scores=scores), j, directions=dirs)
    elif spec["mode"] == "dask":
        from distributed import Client, LocalCluster

        with (
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl,
            Client(cl) as client,
        ):
            client.run(lambda: None)  # workers up before the clock starts
            t0 = time.perf_counter()
            ev = evaluate_embeddings(t, v, j, sim="cosine", directions=dirs, client=client)
        t_mm = 0.0
    else:
        ev = evaluate_embeddings(t, v, j, sim="cosine", directions=dirs)
        t_mm = 0.0
    wall = time.perf_counter() - t0
    out = {
        "wall": wall,
        "matmul": t_mm,
        "peak_gib": _peak_rss_gib(),
        "inputs_gib": (t.nbytes + v.nbytes) / 2**30,
        "base_gib": base,
        "values": ev.table["value"].tolist(),
        "C@1": ev.value("C@1", dirs[0]),
    }
    print(json.dumps(out))
    return out


def run_child(**spec: Any) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        raise SystemExit(f"child failed: {spec}\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def bench_vs_dense(n_c: int, n_v: int, dim: int) -> None:
    print(
        f"\n== embeddings vs dense: {n_c:,} captions x {n_v:,} videos, dim {dim}, cosine, both directions =="
    )
    d = run_child(mode="dense", n_c=n_c, n_v=n_v, dim=dim)
    e = run_child(mode="blocks", n_c=n_c, n_v=n_v, dim=dim)
    same = d["values"] == e["values"]
    print(
        f"dense: T @ V.T {d['matmul']:.2f} s + evaluate {d['wall'] - d['matmul']:.2f} s = {d['wall']:.2f} s; "
        f"peak RSS {d['peak_gib']:.2f} GiB (score matrix {n_c * n_v * 4 / 2**30:.2f} GiB)"
    )
    print(f"embeddings, blockwise: {e['wall']:.2f} s; peak RSS {e['peak_gib']:.2f} GiB")
    print(
        f"  ratio embeddings / dense (end to end, incl. the product) = {e['wall'] / d['wall']:.2f}; "
        f"peak memory ratio = {e['peak_gib'] / d['peak_gib']:.2f}; results identical: {same}"
    )


def bench_growth(points: list[int], n_v: int, dim: int) -> None:
    print(f"\n== growth: t2v from embeddings, {n_v:,} videos, dim {dim}, cosine, default measures ==")
    print(
        f"{'captions':>10} {'wall s':>8} {'us/query':>9} {'peak GiB':>9} {'inputs GiB':>10} {'dense would be':>15}"
    )
    first: dict[str, Any] | None = None
    for n_c in points:
        r = run_child(mode="blocks", n_c=n_c, n_v=n_v, dim=dim, directions=["t2v"])
        first = first or {**r, "n": n_c}
        print(
            f"{n_c:>10,} {r['wall']:>8.2f} {r['wall'] / n_c * 1e6:>9.1f} {r['peak_gib']:>9.2f} "
            f"{r['inputs_gib']:>10.2f} {n_c * n_v * 4 / 2**30:>12.1f} GiB"
        )
    last = r
    k = points[-1] / points[0]
    print(
        f"  {points[0]:,} -> {points[-1]:,} queries ({k:.0f}x): time x{last['wall'] / first['wall']:.1f}, "
        f"peak RSS x{last['peak_gib'] / first['peak_gib']:.2f} (inputs x{last['inputs_gib'] / first['inputs_gib']:.1f})"
    )


def bench_dask(n_c: int, n_v: int, dim: int) -> None:
    print(
        f"\n== Dask LocalCluster (2 worker processes x 1 thread) vs one process: {n_c:,} x {n_v:,}, dim {dim} =="
    )
    try:
        import distributed  # noqa: F401
    except ImportError:
        print("dask.distributed not installed (extra 'scale'): skipped")
        return
    a = run_child(mode="blocks", n_c=n_c, n_v=n_v, dim=dim)
    b = run_child(mode="dask", n_c=n_c, n_v=n_v, dim=dim)
    print(f"one process, 2 threads: {a['wall']:.2f} s; Dask: {b['wall']:.2f} s (cluster start not counted)")
    print(
        f"  ratio Dask / one process = {b['wall'] / a['wall']:.2f}; results identical: {a['values'] == b['values']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if args.quick:
        bench_vs_dense(5_000, 1_000, 64)
        bench_growth([10_000, 100_000], 10_000, 32)
        bench_dask(20_000, 2_000, 32)
    else:
        bench_vs_dense(20_000, 2_000, 256)
        bench_growth([10_000, 100_000, 1_000_000], 10_000, 32)
        bench_dask(100_000, 10_000, 32)


if __name__ == "__main__":
    main()
