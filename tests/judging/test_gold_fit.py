"""Whether a gold set can hide among the pool's caption runs (:func:`fireval.judging.gold.gold_fit`).

Gold runs are drawn as long as pool runs (:func:`fireval.judging.gold.plan_runs`); a gold
caption with fewer pairs than drawn gives a shorter run, which an annotator can notice. Tested:

- on the real MSR-VTT 1k-A depth-10 pool of three runs, a gold set of one pair per caption
  (today's common case) is reported (every gold run short) with a one-line warning naming the
  pairs per caption needed; a gold set of that many pairs per caption is not;
- the simulated share of short runs agrees with the real planner: over many annotators of
  :func:`plan_runs` (a keyed order and keyed lengths each), the share of runs shorter than
  their drawn length, counted from the plans;
- ``fireval judgments load`` and ``fireval serve`` print the warning on stderr (and only then).
"""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest

from fireval.core import normalise
from fireval.judging.gold import FIT_THRESHOLD, GoldPair, _draw, gold_fit, plan_runs
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store


@pytest.fixture(scope="module")
def pool_lengths(msrvtt) -> list[int]:  # type: ignore[no-untyped-def]
    """Items per caption of the MSR-VTT 1k-A pool of depth 10 over three runs (instance pairs
    skipped, as `fireval pool` does)."""
    from fireval.judging.pool import build_pool

    coll, runs = msrvtt
    pool = build_pool(coll, runs, depth=10, judged=[coll.instance_judgments()])
    return sorted(Counter(normalise(it.caption) for it in pool.items).values())


def test_one_pair_per_caption_warns_on_the_real_pool(pool_lengths: list[int]) -> None:
    assert min(pool_lengths) > 1  # every pool caption comes as a run of several videos
    fit = gold_fit([1] * 100, pool_lengths)
    assert fit is not None and not fit.hides
    assert fit.short_share == 1.0  # no gold caption can fill any drawn length
    lengths = np.asarray(pool_lengths)
    # need: the smallest pool caption size that at most FIT_THRESHOLD of the pool's captions exceed
    assert np.mean(lengths > fit.need) <= FIT_THRESHOLD < np.mean(lengths > fit.need - 1)
    assert (fit.pool_min, fit.pool_max, fit.gold_min, fit.gold_max) == (lengths.min(), lengths.max(), 1, 1)
    msg = fit.warning()
    assert msg is not None and "\n" not in msg
    assert f"at least {fit.need} pairs" in msg and "100%" in msg and "1 pair each" in msg
    # a gold set of that many pairs per caption hides (and so does one of the largest run length)
    enough = gold_fit([fit.need] * 100, pool_lengths)
    assert enough is not None and enough.hides and enough.warning() is None
    assert enough.short_share <= FIT_THRESHOLD
    most = gold_fit([max(pool_lengths)] * 30, pool_lengths)
    assert most is not None and most.short_share == 0.0 and most.warning() is None


def test_nothing_to_say_without_gold_or_pool() -> None:
    assert gold_fit([], [3, 4]) is None and gold_fit([3], []) is None


class _Row:
    def __init__(self, i: int, caption: str) -> None:
        self.id, self.caption, self.video_id = i, caption, f"x{i}"


def test_simulated_share_matches_the_planner() -> None:
    """Oracle: the share of short runs counted in real plans of 1000 annotators."""
    rng = random.Random(7)
    lengths = sorted(rng.randint(3, 12) for _ in range(200))
    sizes = [1] * 10 + [4] * 10 + [8] * 8 + [15] * 4
    rng.shuffle(sizes)
    groups = [[_Row(100 * g + k, f"gold {g}") for k in range(n)] for g, n in enumerate(sizes)]
    short = total = 0
    for who in range(1000):
        plan = plan_runs(groups, lengths, b"fixed secret", who)
        for r, n in Counter(plan.run).items():
            drawn = lengths[_draw(b"fixed secret", who, f"run:{r}") % len(lengths)]
            assert n <= drawn
            short += n < drawn
            total += 1
    planned = short / total
    assert 0.2 < planned < 0.8  # a case with both kinds of runs
    fits = [gold_fit(sizes, lengths, seed=s) for s in range(10)]
    estimate = float(np.mean([f.short_share for f in fits if f is not None]))
    # standard errors about 0.003 (32,000 planned runs) and 0.0025 (10 x 6,400 simulated):
    # 0.012 is about 3 of their combined; picking uniformly among the large-enough captions
    # (a tempting shortcut that ignores how the order is consumed) is 0.018 off and fails
    assert abs(estimate - planned) < 0.012, (estimate, planned)
    assert gold_fit(sizes, lengths) == fits[0]  # seeded: the same figures every time


def _cli(*args: str) -> int:
    from fireval.cli import main

    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _write_gold(path, captions: int, size: int) -> None:  # type: ignore[no-untyped-def]
    pairs = [
        GoldPair(f"gold caption {c}", f"g{c}_{v}", ("relevant", "irrelevant")[v % 2])
        for c in range(captions)
        for v in range(size)
    ]
    path.write_text("".join(json.dumps(p.__dict__) + "\n" for p in pairs))


def test_cli_load_and_serve_warn_only_when_gold_cannot_hide(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(3)
    db = str(tmp_path / "s.db")
    counts = [rng.randint(6, 12) for _ in range(40)]
    st = Store(db)
    st.add_items(
        [
            PoolItem(f"pool caption {c}", [f"c{c}"], f"v{c}_{v}", {"A": 1})
            for c, n in enumerate(counts)
            for v in range(n)
        ],
        "T",
    )
    st.close()
    need = sorted(counts)[int(np.ceil(0.9 * len(counts))) - 1]  # at most 10% of the captions exceed it
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    _write_gold(small, 20, 1)
    _write_gold(large, 10, 12)
    capsys.readouterr()
    assert _cli("judgments", "load", "--db", db, "--gold", str(large)) == 0
    out = capsys.readouterr()
    assert "loaded 120 gold pairs" in out.out and "warning" not in out.err, out.err

    import fireval.web.workers as workers

    started: list[object] = []
    monkeypatch.setattr(workers, "serve", lambda cfg, *a: started.append(cfg))
    assert _cli("serve", "--db", db, "--port", "0") == 0
    assert started and "warning" not in capsys.readouterr().err

    assert _cli("judgments", "load", "--db", db, "--gold", str(small)) == 0
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("warning: gold")]
    assert len(lines) == 1 and f"at least {need} pairs" in lines[0], err
    assert _cli("serve", "--db", db, "--port", "0") == 0
    assert sum(x.startswith("warning: gold") for x in capsys.readouterr().err.splitlines()) == 1
    assert _cli("serve", "--db", db, "--port", "0", "--gold-rate", "0") == 0  # gold off: silent
    assert "warning: gold" not in capsys.readouterr().err
