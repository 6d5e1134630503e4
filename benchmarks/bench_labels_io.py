"""Reading a full-test proxy label file: load time against a one-pass floor, in one run.

Run::

    .venv/bin/python benchmarks/bench_labels_io.py [--repeat 2] [--general] [--keep DIR]

Builds the file ``fireval proxies build`` writes for MSR-VTT full test (59,800 captions ×
2,990 videos, every pair stored, grade 0 = judged irrelevant) with
:func:`fireval.formats.labels.write_graded_dense` from a seeded random grid shaped like a BoW
proxy's (60% zeros, the rest ratios of small integers, as IoUs are; about 160 MB), and a
dense float32 ``.npy`` of the same 59,800 × 2,990 values. Each reader runs in a fresh
process (timed around the call only; peak RSS of the whole process, ``VmHWM``):

- floor: :func:`numpy.load` of the dense ``.npy`` (one pass over 715 MB, from the page cache);
- ``ProxyRelevance.load`` (what ``fireval proxies`` commands use);
- ``read_graded_labels`` onto the collection (what ``fireval evaluate --labels`` uses; it
  builds :class:`~fireval.core.Judgments` of 178.8 M entries: int32 rows and cols and the
  file's float32 grades, 2.1 GB);
- with ``--merge``, ``api.label_sets``: that read plus the merge with the instance labels under FIRE's
  precedence (what ``fireval evaluate --labels`` does before evaluating; the merge shares the
  grid's index arrays and copies its grades once);
- with ``--general``, both readers again on a copy without the ``grid`` marker (the streamed
  general path that older files and sparse files take);
- with ``--evaluate``, ``fireval evaluate`` end to end in a fresh process (``-q --no-checks
  --json``, both directions, default measures) on a random float32 score matrix of the same
  shape, over a JSON-lines collection with the file's ids: once with the instance labels only
  and once with ``--labels`` the grid (wall time of the command, peak RSS of the process).
  ``--rows N`` builds a grid of N captions instead (e.g. for a before/after run with ``--src``
  where the previous code would not fit in memory at full size).

Ratios are to the floor measured in the same run; with ``--repeat`` the runs are interleaved
and the best wall time of each is kept. The machine may be shared: the load average is printed.
``--src DIR`` runs the readers from another checkout's ``src`` (e.g. the previous commit's, via
``git archive``) for a before/after comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
N, M = 59_800, 2_990

SETUP = """
import json, sys, time, resource
import numpy as np
path = sys.argv[1]
"""

CODE = {
    "floor": "t = time.perf_counter(); c = time.process_time(); x = np.load(path)",
    "relevance": (
        "from fireval.proxies.relevance import ProxyRelevance\n"
        "t = time.perf_counter(); c = time.process_time(); x = ProxyRelevance.load(path)"
    ),
    "labels": (
        "from fireval.core import Collection\n"
        "from fireval.formats.labels import read_graded_labels\n"
        "n, m = {n}, {m}\n"
        "vids = [f'video{{j}}' for j in range(m)]\n"
        "coll = Collection.from_pairs('msrvtt-test', [(f'c{{i}}', vids[i % m], 't') for i in range(n)], video_ids=vids)\n"
        "t = time.perf_counter(); c = time.process_time(); x = read_graded_labels(path, coll)"
    ),
    "label_sets": (
        "from fireval import api\n"
        "from fireval.core import Collection\n"
        "n, m = {n}, {m}\n"
        "vids = [f'video{{j}}' for j in range(m)]\n"
        "coll = Collection.from_pairs('msrvtt-test', [(f'c{{i}}', vids[i % m], 't') for i in range(n)], video_ids=vids)\n"
        "t = time.perf_counter(); c = time.process_time(); x = api.label_sets(coll, [path])"
    ),
}

#: ``fireval evaluate`` in a child process: wall time of the command and the child's peak RSS
EVALUATE = """
import json, resource, subprocess, sys, time
t = time.perf_counter(); c = resource.getrusage(resource.RUSAGE_CHILDREN)
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t
if proc.returncode != 0:
    raise SystemExit(proc.stderr[-2000:])
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([wall, u.ru_utime + u.ru_stime - c.ru_utime - c.ru_stime, u.ru_maxrss * 1024]))
"""
FOOTER = """
wall, cpu = time.perf_counter() - t, time.process_time() - c
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
print(json.dumps([wall, cpu, int(hwm[0].split()[1]) * 1024 if hwm else 0]))
"""


def make_grid(n: int = N, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    g = np.empty((n, M), np.float32)
    for a in range(0, n, 4000):
        b = min(n, a + 4000)
        blk = (rng.integers(1, 4, (b - a, M)) / rng.integers(4, 16, (b - a, M))).astype(np.float32)
        blk[rng.random((b - a, M)) < 0.6] = 0
        g[a:b] = blk
    return g


def build(tmp: Path, n: int = N, evaluate: bool = False) -> dict[str, Path]:
    from fireval.formats.labels import write_graded_dense

    tag = "" if n == N else f"-{n}"
    out = {
        "npz": tmp / f"bow{tag}.npz",
        "npy": tmp / f"dense{tag}.npy",
        "general": tmp / f"bow-no-marker{tag}.npz",
        "scores": tmp / f"scores{tag}.npy",
        "collection": tmp / f"collection{tag}.jsonl",
    }
    if not out["npz"].exists():
        g = make_grid(n)
        np.save(out["npy"], g)
        caps = [f"c{i}" for i in range(n)]
        vids = [f"video{j}" for j in range(M)]
        t = time.perf_counter()
        write_graded_dense(
            out["npz"],
            g,
            source="proxy:bow",
            caption_ids=caps,
            video_ids=vids,
            meta={"proxy": "bow", "agg": "max"},
        )
        print(f"wrote {out['npz'].stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s")
    if evaluate and not out["scores"].exists():
        rng = np.random.default_rng(1)
        s = np.lib.format.open_memmap(out["scores"], mode="w+", dtype=np.float32, shape=(n, M))
        for a in range(0, n, 4000):
            s[a : a + 4000] = rng.standard_normal((min(n, a + 4000) - a, M), dtype=np.float32)
        s.flush()
        del s
        with out["collection"].open("w") as fh:  # caption i belongs to video i mod M, as in "labels"
            for i in range(n):
                fh.write(json.dumps({"caption_id": f"c{i}", "video_id": f"video{i % M}", "text": "t"}) + "\n")
    return out


def drop_marker(src: Path, dst: Path) -> None:
    """A copy without the ``grid`` member (members copied as they are, not re-deflated)."""
    if dst.exists():
        return
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", allowZip64=True) as zout:
        for info in zin.infolist():
            if info.filename != "grid.npy":
                with zin.open(info) as fi, zout.open(info, "w", force_zip64=True) as fo:
                    while chunk := fi.read(16 << 20):
                        fo.write(chunk)


def run(kind: str, path: Path, src: Path) -> tuple[float, float, float]:
    """(wall s, CPU s) of the call inside a fresh process, and the process's peak RSS (GB, VmHWM)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = SETUP + CODE[kind].format(n=_rows(path), m=M) + FOOTER
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, env=env, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed (status {proc.returncode}): {proc.stderr[-2000:]}")
    wall, cpu, hwm = json.loads(proc.stdout.strip().splitlines()[-1])
    return wall, cpu, hwm / 1e9


def _rows(path: Path) -> int:
    """The grid's number of captions, from the ``shape`` of a label file or a ``.npy``."""
    if path.suffix == ".npy":
        return int(np.load(path, mmap_mode="r").shape[0])
    with np.load(path) as z:
        return int(z["shape"][0])


def run_evaluate(files: dict[str, Path], labels: Path | None, src: Path) -> tuple[float, float, float, str]:
    """``fireval evaluate`` in a fresh process: (wall s, CPU s, peak RSS GB, digest of the results)."""
    import hashlib

    env = {**os.environ, "PYTHONPATH": str(src)}
    out = files["scores"].with_name(f"evaluate-{'labels' if labels else 'instance'}.json")
    cmd = [sys.executable, "-c", "from fireval.cli import main; main()", "evaluate", str(files["scores"])]
    cmd += ["-c", str(files["collection"]), "-q", "--no-checks", "--json", str(out)]
    if labels is not None:
        cmd += ["--labels", str(labels)]
    proc = subprocess.run([sys.executable, "-c", EVALUATE, *cmd], capture_output=True, env=env, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"fireval evaluate failed (status {proc.returncode}): {proc.stderr[-2000:]}")
    wall, cpu, rss = json.loads(proc.stdout.strip().splitlines()[-1])
    results = json.loads(out.read_text())["results"]
    digest = hashlib.sha256(json.dumps(results, sort_keys=True).encode()).hexdigest()[:12]
    return wall, cpu, rss / 1e9, digest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--general", action="store_true", help="also the general path (file without the marker)")
    ap.add_argument(
        "--merge", action="store_true", help="also api.label_sets (read + merge; before this change ~27 GB)"
    )
    ap.add_argument("--evaluate", action="store_true", help="also `fireval evaluate` end to end")
    ap.add_argument("--rows", type=int, default=N, help=f"captions of the grid (default {N:,})")
    ap.add_argument("--keep", type=Path, help="build the files in (and reuse them from) this directory")
    ap.add_argument("--src", type=Path, default=REPO / "src", help="fireval sources the readers run from")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fireval-bench-labels-") as tmpdir:
        tmp = args.keep or Path(tmpdir)
        tmp.mkdir(parents=True, exist_ok=True)
        files = build(tmp, args.rows, args.evaluate)
        cases: list[tuple[str, Path | None]] = [
            ("floor", files["npy"]),
            ("relevance", files["npz"]),
            ("labels", files["npz"]),
        ]
        if args.merge:
            cases.append(("label_sets", files["npz"]))
        if args.general:
            drop_marker(files["npz"], files["general"])
            cases += [("relevance", files["general"]), ("labels", files["general"])]
        if args.evaluate:
            cases += [("evaluate", None), ("evaluate", files["npz"])]
        best: dict[int, tuple[float, float, float]] = {}
        digests: dict[int, str] = {}
        for _ in range(args.repeat):
            for i, (kind, path) in enumerate(cases):
                if kind == "evaluate":
                    *res, digests[i] = run_evaluate(files, path, args.src)
                    r = (res[0], res[1], res[2])
                else:
                    assert path is not None
                    r = run(kind, path, args.src)
                if i not in best or r[0] < best[i][0]:
                    best[i] = r
        a, b, c = os.getloadavg()
        print(
            f"{args.rows:,} x {M:,} proxy labels ({files['npz'].stat().st_size / 1e6:.0f} MB .npz), "
            f"best of {args.repeat}; load average {a:.2f} {b:.2f} {c:.2f}; sources {args.src}"
        )
        print(
            f"  {'reader':<52}{'wall':>8} {'ratio':>6} | {'CPU':>7} {'ratio':>6} | {'peak RSS':>8} {'ratio':>6}"
        )
        floor = best[0]
        names = {
            "floor": "floor: np.load of the dense float32 .npy",
            "relevance": "ProxyRelevance.load",
            "labels": "read_graded_labels (evaluate --labels)",
            "label_sets": "api.label_sets: read + merge with instance labels",
        }
        for i, (kind, path) in enumerate(cases):
            wall, cpu, rss = best[i]
            if kind == "evaluate":
                name = "fireval evaluate, " + ("--labels the grid" if path else "instance labels only")
            else:
                name = names[kind] + (", no marker" if path == files["general"] else "")
            print(
                f"  {name:<52}{wall:7.2f}s {wall / floor[0]:5.1f}x | {cpu:6.2f}s {cpu / floor[1]:5.1f}x | "
                f"{rss:6.2f} GB {rss / floor[2]:5.1f}x" + (f"  results {digests[i]}" if i in digests else "")
            )


if __name__ == "__main__":
    main()
