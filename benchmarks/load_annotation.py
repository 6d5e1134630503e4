"""Load and crash figures of the annotation server, on SQLite and PostgreSQL, in one command.

For each backend (SQLite always; PostgreSQL with ``--pg-url`` or ``$FIREVAL_PG_URL``, whose
store tables are dropped and recreated):

1. **load**: ``fireval serve`` in a subprocess on 127.0.0.1; N simulated annotators
   (:mod:`loadgen`) log in and submit labels until M are acknowledged; 5 % are resubmitted
   (must come back as duplicates). Like the annotation page, each annotator also asks
   ``GET /api/peek`` (the next video's prefetch) once per item, timed apart (``--no-peek``:
   not; the figures before this option had no peek). Prints labels acknowledged, stored, lost,
   duplicated, labels/s, the p50/p95 latency of a submission (which also hands out the next
   item) and of a peek.
   Closed loop without think time: this is saturation, p95 ≈ queueing ≈ annotators / throughput.
2. **think**: the same with realistic pacing: each annotator waits an exponential think time of
   mean ``--think-ms`` (default 2000 ms, seeded) before each answer, for ``--think-seconds``
   (bounded): the latency annotators actually experience (``--think-ms 0`` skips it).
3. **crash**: the same against a fresh store, and the server is killed with SIGKILL once a few
   hundred labels are committed; it is restarted on the same database and every label that
   was acknowledged before the kill must be there.

``lost`` = acknowledged label ids missing from the store; ``duplicated`` = stored rows beyond
one per (item, annotator) plus label ids acknowledged twice for different submissions. (Answers
carry an opaque answer handle, not a label id: :mod:`loadgen` maps them back with the server's
secret.)

The server runs with ``--workers`` processes (default: ``fireval serve``'s, 1). Each run also reports the server's CPU time per acknowledged label (all its processes,
from ``/proc``), the load generator's own CPU time per label, and the 1-minute load average
before and after it: on a shared machine the latency figures move with the other jobs, the CPU
per label much less. ``--repeat N`` runs every load N times, interleaved over the stores, and
prints every run and the best of them (highest labels/s at saturation, lowest p95 with think
time).

    .venv/bin/python benchmarks/load_annotation.py [--annotators 50] [--labels 5000] [--no-crash]
        [--think-ms 2000] [--think-seconds 20] [--workers N] [--repeat 3] [--sqlite-only | --pg-only]
        [--no-peek]

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
        "error_samples": res.errors[:3],  # what went wrong, when something did
    }


def server_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of the server process and its workers so far."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for p in [root, *root.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


def postgres_counters(db: str) -> tuple[float, int] | None:
    """CPU seconds of the PostgreSQL backends serving ``db``'s database (from ``/proc``; backends
    that exited meanwhile are not counted) and the database's committed transactions so far; ``None`` for SQLite."""
    if db.startswith("sqlite"):
        return None
    import psutil
    import sqlalchemy as sa

    dbname = sa.engine.make_url(db).database
    cpu = 0.0
    for p in psutil.process_iter(["name", "cmdline"]):
        # the backends serving this database ("postgres: USER DB HOST(PORT) STATE"): other
        # databases on the same server are other people's work
        if p.info["name"] in ("postgres", "postmaster") and f" {dbname} " in " ".join(
            p.info["cmdline"] or ()
        ):
            try:
                t = p.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            cpu += t.user + t.system
    eng = sa.create_engine(db)
    try:
        with eng.connect() as conn:
            commits = conn.exec_driver_sql(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
            ).scalar_one()
    finally:
        eng.dispose()
    return cpu, int(commits)


def load_run(
    db: str,
    annotators: int,
    labels: int,
    log: Path,
    think_ms: float = 0.0,
    max_seconds: float | None = None,
    workers: int | None = None,
    peek: bool = True,
) -> dict[str, Any]:
    tokens = prepare(db, labels + labels // 5, annotators)
    server = ServerProcess(db, log=log, workers=workers).start()
    assert server.proc is not None
    load_before = os.getloadavg()[0]
    try:
        pg0 = postgres_counters(db)
        cpu0, own0 = server_cpu_seconds(server.proc.pid), os.times()
        res = run_load(
            server.url,
            tokens,
            labels,
            seed=0,
            think_ms=think_ms,
            max_seconds=max_seconds,
            secret=server.secret,
            peek=peek,
        )
        cpu1, own1 = server_cpu_seconds(server.proc.pid), os.times()
        pg1 = postgres_counters(db)
    finally:
        server.stop()
    n = max(1, len(res.acked))
    own = (own1.user + own1.system) - (own0.user + own0.system)
    pg: dict[str, Any] = {}
    if pg0 is not None and pg1 is not None:  # the database server's share (not in server_cpu)
        pg = {
            "postgres_cpu_ms_per_label": round((pg1[0] - pg0[0]) * 1000 / n, 2),
            "postgres_commits_per_label": round((pg1[1] - pg0[1] - 1) / n, 2),  # less pg0's own read
        }
    return {
        **figures(db, res),
        "seconds": round(res.elapsed, 2),
        "labels_per_s": round(res.rate, 1),
        "p50_ms": round(res.percentile(50) * 1000, 1),
        "p95_ms": round(res.percentile(95) * 1000, 1),
        "p99_ms": round(res.percentile(99) * 1000, 1),
        **(
            {
                "peek_p50_ms": round(res.peek_percentile(50) * 1000, 1),
                "peek_p95_ms": round(res.peek_percentile(95) * 1000, 1),
            }
            if peek
            else {}
        ),
        "server_cpu_ms_per_label": round((cpu1 - cpu0) * 1000 / n, 2),
        "loadgen_cpu_ms_per_label": round(own * 1000 / n, 2),
        **pg,
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def crash_run(
    db: str, annotators: int, log: Path, kill_after: int = 300, workers: int | None = None, peek: bool = True
) -> dict[str, Any]:
    # a pool far larger than what is labelled before the kill: the kill must come mid-run
    tokens = prepare(db, 50_000, annotators)
    srv = ServerProcess(db, log=log, workers=workers).start()
    stop = threading.Event()
    out: dict[str, LoadResult] = {}
    th = threading.Thread(
        target=lambda: out.setdefault(
            "r", run_load(srv.url, tokens, 10**9, stop=stop, secret=srv.secret, peek=peek)
        )
    )
    th.start()
    deadline = time.monotonic() + 120  # bounded: kill once a few hundred labels are committed
    while time.monotonic() < deadline and stored(db)[1] < kill_after:
        time.sleep(0.02)
    srv.kill9()
    at_kill = stored(db)[1]
    stop.set()
    th.join(60)
    srv2 = ServerProcess(db, log=log, workers=workers).start()  # restart on the same database
    srv2.stop()
    res = out["r"]
    row = {
        **figures(db, res),
        "p50_ms": round(res.percentile(50) * 1000, 1),
        "p95_ms": round(res.percentile(95) * 1000, 1),
        "stored_at_kill": at_kill,
    }
    if not row["errors"]:  # every request answered: the server died idle, nothing was in flight
        row["note"] = "no request failed: the kill came when nothing was in flight (not a crash test)"
    return row


def best(rows: list[dict[str, Any]], think: bool) -> dict[str, Any]:
    """Best of the repeated runs: highest labels/s at saturation, lowest p95 with think time."""
    return min(rows, key=lambda r: r["p95_ms"]) if think else max(rows, key=lambda r: r["labels_per_s"])


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
    ap.add_argument(
        "--workers", type=int, default=None, help="server processes (default: fireval serve's, 1)"
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs of each load, interleaved over the stores")
    ap.add_argument("--sqlite-only", action="store_true", help="no PostgreSQL even if $FIREVAL_PG_URL is set")
    ap.add_argument("--pg-only", action="store_true", help="PostgreSQL only (needs --pg-url)")
    ap.add_argument("--think-only", action="store_true", help="skip the saturation runs")
    ap.add_argument(
        "--no-peek", action="store_true", help="annotators do not ask GET /api/peek (the page's prefetch)"
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    if args.think_ms < 0 or args.think_seconds <= 0:
        ap.error("--think-ms must be >= 0 and --think-seconds > 0")
    if args.repeat < 1 or (args.workers is not None and args.workers < 1):
        ap.error("--repeat and --workers must be >= 1")
    from fireval.web.workers import default_workers

    workers = args.workers or default_workers()
    tmp = Path(tempfile.mkdtemp(prefix="fireval-load-"))
    if args.pg_only and (args.sqlite_only or not args.pg_url):
        ap.error("--pg-only needs --pg-url (or $FIREVAL_PG_URL) and excludes --sqlite-only")
    backends = {} if args.pg_only else {"sqlite": lambda name: f"sqlite:///{tmp / (name + '.db')}"}
    if args.pg_url and not args.sqlite_only:
        backends["postgresql"] = lambda _name: str(args.pg_url)
    report: dict[str, Any] = {
        "annotators": args.annotators,
        "cpus": os.cpu_count(),
        "workers": workers,
        "peek": not args.no_peek,
        "runs": [],
    }
    kinds = ([] if args.think_only else ["saturation"]) + (
        [f"think {args.think_ms:g} ms"] if args.think_ms > 0 else []
    )
    for rep in range(args.repeat):
        for backend, url_of in backends.items():
            for kind in kinds:
                think = kind != "saturation"
                name = f"{kind.split()[0]}{rep}"
                row = {
                    "backend": backend,
                    "run": kind,
                    "repeat": rep + 1,
                    **load_run(
                        url_of(name),
                        args.annotators,
                        args.labels,
                        tmp / f"{name}.log",
                        think_ms=args.think_ms if think else 0.0,
                        max_seconds=args.think_seconds if think else None,
                        workers=workers,
                        peek=not args.no_peek,
                    ),
                }
                report["runs"].append(row)
                print(json.dumps(row), flush=True)
    if not args.no_crash:
        for backend, url_of in backends.items():
            row = {
                "backend": backend,
                "run": "kill -9",
                "repeat": 1,
                **crash_run(
                    url_of("crash"),
                    args.annotators,
                    tmp / "crash.log",
                    workers=workers,
                    peek=not args.no_peek,
                ),
            }
            report["runs"].append(row)
            print(json.dumps(row), flush=True)
    report["best"] = [
        {
            **best([r for r in report["runs"] if r["backend"] == b and r["run"] == k], k != "saturation"),
            "of": args.repeat,
        }
        for b in backends
        for k in kinds
    ]
    report["load_average_1min_at_end"] = round(os.getloadavg()[0], 2)
    cols = (
        "backend",
        "run",
        "repeat",
        "labels_acknowledged",
        "labels_stored",
        "lost",
        "duplicated",
        "labels_per_s",
        "p50_ms",
        "p95_ms",
        "peek_p95_ms",
        "errors",
        "server_cpu_ms_per_label",
        "postgres_cpu_ms_per_label",
        "postgres_commits_per_label",
        "load_average_1min",
    )
    print(
        f"{workers} worker process(es), {args.annotators} annotators, {os.cpu_count()} CPUs, "
        f"peek {'on' if not args.no_peek else 'off'}"
    )
    print(" | ".join(cols))
    for r in report["runs"]:
        print(" | ".join(str(r.get(c, "")) for c in cols))
    print("best of", args.repeat)
    for r in report["best"]:
        print(" | ".join(str(r.get(c, "")) for c in cols))
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
