"""Load benchmark of the annotation server: N concurrent simulated annotators submit M labels.

Default: 50 annotators, 10,000 labels, SQLite store, server = ``fireval serve`` subprocess on
127.0.0.1. Checks that no acknowledged label is lost or duplicated and prints labels/s and the
p50/p95 latency of label submissions, then (``--crash``) kills the server with SIGKILL mid-run,
restarts it and checks every acknowledged label is present.

    .venv/bin/python benchmarks/load_annotation.py [--annotators 50] [--labels 10000] [--db URL] [--crash]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.loadgen import ServerProcess, run_load


def prepare(db: str, n_items: int, n_annotators: int) -> dict[str, str]:
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
    st = Store(db, upgrade=False)
    v = st.votes()
    st.close()
    pairs = set(zip(v["item_id"].tolist(), v["annotator_id"].tolist()))
    return set(v["label_id"].tolist()), int(v["label_id"].size), len(pairs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--annotators", type=int, default=50)
    ap.add_argument("--labels", type=int, default=10_000)
    ap.add_argument("--db", default=None, help="store URL (default: a fresh SQLite file)")
    ap.add_argument("--crash", action="store_true", help="also run the kill -9 test")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fireval-load-"))
    db = args.db or f"sqlite:///{tmp / 'load.db'}"
    tokens = prepare(db, args.labels + args.labels // 5, args.annotators)
    server = ServerProcess(db, log=tmp / "server.log").start()
    try:
        res = run_load(server.url, tokens, args.labels, seed=0)
    finally:
        server.stop()
    ids, n_rows, n_pairs = stored(db)
    acked = [lid for lid, _, _ in res.acked]
    report = {
        "annotators": args.annotators,
        "labels_acknowledged": len(acked),
        "labels_stored": n_rows,
        "lost": len(set(acked) - ids),
        "unacknowledged_extra": len(ids - set(acked)),
        "duplicate_rows": n_rows - n_pairs,
        "resubmissions_answered_duplicate": res.duplicates_ok,
        "errors": len(res.errors),
        "seconds": round(res.elapsed, 2),
        "labels_per_s": round(res.rate, 1),
        "p50_ms": round(res.percentile(50) * 1000, 1),
        "p95_ms": round(res.percentile(95) * 1000, 1),
        "p99_ms": round(res.percentile(99) * 1000, 1),
        "db": db.split("://")[0],
        "sqlite_synchronous": os.environ.get("FIREVAL_SQLITE_SYNC", "FULL")
        if db.startswith("sqlite")
        else None,
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    if args.crash:
        cdb = f"sqlite:///{tmp / 'crash.db'}" if args.db is None else db
        ctokens = prepare(cdb, 5000, args.annotators) if args.db is None else tokens
        srv = ServerProcess(cdb, log=tmp / "crash.log").start()
        stop = threading.Event()
        out: dict = {}
        th = threading.Thread(
            target=lambda: out.setdefault("r", run_load(srv.url, ctokens, 10**9, stop=stop))
        )
        th.start()
        deadline = time.monotonic() + 120  # bounded: kill once a few hundred labels are committed
        while time.monotonic() < deadline and stored(cdb)[1] < 300:
            time.sleep(0.2)
        srv.kill9()
        stop.set()
        th.join(60)
        srv2 = ServerProcess(cdb, log=tmp / "crash2.log").start()
        srv2.stop()
        present, _, _ = stored(cdb)
        cacked = {lid for lid, _, _ in out["r"].acked}
        report["crash"] = {
            "acknowledged_before_kill": len(cacked),
            "missing_after_restart": len(cacked - present),
            "committed_but_unacknowledged": len(present - cacked),
        }
    print(json.dumps(report, indent=2))
    np.save(tmp / "latencies.npy", np.asarray(res.latencies))


if __name__ == "__main__":
    main()
