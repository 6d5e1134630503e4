"""Every measure says how its value aggregates the per-query values, and it says it right.

``compare`` and ``budget`` work on per-query means, so they leave out the measures whose value is
a median over queries; they ask the measure (``Measure.aggregate``), not its name. The oracle
here recomputes each reported value from the per-query values (numpy's mean and median): a new
measure reported as a median over queries but not declared so (or the reverse) fails
``test_every_measure_declares_how_it_aggregates``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fireval.core import Direction, Judgments, Run
from fireval.metrics.evaluate import evaluate, query_values
from fireval.metrics.measures import MEASURE_NAMES, Measure, parse_measure


def _every_measure() -> list[Measure]:
    """Each measure name with no cutoff, a cutoff and ``@R`` where it parses."""
    out: list[Measure] = []
    for name in MEASURE_NAMES:
        for suffix in ("", "@3", "@R"):
            try:
                out.append(parse_measure(name + suffix, "ir"))
            except Exception:  # noqa: BLE001 - this cutoff is not defined for this name
                continue
    return out


def test_the_list_covers_every_name() -> None:
    names = {m.name for m in _every_measure()}
    assert names == set(MEASURE_NAMES) and {"MdR", "MnR", "C", "nDCG", "meanR"} <= names


@pytest.fixture(scope="module")
def evaluated() -> tuple[list[Measure], dict, dict]:
    """A 60 x 40 run with ties and graded labels (some queries without any), evaluated for every
    measure: the reported values and the per-query values, by (direction, measure)."""
    rng = np.random.default_rng(2024)
    n_q, n_d = 60, 40
    scores = np.round(rng.standard_normal((n_q, n_d)), 1)  # many ties
    rel = rng.random((n_q, n_d)) < 0.08
    rel[np.arange(n_q), np.arange(n_q) % n_d] = True
    rel[:5] = False  # queries with no relevant doc: NaN, left out of every aggregate
    rows, cols = np.nonzero(rel)
    grades = rng.integers(1, 4, rows.size).astype(float)
    # judged irrelevant docs too (drawn last, so the relevant ones stay): bpref reads them
    irr_r, irr_c = np.nonzero((rng.random((n_q, n_d)) < 0.3) & ~rel)
    rows, cols = np.r_[rows, irr_r], np.r_[cols, irr_c]
    grades = np.r_[grades, np.zeros(irr_r.size)]
    judg = Judgments.from_arrays((n_q, n_d), rows, cols, grades, "human")
    run = Run("r", scores=scores)
    measures = _every_measure()
    ev = evaluate(run, judg, measures=measures, directions=("t2v", "v2t"))
    reported = {(r["direction"], r["measure"]): r["value"] for r in ev.records}
    per_query = {}
    for d in ("t2v", "v2t"):
        for m, v in query_values(run, judg, Direction.parse(d), measures).items():
            per_query[(d, m)] = v
    return measures, reported, per_query


def test_every_measure_declares_how_it_aggregates(evaluated: tuple[list[Measure], dict, dict]) -> None:
    measures, reported, per_query = evaluated
    checked = set()
    for m in measures:
        if m.aggregate_only:  # meanR, geoC: combinations of other means, no per-query values
            assert m.aggregate == "composite" and not m.is_mean
            assert all((d, str(m)) not in per_query for d in ("t2v", "v2t"))
            continue
        for d in ("t2v", "v2t"):
            vals = per_query[(d, str(m))]
            vals = vals[~np.isnan(vals)]
            mean, median = float(np.mean(vals)), float(np.median(vals))
            # the data tells the two apart for every measure, so a wrong declaration cannot pass
            assert abs(mean - median) > 1e-6, (str(m), d)
            want = {"mean": mean, "median": median}[m.aggregate]
            assert reported[(d, str(m))] == pytest.approx(want, rel=1e-12, abs=1e-12), (str(m), d)
            assert m.is_mean == (m.aggregate == "mean")
            checked.add(m.name)
    assert "MdR" in checked and "MnR" in checked
    assert parse_measure("MdR").aggregate == "median" and parse_measure("MnR").aggregate == "mean"


def test_median_measures_name_their_mean_counterpart() -> None:
    for m in _every_measure():
        if m.aggregate == "median":
            mean = m.mean_counterpart
            assert mean is not None and mean.aggregate == "mean" and mean.name in m.median_note
        else:
            assert m.mean_counterpart is None and m.median_note == ""


def test_compare_and_budget_ask_the_measure(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """The helper drops what the measures declare as medians, not a hard-coded name."""
    from fireval.cli.report import _without_medians
    from fireval.core.errors import FirevalError
    from fireval.metrics.definitions import MEASURE_INFO_BY_NAME

    assert _without_medians(["C@1", "MnR", "RR"], "compare", "ir") == ["C@1", "MnR", "RR"]
    assert capsys.readouterr().err == ""
    assert _without_medians(["C@1", "MdR", "MnR"], "budget", "tvr") == ["C@1", "MnR"]
    err = capsys.readouterr().err
    assert err == (
        "note: -m: MdR left out: MdR is a median over queries and budget works on per-query means "
        "(the mean of the first-relevant ranks is MnR); going on with R@1, MnR\n"
    )
    # a new median measure is left out as soon as it declares itself one
    rr = replace(
        MEASURE_INFO_BY_NAME["RR"], aggregate="median", mean_counterpart="AP", per_query="the test's values"
    )
    monkeypatch.setitem(MEASURE_INFO_BY_NAME, "RR", rr)
    assert parse_measure("RR").aggregate == "median"
    assert _without_medians(["C@1", "RR", "MdR"], "compare", "ir") == ["C@1"]
    assert "note: -m: RR, MdR left out: RR, MdR are medians over queries" in capsys.readouterr().err
    with pytest.raises(FirevalError, match=r"nothing left to compare: RR is a median .* use AP or another"):
        _without_medians(["RR"], "compare", "ir")
