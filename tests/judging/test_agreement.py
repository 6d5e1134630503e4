"""Agreement statistics against the ``krippendorff`` package and a from-definition oracle;
adjudication is never a vote; ``fireval judgments stats`` on FIRE JSON and on a store."""

from __future__ import annotations

import json
from itertools import permutations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fireval.cli import main
from fireval.judging import agreement
from fireval.judging.aggregate import DISAGREEMENT, RELEVANT, VoteCounts
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store


def alpha_from_definition(items: list[list[str]]) -> float | None:
    """Krippendorff (2011) §3 for nominal data, written from the definitions: every ordered pair of
    values from different coders of one unit adds 1/(m_u - 1) to the coincidence matrix o_ck;
    n_c = sum_k o_ck, n = sum_c n_c; D_o = sum_{c != k} o_ck / n; D_e = sum_{c != k} n_c n_k / (n (n - 1))."""
    cats = ("irrelevant", "relevant")
    o = {(c, k): 0.0 for c in cats for k in cats}
    for votes in items:
        m = len(votes)
        if m < 2:
            continue
        for i, j in permutations(range(m), 2):
            o[(votes[i], votes[j])] += 1.0 / (m - 1)
    n_c = {c: sum(o[(c, k)] for k in cats) for c in cats}
    n = sum(n_c.values())
    d_o = sum(v for (c, k), v in o.items() if c != k) / n if n else 0.0
    d_e = sum(n_c[c] * n_c[k] for c in cats for k in cats if c != k) / (n * (n - 1)) if n > 1 else 0.0
    return None if d_e == 0 else 1.0 - d_o / d_e


def as_counts(items: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    n = np.array([len(v) for v in items], np.int64)
    r = np.array([sum(x == "relevant" for x in v) for v in items], np.int64)
    return n, r


vote_lists = st.lists(
    st.lists(st.sampled_from(["relevant", "irrelevant"]), min_size=0, max_size=5), min_size=1, max_size=40
)


@settings(max_examples=150, deadline=None)
@given(vote_lists)
def test_alpha_matches_definition_and_package(items) -> None:
    ours = agreement.alpha_nominal(*as_counts(items))
    ref = alpha_from_definition(items)
    if ref is None:
        assert ours is None
        return
    assert ours == pytest.approx(ref, abs=1e-12)
    n, r = as_counts(items)
    multi = n >= 2
    vc = np.stack([n[multi] - r[multi], r[multi]], axis=1)
    assert ours == pytest.approx(
        krippendorff.alpha(value_counts=vc, level_of_measurement="nominal"), abs=1e-9
    )


def test_bootstrap_ci_is_seeded_and_matches_a_naive_item_bootstrap() -> None:
    rng = np.random.default_rng(3)
    n = rng.integers(2, 5, size=300)
    r = rng.binomial(n, rng.uniform(0.1, 0.9, size=300))
    a = agreement.alpha_interval(n, r, n_resamples=4000, seed=1)
    assert a == agreement.alpha_interval(n, r, n_resamples=4000, seed=1)
    assert a != agreement.alpha_interval(n, r, n_resamples=4000, seed=2)
    alpha = agreement.alpha_nominal(n, r)
    assert a[0] < alpha < a[1]
    # oracle: draw items with replacement, α from the definition's closed form per resample
    boot = []
    for _ in range(4000):
        idx = rng.integers(0, n.size, n.size)
        items = [["relevant"] * int(r[i]) + ["irrelevant"] * int(n[i] - r[i]) for i in idx]
        nn, rr = as_counts(items)
        o = (rr * (nn - rr) / (nn - 1)).sum()
        big_n, big_r = nn.sum(), rr.sum()
        boot.append(1 - (big_n - 1) * o / (big_r * (big_n - big_r)))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    assert a[0] == pytest.approx(lo, abs=0.02) and a[1] == pytest.approx(hi, abs=0.02)


def test_small_sample_warning_and_formatting() -> None:
    items = [["relevant", "irrelevant"], ["relevant", "relevant"], ["irrelevant", "irrelevant"]]
    vi = agreement.VoteItems(["q"] * 3, ["v"] * 3, *as_counts(items), [None] * 3, items)
    s = agreement.agreement_stats(vi, n_resamples=200, seed=0)
    assert any("only 3 items" in w for w in s["warnings"])
    text = agreement.format_alpha(s)
    assert "CI" in text and f"{s['alpha']:.2f}" in text and f"{s['alpha']:.3f}" not in text
    assert [row["labels"] for row in s["by_labels"]] == [2] and s["by_labels"][0][
        "unanimous"
    ] == pytest.approx(2 / 3)
    assert s["unresolved"] == 1 and s["disagreements"][0]["annotator_labels"] == ["relevant", "irrelevant"]


def test_adjudication_resolves_but_is_not_a_vote() -> None:
    # item 0: r/i tie + adjudication relevant; item 1: r/r; item 2: i/r
    items = [0, 0, 0, 1, 1, 2, 2]
    labels = ["relevant", "irrelevant", "relevant", "relevant", "relevant", "irrelevant", "relevant"]
    adj = [False, False, True, False, False, False, False]
    with_adj = VoteCounts.from_votes(items, labels, 3, adj)
    without = VoteCounts.from_votes(items[:2] + items[3:], labels[:2] + labels[3:], 3)
    assert with_adj.n.tolist() == without.n.tolist() == [2, 2, 2]
    assert with_adj.decisions().tolist() == [RELEVANT, RELEVANT, DISAGREEMENT]
    assert without.decisions().tolist() == [DISAGREEMENT, RELEVANT, DISAGREEMENT]
    assert with_adj.adjudicated().tolist() == [True, False, False]


def _tie_store(url: str) -> tuple[Store, int, int]:
    s = Store(url)
    s.add_items(
        [PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}, double=True) for i in range(3)], "MSRVTT"
    )
    a, _ = s.add_annotator("a")
    b, _ = s.add_annotator("b")
    boss, _ = s.add_annotator("boss", "admin")
    for u, rule in ((a, lambda i: "relevant"), (b, lambda i: "irrelevant" if i != 2 else "relevant")):
        while (it := s.next_item(u.id)) is not None:
            s.submit(u.id, it.id, rule(it.id))
    return s, boss.id, 1


def test_store_adjudication_does_not_move_alpha(store_url, tmp_path, capsys) -> None:
    s, boss, item = _tie_store(store_url)
    before = s.status()["agreement"]
    s.adjudicate(boss, item, "relevant")
    after = s.status()["agreement"]
    for key in ("alpha", "unanimous", "pairwise", "items", "by_votes"):
        assert after[key] == before[key]
    assert before["disagreements"] == 2 and after["disagreements"] == 1 and after["adjudicated"] == 1
    ann, dis = s.fire_records()
    adjudicated = next(r for r in ann if r["query"] == "caption 0")
    assert adjudicated["label"] == "relevant" and adjudicated["annotator_labels"] == [
        "relevant",
        "irrelevant",
    ]
    s.close()
    # the same numbers from the store and from its FIRE JSON export
    out = tmp_path / "fire.json"
    assert cli(["judgments", "export", "--db", store_url, "-o", str(out), "--model-name", "A=CE"]) == 0
    assert cli(["judgments", "stats", "--db", store_url, "--json", str(tmp_path / "db.json")]) == 0
    assert cli(["judgments", "stats", str(out), "--json", str(tmp_path / "file.json")]) == 0
    err = capsys.readouterr().err
    assert "only 3 items have two or more labels" in err
    a = json.loads((tmp_path / "db.json").read_text())
    b = json.loads((tmp_path / "file.json").read_text())
    for key in (
        "alpha",
        "alpha_low",
        "alpha_high",
        "unanimous",
        "pairwise",
        "by_labels",
        "adjudicated",
        "unresolved",
    ):
        assert a[key] == b[key], key
    assert a["adjudicated"] == 1 and a["unresolved"] == 1


def cli(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_stats_cli_on_fire_json_and_bad_input(tmp_path, capsys) -> None:
    pairs = iter(range(10**6))

    def rec(votes, label=None):
        r = {
            "annotator_ids": list(range(len(votes))),
            "video_id": f"v{next(pairs)}",  # one record per pair, as in a FIRE file
            "query": "q",
            "annotator_labels": votes,
            "response_ids": [1] * len(votes),
            "queue_ids": [1] * len(votes),
            "models": ["CE"],
            "dataset": "MSRVTT",
        }
        return {**r, "label": label} if label else r

    rng = np.random.default_rng(0)
    anns = []
    for _ in range(60):
        k = int(rng.integers(1, 4))
        votes = ["relevant" if x else "irrelevant" for x in rng.random(k) < 0.7]
        if 2 * votes.count("relevant") != k:
            anns.append(rec(votes, "relevant" if 2 * votes.count("relevant") > k else "irrelevant"))
    dis = [rec(["relevant", "irrelevant"]) for _ in range(4)]
    path = tmp_path / "fire.json"
    path.write_text(json.dumps({"annotations": anns, "disagreements": dis}))
    assert cli(["judgments", "stats", str(path), "--json", str(tmp_path / "s.json"), "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert "Krippendorff's α (nominal)" in out and "95% CI" in out and "FIRE Fig. 7" in out
    s = json.loads((tmp_path / "s.json").read_text())
    items = [r["annotator_labels"] for r in anns + dis]
    assert s["alpha"] == pytest.approx(alpha_from_definition(items))
    assert s["items"] == len(items) and s["unresolved"] == 4 and len(s["disagreements"]) == 4
    assert {row["labels"] for row in s["by_labels"]} == {len(v) for v in items}
    # errors: one line, exit 2, nothing written
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"annotations": [rec(["maybe"], "relevant")]}))
    assert cli(["judgments", "stats", str(bad), "--json", str(tmp_path / "x.json")]) == 2
    assert "annotations[0]" in capsys.readouterr().err and not (tmp_path / "x.json").exists()
    assert cli(["judgments", "stats"]) == 2


def test_records_listed_twice_count_once_with_a_warning(tmp_path, capsys) -> None:
    """A merged FIRE file that repeats records (same pair, label or section, annotator ids and
    response ids) gives the same items and α as the file without the repeats, plus a warning;
    read_fire_json applies the same rule."""

    def rec(video, votes, rid, label=None):
        r = {
            "annotator_ids": [1, 2],
            "video_id": video,
            "query": "a man cooks",
            "annotator_labels": votes,
            "response_ids": rid,
            "queue_ids": [7, 7],
            "models": ["CE"],
            "dataset": "MSRVTT",
        }
        return {**r, "label": label} if label else r

    ann = rec("v1", ["relevant", "relevant"], [10, 11], "relevant")
    dis = rec("v2", ["relevant", "irrelevant"], [12, 13])
    other = rec("v3", ["irrelevant", "irrelevant"], [14, 15], "irrelevant")
    # same pair and annotators but other responses: a second judging round, kept
    again = rec("v1", ["relevant", "irrelevant"], [20, 21], "relevant")
    once = tmp_path / "once.json"
    once.write_text(json.dumps({"annotations": [ann, other, again], "disagreements": [dis]}))
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps({"annotations": [ann, other, ann, again], "disagreements": [dis, dis]}))
    a = agreement.agreement_stats(agreement.items_from_fire_json(once), n_resamples=50)
    b = agreement.agreement_stats(agreement.items_from_fire_json(twice), n_resamples=50)
    assert a["items"] == 4 and b["items"] == 4
    for key in ("votes", "alpha", "alpha_low", "alpha_high", "by_labels", "unresolved"):
        assert a[key] == b[key], key
    assert not any("repeat" in w for w in a["warnings"])
    (warn,) = [w for w in b["warnings"] if "repeat" in w]
    assert "2 FIRE record(s)" in warn and "annotations[2]" in warn
    assert cli(["judgments", "stats", str(twice)]) == 0
    assert "repeat an earlier record" in capsys.readouterr().err
