"""Real data: CLIP4Clip, GRAM and VAST on MSR-VTT 1k-A (rows = JSFusion sentences, GT = diagonal).

Every number the report shows is recomputed here independently: diagonal ranks by direct
comparison, plain-loop top-K/overlap/RBO with Python sets, a naive bootstrap and
permutation test with a different generator, McNemar's exact test, and scipy.stats.bootstrap.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from fireval.analysis.trust import analyse
from fireval.core import Collection, Run
from fireval.report.build import write_report

pytestmark = pytest.mark.shared

RUNS = {"CLIP4Clip": "clip4clip", "GRAM": "GRAM", "VAST": "VAST"}


@pytest.fixture(scope="module")
def data(shared_data: Path) -> tuple[Collection, dict[str, Run], dict[str, np.ndarray]]:
    from fireval.formats import read_msrvtt_jsfusion, read_scores

    d = shared_data / "msrvtt"
    coll = read_msrvtt_jsfusion(d / "MSRVTT_JSFUSION_test.csv")
    runs = {n: read_scores(d / "sims" / f"{f}_msrvtt.npy", coll, name=n) for n, f in RUNS.items()}
    raw = {n: np.load(d / "sims" / f"{f}_msrvtt.npy") for n, f in RUNS.items()}
    return coll, runs, raw


@pytest.fixture(scope="module")
def analysis(data):  # type: ignore[no-untyped-def]
    coll, runs, _ = data
    return analyse(
        coll,
        runs,
        {"original": coll.instance_judgments()},
        measures=["C@1", "C@5", "C@10"],
        n_resamples=10_000,
    )


def _correct(raw: np.ndarray, k: int) -> np.ndarray:
    gt = np.diag(raw)
    higher = (raw > gt[:, None]).sum(axis=1)
    tied = (raw == gt[:, None]).sum(axis=1)
    # tie-aware C@K: probability that the GT lands in the top K within its tie group
    return np.clip((k - higher) / tied, 0, 1)


def naive_top(row: np.ndarray, k: int) -> list[int]:
    return sorted(range(row.size), key=lambda j: (-row[j], j))[:k]


def naive_rbo(s: list[int], t: list[int], p: float) -> float:
    k = len(s)
    acc = 0.0
    for d in range(1, k + 1):
        acc += len(set(s[:d]) & set(t[:d])) / d * p**d
    return len(set(s) & set(t)) / k * p**k + (1 - p) / p * acc


def test_scores_match_diagonal_ranks(analysis, data) -> None:  # type: ignore[no-untyped-def]
    _, _, raw = data
    paper = {"CLIP4Clip": (34.4, 55.1, 65.0), "GRAM": (53.1, 74.3, 82.4), "VAST": (49.4, 68.0, 74.0)}
    for name, m in raw.items():
        for k, ref in zip((1, 5, 10), paper[name], strict=True):
            row = next(r for r in analysis.scores if r["run"] == name and r["measure"] == f"C@{k}")
            assert row["original"] == pytest.approx(_correct(m, k).mean(), abs=1e-9)
            assert 100 * row["original"] == pytest.approx(ref, abs=0.051)


def test_overlap_and_rbo_against_plain_loops(analysis, data) -> None:  # type: ignore[no-untyped-def]
    _, _, raw = data
    tops = {n: [naive_top(m[q], 10) for q in range(m.shape[0])] for n, m in raw.items()}
    for row in analysis.overlap:
        a, b = tops[row["a"]], tops[row["b"]]
        ov = np.mean([len(set(x) & set(y)) / 10 for x, y in zip(a, b, strict=True)])
        rb = np.mean([naive_rbo(x, y, 0.9) for x, y in zip(a, b, strict=True)])
        assert row["overlap"] == pytest.approx(ov, abs=1e-12)
        assert row["rbo"] == pytest.approx(rb, abs=1e-12)


def test_rbo_package_on_real_lists(data) -> None:  # type: ignore[no-untyped-def]
    rbo = pytest.importorskip("rbo")
    from fireval.analysis.overlap import rbo_ext, topk

    _, runs, _ = data
    a, b = topk(runs["GRAM"], "t2v", 10), topk(runs["VAST"], "t2v", 10)
    ours = rbo_ext(a, b, 0.9)
    for q in range(0, 1000, 50):
        assert ours[q] == pytest.approx(
            rbo.RankingSimilarity(list(a[q]), list(b[q])).rbo_ext(p=0.9), abs=1e-9
        )


def test_intervals_against_naive_and_scipy_bootstrap(analysis, data) -> None:  # type: ignore[no-untyped-def]
    _, _, raw = data
    rng = np.random.default_rng(2024)
    for name in ("CLIP4Clip", "VAST"):
        v = _correct(raw[name], 1)
        idx = rng.integers(0, v.size, size=(10_000, v.size))
        naive = np.array([v[i].mean() for i in idx])
        lo, hi = np.quantile(naive, [0.025, 0.975])
        ref = stats.bootstrap(
            (v,), np.mean, n_resamples=10_000, method="percentile", random_state=rng
        ).confidence_interval
        ci = next(r for r in analysis.intervals if r["run"] == name and r["measure"] == "C@1")
        for ours, a, b in ((ci["low"], lo, ref.low), (ci["high"], hi, ref.high)):
            assert ours == pytest.approx(a, abs=0.004)
            assert ours == pytest.approx(b, abs=0.004)


def test_significance_against_naive_permutation_and_mcnemar(analysis, data) -> None:  # type: ignore[no-untyped-def]
    _, _, raw = data
    row = next(
        c for c in analysis.comparisons if c["measure"] == "C@1" and (c["a"], c["b"]) == ("GRAM", "VAST")
    )
    a, b = _correct(raw["GRAM"], 1), _correct(raw["VAST"], 1)
    d = a - b
    rng = np.random.default_rng(77)
    flips = rng.choice([-1.0, 1.0], size=(20_000, d.size))
    naive_p = (1 + np.sum(np.abs((flips * d).mean(axis=1)) >= abs(d.mean()) - 1e-12)) / 20_001
    assert row["p_randomisation"] == pytest.approx(naive_p, abs=0.0015)
    # binary outcomes: exact McNemar (binomial on discordant pairs) is the exact permutation test
    n01, n10 = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
    mcnemar = stats.binomtest(n01, n01 + n10, 0.5).pvalue
    assert row["p_randomisation"] == pytest.approx(mcnemar, abs=0.0015)
    assert row["p_bootstrap"] == pytest.approx(mcnemar, abs=0.0025)
    assert row["mean_difference"] == pytest.approx(d.mean())
    # CLIP4Clip vs GRAM: 18.7 points on 1000 queries, overwhelmingly significant after Holm
    big = next(
        c for c in analysis.comparisons if c["measure"] == "C@1" and (c["a"], c["b"]) == ("CLIP4Clip", "GRAM")
    )
    assert big["p_randomisation_holm"] <= 3 / 10_001 + 1e-12


def test_report_files_show_the_values(analysis, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = write_report(analysis, tmp_path / "r.html", markdown=tmp_path / "r.md")
    md = (tmp_path / "r.md").read_text()
    html = (tmp_path / "r.html").read_text()
    keys = [t.key for t in out.tables]
    for key in ("paper", "intervals", "significance", "overlap"):
        assert key in keys
    for row in analysis.overlap:
        cells = f"| {row['a']} | {row['b']} | {100 * row['overlap']:.1f} | {100 * row['rbo']:.1f} |"
        assert cells in md
        assert (
            f'<td>{row["a"]}</td><td>{row["b"]}</td><td class="num">{100 * row["overlap"]:.1f}</td>' in html
        )
    # each drawn figure twice: two-column PNG, and one-column for narrow screens
    assert html.count("data:image/svg+xml;base64,") == 2 * len(
        [f for f in out.figures if not f.empty]
    )  # SVG (issue 24)
    paper = md.split("### Results")[1].split("###")[0]
    for r in analysis.scores:  # the paper table holds every run's score (bold when best)
        value = f"{100 * r[analysis.main_labels]:.1f}"
        assert f"| {value}" in paper or f"| **{value}**" in paper
    for r in analysis.intervals:
        cells = f"| {r['labels']} | {r['run']} | {r['measure']} | {100 * r['mean']:.1f} | {100 * r['low']:.1f} | {100 * r['high']:.1f} | 1000 |"
        assert cells in md
    for c in analysis.comparisons:
        assert f"| {c['measure']} | {c['a']} | {c['b']} | {100 * c['mean_difference']:+.1f} |" in md
    assert html.count('<table class="report-table"') == len(out.tables)
