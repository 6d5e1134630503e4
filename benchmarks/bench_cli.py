"""Start-up cost of the ``fireval`` command (not a test): ``.venv/bin/python benchmarks/bench_cli.py``.

Every command runs in a fresh child process, N times in turn (interleaved, so a burst of load
from other processes hits all of them alike); the best wall time of each is printed, in ms and
as the difference to the bare interpreter (``python -c pass``) measured in the same run:

1. ``python -c pass``: the floor (the interpreter and ``site``).
2. ``fireval --help``: target at most +150 ms (the app prints Click's plain help,
   ``rich_markup_mode=None``: Typer's rich panels import rich.markdown, markdown-it and pygments,
   about 90 ms more).
3. ``fireval evaluate RUN -c COLL`` on a 1k x 1k matrix (CLIP4Clip on MSR-VTT 1k-A, from
   /work/shared/data, or a random 1k x 1k matrix with the bundled 1k-A collection when that is
   missing), with and without ``--no-checks``: target at most +350 ms.

The children run ``python -m fireval`` with the same interpreter as this script (identical to
the ``fireval`` console script, minus its few-ms wrapper). The load average is printed, because
on a shared machine absolute times move by 2x or more; compare the differences within one run.
The children always use bytecode, as an installed package does: ``PYTHONDONTWRITEBYTECODE`` is
dropped from their environment and ``PYTHONPYCACHEPREFIX`` points at a private temporary
directory, filled by the warm-up runs (so nothing is written into the source tree, and a shell
that disables bytecode does not add the compilation of every fireval module to each run).
``--importtime`` also prints the ten slowest cumulative imports of each command
(``python -X importtime``), to find what to make lazy next.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path("/work/shared/data/msrvtt")
SIMS = DATA / "sims" / "clip4clip_msrvtt.npy"
CSV = DATA / "MSRVTT_JSFUSION_test.csv"

#: the children's environment (set in main: bytecode in a private cache directory)
CHILD_ENV: dict[str, str] = dict(os.environ)
TARGETS_MS = {"fireval --help": 150.0, "evaluate 1kx1k": 350.0, "evaluate 1kx1k --no-checks": 350.0}


def inputs(tmp: Path) -> tuple[str, list[str]]:
    """A 1k x 1k run and the collection options; the real CLIP4Clip matrix when present."""
    if SIMS.exists() and CSV.exists():
        return f"{SIMS.name} with {CSV.name}", [str(SIMS), "-c", str(CSV)]
    import numpy as np

    path = tmp / "random_1k.npy"
    np.save(path, np.random.default_rng(0).standard_normal((1000, 1000)).astype(np.float32))
    return "random 1k x 1k with the bundled MSR-VTT 1k-A", [str(path)]


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one child process, in seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False, env=CHILD_ENV
    )
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def top_imports(argv: list[str], k: int = 10) -> list[tuple[int, str]]:
    """The k slowest cumulative imports (us, module) of one child run with -X importtime."""
    proc = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, check=False, env=CHILD_ENV
    )
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                rows.append((int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--repeat", type=int, default=15, help="runs per command (best of N)")
    ap.add_argument("--importtime", action="store_true", help="also print the slowest imports")
    args = ap.parse_args()

    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        CHILD_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        CHILD_ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        what, run_args = inputs(Path(tmp))
        commands = {
            "python -c pass": [py, "-c", "pass"],
            "fireval --help": [py, "-m", "fireval", "--help"],
            "evaluate 1kx1k": [py, "-m", "fireval", "evaluate", *run_args],
            "evaluate 1kx1k --no-checks": [py, "-m", "fireval", "evaluate", *run_args, "--no-checks"],
        }
        for argv in commands.values():  # warm the page cache and .pyc files
            run_once(argv)
        best = dict.fromkeys(commands, float("inf"))
        best_cpu = dict.fromkeys(commands, float("inf"))
        load_before = os.getloadavg()
        for _ in range(args.repeat):
            for name, argv in commands.items():
                wall, cpu = run_once(argv)
                best[name] = min(best[name], wall)
                best_cpu[name] = min(best_cpu[name], cpu)
        load_after = os.getloadavg()

        print(f"CLI start-up, best of {args.repeat} (interleaved), {os.cpu_count()} CPUs")
        print(
            f"load average (1/5/15 min): before {load_before[0]:.1f}/{load_before[1]:.1f}/"
            f"{load_before[2]:.1f}, after {load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f}"
        )
        print(f"evaluate input: {what}")
        print("wall = elapsed time; cpu = user + system time of the child (less sensitive to load)")
        print(f"{'command':<34}{'wall ms':>9}{'- bare':>8}{'cpu ms':>9}{'- bare':>8}{'target':>9}")
        for name in commands:
            d_wall = (best[name] - best["python -c pass"]) * 1e3
            d_cpu = (best_cpu[name] - best_cpu["python -c pass"]) * 1e3
            if name == "python -c pass":
                print(f"{name:<34}{best[name] * 1e3:>9.0f}{'':>8}{best_cpu[name] * 1e3:>9.0f}")
                continue
            target = TARGETS_MS.get(name)
            verdict = "" if target is None else f"{'<=' if d_wall <= target else '> '}{target:.0f}"
            print(
                f"{name:<34}{best[name] * 1e3:>9.0f}{d_wall:>+8.0f}"
                f"{best_cpu[name] * 1e3:>9.0f}{d_cpu:>+8.0f}{verdict:>9}"
            )
        print("(the verdict compares the wall-time difference with the target)")

        if args.importtime:
            for name, argv in commands.items():
                if name == "python -c pass":
                    continue
                print(f"\nslowest cumulative imports, {name} (one run, us):")
                for us, module in top_imports(argv):
                    print(f"  {us:>9}  {module}")


if __name__ == "__main__":
    main()
