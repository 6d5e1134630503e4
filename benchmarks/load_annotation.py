"""Load and crash figures of the annotation server, on SQLite and PostgreSQL, in one command.

For each backend (SQLite always; PostgreSQL with ``--pg-url`` or ``$FIREVAL_PG_URL``, whose
store tables are dropped and recreated):

1. **load**: ``fireval serve`` in a subprocess on 127.0.0.1; N simulated annotators
   (:mod:`loadgen`) log in and submit labels until M are acknowledged; 5 % are resubmitted
   (must come back as duplicates). Prints labels acknowledged, stored, lost, duplicated,
   labels/s and the p50/p95 latency of a submission (which also hands out the next item).
   Closed loop without think time: this is saturation, p95 ≈ queueing ≈ annotators / throughput.
2. **think**: the same with realistic pacing: each annotator waits an exponential think time of
   mean ``--think-ms`` (default 2000 ms, seeded) before each answer, for ``--think-seconds``
   (bounded): the latency annotators actually experience (``--think-ms 0`` skips it).
3. **crash**: the same against a fresh store, and the server is killed with SIGKILL once a few
   hundred labels are committed; it is restarted on the same database and every label that
   was acknowledged before the kill must be there.

``lost`` = acknowledged label ids missing from the store; ``duplicated`` = stored rows beyond
one per (item, annotator) plus label ids acknowledged twice for different submissions.

    .venv/bin/python benchmarks/load_annotation.py [--annotators 50] [--labels 5000] [--no-crash]
        [--think-ms 2000] [--think-seconds 20]

Writes the figures to ``--json`` too (default: none).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from loadgen import LoadResult, ServerProcess, reset_postgres, run_load

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store


def prepare(db: str, n_items: int, n_annotators: int) -> dict[str, str]:
    if not db.startswith("sqlite"):
        reset_postgres(db)
    st = Store(db)
    st.add_items(
        [
            PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}, double=(i % 10 == 0))
            for i in range(n_items)
        ],
        "B",
    )
    tokens = {f"ann{k}": st.add_annotator(f"ann{k}")[1] for k in range(n_annotators)}
    st.close()
    return tokens


def stored(db: str) -> tuple[set[int], int, int]:
    """Label ids in the store, number of rows, number of distinct (item, annotator) pairs."""
    st = Store(db, upgrade=False)
    v = st.votes()
    st.close()
    pairs = set(zip(v["item_id"].tolist(), v["annotator_id"].tolist()))
    return set(v["label_id"].tolist()), int(v["label_id"].size), len(pairs)


def figures(db: str, res: LoadResult) -> dict[str, Any]:
    ids, n_rows, n_pairs = stored(db)
    acked = [lid for lid, _, _ in res.acked]
    return {
        "labels_acknowledged": len(acked),
        "labels_stored": n_rows,
        "lost": len(set(acked) - ids),
        "duplicated": (n_rows - n_pairs) + (len(acked) - len(set(acked))),
        "stored_unacknowledged": len(ids - set(acked)),
        "resubmissions_answered_duplicate": res.duplicates_ok,
        "errors": len(res.errors),
    }


def load_run(
    db: str,
    annotators: int,
    labels: int,
    log: Path,
    think_ms: float = 0.0,
    max_seconds: float | None = None,
) -> dict[str, Any]:
    tokens = prepare(db, labels + labels // 5, annotators)
    server = ServerProcess(db, log=log).start()
    try:
        res = run_load(server.url, tokens, labels, seed=0, think_ms=think_ms, max_seconds=max_seconds)
    finally:
        server.stop()
    return {
        **figures(db, res),
        "seconds": round(res.elapsed, 2),
        "labels_per_s": round(res.rate, 1),
        "p50_ms": round(res.percentile(50) * 1000, 1),
        "p95_ms": round(res.percentile(95) * 1000, 1),
    }


def crash_run(db: str, annotators: int, log: Path, kill_after: int = 300) -> dict[str, Any]:
    tokens = prepare(db, 5000, annotators)
    srv = ServerProcess(db, log=log).start()
    stop = threading.Event()
    out: dict[str, LoadResult] = {}
    th = threading.Thread(target=lambda: out.setdefault("r", run_load(srv.url, tokens, 10**9, stop=stop)))
    th.start()
    deadline = time.monotonic() + 120  # bounded: kill once a few hundred labels are committed
    while time.monotonic() < deadline and stored(db)[1] < kill_after:
        time.sleep(0.2)
    srv.kill9()
    stop.set()
    th.join(60)
    srv2 = ServerProcess(db, log=log).start()  # restart on the same database
    srv2.stop()
    res = out["r"]
    return {
        **figures(db, res),
        "p50_ms": round(res.percentile(50) * 1000, 1),
        "p95_ms": round(res.percentile(95) * 1000, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--annotators", type=int, default=50)
    ap.add_argument("--labels", type=int, default=5000)
    ap.add_argument("--pg-url", default=os.environ.get("FIREVAL_PG_URL"), help="PostgreSQL store (emptied!)")
    ap.add_argument("--no-crash", action="store_true", help="skip the kill -9 runs")
    ap.add_argument(
        "--think-ms", type=float, default=2000.0, help="mean think time of the paced run (0: skip it)"
    )
    ap.add_argument("--think-seconds", type=float, default=20.0, help="length of the paced run")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    if args.think_ms < 0 or args.think_seconds <= 0:
        ap.error("--think-ms must be >= 0 and --think-seconds > 0")
    tmp = Path(tempfile.mkdtemp(prefix="fireval-load-"))
    backends = {"sqlite": lambda name: f"sqlite:///{tmp / (name + '.db')}"}
    if args.pg_url:
        backends["postgresql"] = lambda _name: str(args.pg_url)
    report: dict[str, Any] = {"annotators": args.annotators, "cpus": os.cpu_count(), "runs": []}
    for backend, url_of in backends.items():
        row = {
            "backend": backend,
            "run": "load",
            **load_run(url_of("load"), args.annotators, args.labels, tmp / "load.log"),
        }
        report["runs"].append(row)
        if args.think_ms > 0:
            row = {
                "backend": backend,
                "run": f"think {args.think_ms:g} ms",
                **load_run(
                    url_of("think"),
                    args.annotators,
                    args.labels,
                    tmp / "think.log",
                    think_ms=args.think_ms,
                    max_seconds=args.think_seconds,
                ),
            }
            report["runs"].append(row)
        if not args.no_crash:
            row = {
                "backend": backend,
                "run": "kill -9",
                **crash_run(url_of("crash"), args.annotators, tmp / "crash.log"),
            }
            report["runs"].append(row)
    report["load_average_1min_at_end"] = round(os.getloadavg()[0], 2)
    cols = (
        "backend",
        "run",
        "labels_acknowledged",
        "labels_stored",
        "lost",
        "duplicated",
        "labels_per_s",
        "p50_ms",
        "p95_ms",
    )
    print(" | ".join(cols))
    for r in report["runs"]:
        print(" | ".join(str(r.get(c, "")) for c in cols))
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
