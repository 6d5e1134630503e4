"""Issue 11, item 7: 50 concurrent annotators against a real server on loopback (bounded run).

Each simulated annotator logs in through the form and submits labels (5 % resubmitted) until
600 are acknowledged in all. Every acknowledged label is stored exactly once, every
resubmission is answered as a duplicate, and nobody gets an error. ``benchmarks/load_annotation.py``
runs the same at a larger size and prints the figures.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchmarks.loadgen import ServerProcess, run_load

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store

pytestmark = pytest.mark.slow

N_ANNOTATORS = 50
N_LABELS = 600


def test_fifty_concurrent_annotators(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'load.db'}"
    st = Store(db)
    st.add_items(
        [PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}, double=(i % 10 == 0)) for i in range(1000)],
        "T",
    )
    tokens = {f"ann{k}": st.add_annotator(f"ann{k}")[1] for k in range(N_ANNOTATORS)}
    st.close()
    server = ServerProcess(db, log=tmp_path / "server.log").start()
    try:
        res = run_load(server.url, tokens, N_LABELS, seed=3, timeout=60.0, secret=server.secret)
    finally:
        server.stop()
    assert res.errors == []
    assert len(res.acked) >= N_LABELS
    assert len({name for _, _, name in res.acked}) == N_ANNOTATORS  # all fifty took part
    st = Store(db, upgrade=False)
    v = st.votes()
    st.close()
    acked = [lid for lid, _, _ in res.acked]
    assert sorted(v["label_id"].tolist()) == sorted(acked)  # lost 0, unacknowledged extra 0
    assert len(set(acked)) == len(acked)
    pairs = set(zip(v["item_id"].tolist(), v["annotator_id"].tolist()))
    assert len(pairs) == v["label_id"].size  # duplicated 0
    assert np.bincount(v["item_id"]).max() <= 3
    assert res.duplicates_ok > 0
    print(
        f"50 annotators: {len(acked)} labels in {res.elapsed:.2f}s, "
        f"p50 {res.percentile(50) * 1000:.1f} ms, p95 {res.percentile(95) * 1000:.1f} ms"
    )
