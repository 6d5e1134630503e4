"""Which measures are medians over queries has one record: the families' ``aggregate`` (with a
median's ``mean_counterpart`` and ``per_query``) in :mod:`fireval.metrics.definitions`.

``Measure.aggregate``, ``Measure.mean_counterpart`` and ``Measure.median_note`` read it, and the
engine reports what it says: a median family's counterpart has the same per-query values, and
:func:`fireval.metrics.evaluate` reports their median and their mean (numpy's, as the oracle).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fireval.core import Direction, Judgments, Run
from fireval.metrics import evaluate, query_values
from fireval.metrics.definitions import AGGREGATES, MEASURE_INFO, MEASURE_INFO_BY_NAME, Cutoff
from fireval.metrics.measures import Measure, parse_measure

MEDIANS = [i for i in MEASURE_INFO if i.aggregate == "median"]


def test_there_is_a_median_and_it_is_mdr() -> None:
    assert [i.name for i in MEDIANS] == ["MdR"]
    m = parse_measure("MdR")
    # what compare and budget print (unchanged since the names lived in measures.py)
    assert (
        m.mean_counterpart == Measure("MnR")
        and m.median_note == "the mean of the first-relevant ranks is MnR"
    )


@pytest.mark.parametrize("info", MEASURE_INFO, ids=lambda i: i.name)
def test_measures_read_the_family(info) -> None:  # type: ignore[no-untyped-def]
    m = Measure(info.name, 5 if info.cutoff is Cutoff.REQUIRED else None)
    assert info.aggregate in AGGREGATES and m.aggregate == info.aggregate
    assert m.is_mean == (info.aggregate == "mean") and m.aggregate_only == (info.aggregate == "composite")
    if info.aggregate == "median":
        mean = MEASURE_INFO_BY_NAME[info.mean_counterpart]  # a family that exists
        assert mean.aggregate == "mean" and (mean.cutoff, mean.at_r) == (info.cutoff, info.at_r)
        assert mean.higher_is_better == info.higher_is_better and info.per_query.strip()
        assert m.mean_counterpart == Measure(mean.name, m.k)
        assert m.median_note == f"the mean of {info.per_query} is {mean.name}"
    else:
        assert info.mean_counterpart == info.per_query == ""
        assert m.mean_counterpart is None and m.median_note == ""


def test_a_family_that_disagrees_with_itself_is_refused() -> None:
    mdr, mnr = MEASURE_INFO_BY_NAME["MdR"], MEASURE_INFO_BY_NAME["MnR"]
    with pytest.raises(ValueError, match="aggregate must be one of"):
        replace(mnr, aggregate="average")
    with pytest.raises(ValueError, match="mean_counterpart"):
        replace(mnr, aggregate="median")  # a median without its counterpart
    with pytest.raises(ValueError, match="mean_counterpart"):
        replace(mdr, aggregate="mean")  # a counterpart on a mean
    with pytest.raises(ValueError, match="mean_counterpart"):
        replace(mdr, per_query="")


def test_json_keeps_its_fields_and_adds_the_median_ones_last() -> None:
    """``fireval measures --json`` prints ``to_dict``: the fields it had, in their order, then a
    median's two (empty for every other family), so the JSON still round-trips."""
    for info in MEASURE_INFO:
        d = info.to_dict()
        assert list(d) == [
            "name", "aliases", "cutoff", "at_r", "forms", "form", "description", "higher_is_better",
            "monotone_in_relevance", "aggregate", "trec_eval", "citation", "anchor", "docs",
            "mean_counterpart", "per_query",
        ]  # fmt: skip
        assert (d["mean_counterpart"], d["per_query"]) == (info.mean_counterpart, info.per_query)


@pytest.mark.parametrize("info", MEDIANS, ids=lambda i: i.name)
def test_the_counterpart_is_the_mean_of_the_same_values(info) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1123)
    n_q, n_d = 50, 30
    scores = np.round(rng.standard_normal((n_q, n_d)), 1)  # ties
    rel = rng.random((n_q, n_d)) < 0.1
    rel[np.arange(n_q), np.arange(n_q) % n_d] = True
    rel[:4] = False  # queries without a relevant doc: left out of both
    rows, cols = np.nonzero(rel)
    judg = Judgments.from_arrays((n_q, n_d), rows, cols, np.ones(rows.size), "human")
    run = Run("r", scores=scores)
    median_m = Measure(info.name, 5 if info.cutoff is Cutoff.REQUIRED else None)
    mean_m = median_m.mean_counterpart
    assert mean_m is not None
    ev = evaluate(run, judg, measures=[median_m, mean_m], directions=("t2v", "v2t"))
    reported = {(r["direction"], r["measure"]): r["value"] for r in ev.records}
    for d in ("t2v", "v2t"):
        qv = query_values(run, judg, Direction.parse(d), [median_m, mean_m])
        a, b = qv[str(median_m)], qv[str(mean_m)]
        np.testing.assert_array_equal(a, b)  # the same per-query values
        vals = a[~np.isnan(a)]
        assert abs(np.median(vals) - np.mean(vals)) > 1e-6  # the data tells the two apart
        assert reported[(d, str(median_m))] == pytest.approx(float(np.median(vals)), abs=1e-12)
        assert reported[(d, str(mean_m))] == pytest.approx(float(np.mean(vals)), abs=1e-12)
