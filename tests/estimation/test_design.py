"""Allocation, stratified sampling, the estimator's CI, the estimators' docs, the report section."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fireval.estimation.definitions import ESTIMATOR_INFO
from fireval.estimation.stratified import allocate, srswor, stratified_estimate
from fireval.report import estimates_section

DOCS = Path(__file__).resolve().parents[2] / "docs" / "estimation.md"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 40), st.floats(0.0, 1.0), st.integers(1, 12)), min_size=1, max_size=8),
    st.integers(0, 400),
)
def test_allocation_respects_budget_and_sizes(strata, budget) -> None:
    big_n = np.array([s[0] for s in strata])
    weight = np.array([s[0] ** 2 * s[1] for s in strata])
    cost = np.array([s[2] for s in strata])
    n = allocate(big_n, weight, cost, budget)
    assert (n >= 0).all() and (n <= big_n).all()
    assert int((n * cost).sum()) <= budget
    assert (n[weight == 0] == 0).all()
    more = allocate(big_n, weight, cost, budget + 50)
    c = np.maximum(cost, 1)
    two = np.where(weight > 0, np.minimum(big_n, 2), 0)  # the floor: 2 per stratum when affordable

    def floored(b: int) -> bool:
        return int((two * c).sum()) <= b

    if floored(budget + 50):
        assert (more >= two).all()
    full = int((np.where(weight > 0, big_n, 0) * c).sum()) <= budget + 50
    if full or floored(budget) == floored(budget + 50):
        # within one regime (with or without the floor) more budget never takes a query away, so it
        # never buys a larger total variance; crossing into the floor may trade variance for strata
        # that would otherwise be left to their bounds (the floor's purpose)
        v = lambda m: float(np.sum(np.where(m > 0, weight * (1 / np.maximum(m, 1) - 1 / big_n), 4 * weight)))  # noqa: E731
        assert (more >= n).all()
        assert v(more) <= v(n) + 1e-9


def test_srswor_draws_exact_sizes_and_is_uniform() -> None:
    stratum = np.array([0] * 5 + [1] * 3 + [2] * 4)
    n_h = np.array([2, 3, 0])
    counts = np.zeros(stratum.size)
    rng = np.random.default_rng(0)
    for _ in range(4000):
        c = srswor(rng, stratum, n_h)
        assert [int(c[stratum == h].sum()) for h in range(3)] == [2, 3, 0]
        counts += c
    assert np.allclose(counts[:5] / 4000, 2 / 5, atol=0.03)  # inclusion probability n_h / N_h
    assert (counts[5:8] == 4000).all() and (counts[8:] == 0).all()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=4, max_size=20), st.integers(0, 2**31))
def test_ci_holds_the_estimate_and_lies_in_the_bounds(values, seed) -> None:
    y = np.asarray(values)
    rng = np.random.default_rng(seed)
    s = np.zeros(y.size, np.int64)
    k = max(2, y.size // 2)
    chosen = rng.permutation(y.size)[:k]
    bounds = (0.0, 1.0)
    e = stratified_estimate(
        y.size, (0.0, 0.0), np.array([y.size]), s[chosen], y[chosen], y[chosen], np.zeros(1), np.ones(1) * y.size,
        np.array([0.25]), bounds=bounds,
    )  # fmt: skip
    assert bounds[0] <= e.ci_low <= e.estimate <= e.ci_high <= bounds[1]
    full = stratified_estimate(
        y.size, (0.0, 0.0), np.array([y.size]), s, y, y, np.zeros(1), np.ones(1), np.array([0.25])
    )
    assert full.variance == 0 and abs(full.estimate - y.mean()) < 1e-12  # a stratum taken whole


def test_every_estimator_has_a_definition_row() -> None:
    text = DOCS.read_text(encoding="utf-8")
    rows = {
        m
        for line in text.splitlines()
        if line.startswith("| `")
        for m in re.findall(r"`([^`]+)`", line.split("|")[1])
    }
    for info in ESTIMATOR_INFO:
        assert info.name in rows, info.name
        assert info.citation


def test_report_section_escapes_and_lands_in_both_files(tmp_path: Path) -> None:
    rec = {
        "run": "<b>x|y</b>", "direction": "t2v", "measure": "C@1", "estimate": 0.5, "ci_low": 0.4,
        "ci_high": 0.6, "lower": 0.3, "upper": 0.9, "n": 10, "judged": 3, "sampled": 4, "method": "stratified-ht",
    }  # fmt: skip
    diff = {
        "run_a": "a", "run_b": "b", "direction": "t2v", "measure": "MnR", "estimate": None, "ci_low": -1.0,
        "ci_high": 2.0, "lower": -1.0, "upper": 2.0, "method": "bounds",
    }  # fmt: skip
    html = tmp_path / "r.html"
    md = tmp_path / "r.md"
    html.write_text("<html><body><h1>t</h1></body></html>")
    md.write_text("# t\n")
    estimates_section.add_to_files([rec], [diff], html_path=html, markdown_path=md)
    h = html.read_text()
    assert "Estimated corrected scores" in h and h.index("estimated-corrected-scores") < h.index("</body>")
    assert "<b>x" not in h and "&lt;b&gt;x|y&lt;/b&gt;" in h
    assert "[40.0, 60.0]" in h and "[-1.00, 2.00]" in h
    m = md.read_text()
    assert m.startswith("# t\n") and "## Estimated corrected scores" in m and "x\\|y" in m
