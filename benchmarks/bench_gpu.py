"""fireval on a torch device against a one-pass floor, TorchMetrics and the argsort code papers
copy (not a test): ``.venv/bin/python benchmarks/bench_gpu.py [--device cuda] [--small]``.

Every number is measured in the same run, and each ratio divides two of them:

1. Score matrices on the device (model-like scores: ``T @ V.T`` of 64-d embeddings where each
   caption is its video's embedding plus noise; caption ``i`` describes video ``i % n_videos``),
   both directions:

   * ``fireval R@K``: ``fireval.evaluate(tensor, measures="R@1,R@5,R@10,MdR,MnR")``;
   * ``fireval default``: the default measure set;
   * ``floor``: a plain one-pass count on the device: for each query, the docs scoring above and
     equal to its (best) relevant doc, then R@K, MdR and MnR from those two counts (no sort);
   * ``argsort``: the numpy code papers copy (copy to the host, ``np.argsort`` of every row, find
     the relevant doc's position), run while the matrix has at most 2e8 scores;
   * ``torchmetrics``: ``RetrievalRecall(top_k=1)`` on the flattened matrix, when TorchMetrics is
     installed and the matrix has at most 2e8 scores.

   The floor's tie-aware t2v R@1 and MnR are checked against fireval's (they must agree).

2. From embeddings on the device (256-d, cosine), both directions, default measures: fireval's
   blocks (matmul, then counts) against the floor's matmul + one pass per block.

Sizes: on CUDA 1k x 1k, 59,800 x 2,990, 100k x 10k and 1M x 100k from embeddings; on a CPU (or
``--small``) 1k x 1k, 5,980 x 299, 10k x 1k and 20k x 2k from embeddings. Times are the best of
``--repeat`` runs, synchronised with the device.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import fireval
import torch
from fireval.core import Judgments

ARGSORT_MAX = 200_000_000


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def best(fn: Callable[[], Any], device: torch.device, repeat: int) -> tuple[float, Any]:
    out, times = None, []
    for _ in range(repeat):
        sync(device)
        t0 = time.perf_counter()
        out = fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    return min(times), out


def embeddings(
    n_c: int, n_v: int, dim: int, device: torch.device, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(seed)
    v = torch.randn(n_v, dim, generator=g).to(device)
    t = torch.empty(n_c, dim, device=device)
    step = 1 << 16
    for lo in range(0, n_c, step):
        hi = min(n_c, lo + step)
        idx = torch.arange(lo, hi, device=device) % n_v
        t[lo:hi] = v[idx] + 1.5 * torch.randn(hi - lo, dim, generator=g).to(device)
    return t, v


def labels(n_c: int, n_v: int) -> Judgments:
    rows = np.arange(n_c)
    return Judgments.from_arrays((n_c, n_v), rows, rows % n_v, np.ones(n_c), "instance")


def floor_counts(s: torch.Tensor, n_v: int) -> dict[str, float]:
    """One pass per direction: docs above / equal to the (best) relevant doc; R@K, MdR, MnR."""
    n_c = s.shape[0]
    dev = s.device
    gt = torch.arange(n_c, device=dev) % n_v
    out: dict[str, float] = {}
    sv = s[torch.arange(n_c, device=dev), gt]
    g = (s > sv[:, None]).sum(1).double()
    t = (s == sv[:, None]).sum(1).double()
    rank = g + (t + 1) / 2
    for k in (1, 5, 10):
        out[f"t2v R@{k}"] = float(((k - g) / t).clamp(0, 1).mean())
    out["t2v MdR"], out["t2v MnR"] = float(rank.median()), float(rank.mean())
    best_v = torch.full((n_v,), float("-inf"), device=dev, dtype=s.dtype).scatter_reduce(0, gt, sv, "amax")
    gv = (s > best_v[None, :]).sum(0).double()
    rv = gv + 1
    for k in (1, 5, 10):
        out[f"v2t R@{k}"] = float((gv < k).double().mean())
    out["v2t MdR"], out["v2t MnR"] = float(rv.median()), float(rv.mean())
    return out


def argsort_papers(s: torch.Tensor, n_v: int) -> float:
    """The numpy code papers copy: host copy, argsort every row, position of the relevant doc."""
    x = s.cpu().numpy()
    gt = np.arange(x.shape[0]) % n_v
    order = np.argsort(-x, axis=1)
    ranks = np.where(order == gt[:, None])[1]
    xt = x.T
    order_v = np.argsort(-xt, axis=1)
    first = np.full(n_v, x.shape[0])
    r, c = np.nonzero(gt[order_v] == np.arange(n_v)[:, None])
    np.minimum.at(first, r, c)
    return float((ranks < 1).mean() + (first < 1).mean())


def torchmetrics_recall(s: torch.Tensor, n_v: int) -> float:
    from torchmetrics.retrieval import RetrievalRecall

    n_c = s.shape[0]
    gt = torch.arange(n_c, device=s.device) % n_v
    target = torch.zeros_like(s, dtype=torch.bool)
    target[torch.arange(n_c, device=s.device), gt] = True
    idx = torch.arange(n_c, device=s.device)[:, None].expand_as(s)
    return float(RetrievalRecall(top_k=1)(s.reshape(-1), target.reshape(-1), indexes=idx.reshape(-1)))


def bench_scores(n_c: int, n_v: int, device: torch.device, repeat: int) -> None:
    t, v = embeddings(n_c, n_v, 64, device)
    s = t @ v.T
    del t, v
    j = labels(n_c, n_v)
    rk = "R@1,R@5,R@10,MdR,MnR"
    t_fire, ev = best(lambda: fireval.evaluate(s, labels=j, measures=rk), device, repeat)
    t_def, _ = best(lambda: fireval.evaluate(s, labels=j), device, repeat)
    t_floor, fl = best(lambda: floor_counts(s, n_v), device, repeat)
    for m in ("R@1", "MnR"):
        a, b = ev.value(m, "t2v"), fl[f"t2v {m}"]
        assert abs(a - b) <= 1e-9 * max(1.0, abs(a)), (m, a, b)
    row = (
        f"{n_c:>9,} x {n_v:<7,} fireval R@K {t_fire * 1e3:9.1f} ms  default {t_def * 1e3:9.1f} ms  "
        f"floor {t_floor * 1e3:8.1f} ms  R@K/floor {t_fire / t_floor:6.1f}x  default/floor {t_def / t_floor:6.1f}x"
    )
    if s.numel() <= ARGSORT_MAX:
        t_arg, _ = best(lambda: argsort_papers(s, n_v), device, 1)
        row += f"  argsort {t_arg * 1e3:9.1f} ms ({t_arg / t_def:5.1f}x default)"
        try:
            import torchmetrics  # noqa: F401
        except ImportError:
            row += "  torchmetrics: not installed"
        else:
            t_tm, _ = best(lambda: torchmetrics_recall(s, n_v), device, 1)
            row += f"  torchmetrics R@1 {t_tm * 1e3:9.1f} ms ({t_tm / t_def:5.1f}x default)"
    print(row, flush=True)


def bench_embeddings(n_c: int, n_v: int, device: torch.device, repeat: int) -> None:
    t, v = embeddings(n_c, n_v, 256, device)
    j = labels(n_c, n_v)
    t_fire, _ = best(lambda: fireval.evaluate(labels=j, text_emb=t, video_emb=v), device, repeat)

    def floor() -> None:
        tn = t / t.norm(dim=1, keepdim=True)
        vn = v / v.norm(dim=1, keepdim=True)
        rows = max(1, (1 << 28) // n_v) if device.type == "cuda" else max(1, (1 << 22) // n_v)
        gt_all = torch.arange(n_c, device=device) % n_v
        for lo in range(0, n_c, rows):  # t2v: matmul + one pass per block
            s = tn[lo : lo + rows] @ vn.T
            sv = s[torch.arange(s.shape[0], device=device), gt_all[lo : lo + rows]]
            (s > sv[:, None]).sum(1)
        cols = max(1, (1 << 28) // n_c) if device.type == "cuda" else max(1, (1 << 22) // n_c)
        for lo in range(0, n_v, cols):  # v2t: the best caption of each video, then one pass
            s = tn @ vn[lo : lo + cols].T
            own = gt_all - lo
            sel = (own >= 0) & (own < s.shape[1])
            best_v = torch.full((s.shape[1],), float("-inf"), device=device)
            best_v = best_v.scatter_reduce(0, own[sel], s[sel, own[sel]], "amax")
            (s > best_v[None, :]).sum(0)

    t_floor, _ = best(floor, device, repeat)
    print(
        f"{n_c:>9,} x {n_v:<7,} from 256-d embeddings: fireval default {t_fire:8.2f} s  "
        f"floor (matmul + one pass) {t_floor:8.2f} s  ratio {t_fire / t_floor:6.1f}x",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--small", action="store_true", help="the CPU sizes, on any device")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-embeddings", action="store_true")
    ap.add_argument(
        "--torch-kernel",
        action="store_true",
        help="on a CPU, count with the torch kernel and an accelerator's strategies, instead of the numpy kernels in place",
    )
    ap.add_argument(
        "--threads", type=int, default=0, help="torch intra-op threads on a CPU (0: torch's default)"
    )
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.torch_kernel:  # with an accelerator's strategies
        import fireval.torch
        from fireval.torch import counting

        fireval.torch.HOST_DEVICES = frozenset()
        counting.DIRECT_MAX_BY_DEVICE = {}
    device = torch.device(args.device)
    small = args.small or device.type == "cpu"
    sizes = (
        [(1000, 1000), (5980, 299), (10_000, 1000)]
        if small
        else [(1000, 1000), (59_800, 2990), (100_000, 10_000)]
    )
    emb = (20_000, 2000) if small else (1_000_000, 100_000)
    name = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"CPU ({torch.get_num_threads()} threads)"
    )
    import fireval.torch

    kernel = "torch" if device.type not in fireval.torch.HOST_DEVICES else "numpy (in place)"
    print(
        f"device: {name}; torch {torch.__version__}; fireval counts with {kernel}; best of {args.repeat}",
        flush=True,
    )
    for n_c, n_v in sizes:
        bench_scores(n_c, n_v, device, args.repeat)
    if not args.skip_embeddings:
        bench_embeddings(*emb, device, max(1, args.repeat // 2))


if __name__ == "__main__":
    main()
