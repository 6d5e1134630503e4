"""QA regressions (fresh-eyes pass h6): aggregate-only measures in per-query analyses.

``fireval report -m R@1,meanR`` and ``fireval budget -m R@1,meanR`` used to end in a
``KeyError: 'meanR'`` traceback, and ``fireval compare -m R@1,meanR`` silently left meanR out:
meanR and geoC have no per-query values (query_values skips them).
"""

from __future__ import annotations

import numpy as np
import pytest

from fireval import api
from fireval.analysis.trust import analyse, metrics_values
from fireval.core import Collection, Direction, InputError


def _setup() -> tuple[Collection, dict]:
    coll = Collection.from_pairs("x", [(f"c{i}", f"v{i}", f"caption {i}") for i in range(8)])
    rng = np.random.default_rng(3)
    runs = {n: api.load_run(rng.normal(size=(8, 8)) + np.eye(8), coll, name=n) for n in ("a", "b")}
    return coll, runs


@pytest.mark.parametrize("measure", ["meanR", "geoC"])
def test_values_of_an_aggregate_only_measure_are_refused_by_name(measure) -> None:
    coll, runs = _setup()
    fn = metrics_values(collection=coll)
    with pytest.raises(InputError, match=measure):
        fn(runs["a"], coll.instance_judgments(), Direction.T2V, ["C@1", measure])


def test_analyse_with_meanr_is_a_clear_error_not_a_key_error() -> None:
    coll, runs = _setup()
    with pytest.raises(InputError, match="meanR is an aggregate"):
        analyse(
            coll, runs, {"original": coll.instance_judgments()}, measures=["C@1", "meanR"], n_resamples=10
        )


def test_per_query_measures_still_work() -> None:
    coll, runs = _setup()
    vals = metrics_values(collection=coll)(
        runs["a"], coll.instance_judgments(), Direction.T2V, ["C@1", "MnR"]
    )
    s = np.asarray(runs["a"].scores)
    ranks = np.array([1 + np.sum(row > row[i]) for i, row in enumerate(s)])
    assert np.array_equal(vals["C@1"], (ranks <= 1).astype(float))
    assert np.array_equal(vals["MnR"], ranks.astype(float))
