"""Bad input gives a clear FirevalError / InputError naming what is wrong."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.core import Direction, FirevalError, InputError, Judgments, RankedLists, Run
from fireval.metrics import evaluate, parse_measure, query_values


def _judg(shape=(3, 4)) -> Judgments:
    return Judgments.from_arrays(shape, [0, 1, 2], [0, 1, 2], [1, 1, 1], "instance")


def test_nan_scores_name_the_position() -> None:
    s = np.zeros((3, 4))
    s[2, 3] = np.nan
    with pytest.raises(InputError, match=r"NaN at t2v query #2, doc #3"):
        evaluate(Run("r", scores=s), _judg())


def test_nan_in_v2t_names_the_position() -> None:
    s = np.zeros((3, 4))
    s[1, 2] = np.inf
    with pytest.raises(InputError, match=r"\+inf at v2t query #2, doc #1"):
        evaluate(Run("r", scores=s), _judg(), directions="v2t")


def test_shape_mismatch() -> None:
    with pytest.raises(InputError, match=r"shape \(3, 5\).*\(3, 4\)"):
        evaluate(Run("r", scores=np.zeros((3, 5))), _judg())
    from fireval.api import evaluate_runs

    with pytest.raises(InputError, match=r"run 'r' has shape \(3, 5\).*labels 'extra' cover \(3, 4\)"):
        evaluate_runs({"r": Run("r", scores=np.zeros((3, 5)))}, {"extra": _judg()})


def test_empty_run() -> None:
    with pytest.raises(InputError, match="empty"):
        Run("r", scores=np.zeros((0, 4)))
    lists = RankedLists(Direction.T2V, (3, 4), np.zeros(4, np.int64), np.zeros(0, np.int64), np.zeros(0))
    with pytest.raises(InputError, match="ranks no documents"):
        evaluate(Run("r", lists=lists), _judg())


@pytest.mark.parametrize("bad", ["foo@3", "C", "MdR@5", "nDCG@0", "C@R", ""])
def test_unknown_measure(bad: str) -> None:
    with pytest.raises(FirevalError):
        parse_measure(bad)
    with pytest.raises(FirevalError):
        evaluate(Run("r", scores=np.zeros((3, 4))), _judg(), measures=[bad] if bad else ["??"])


def test_bad_options() -> None:
    run = Run("r", scores=np.zeros((3, 4)))
    with pytest.raises(FirevalError, match="tie policy"):
        evaluate(run, _judg(), ties="random")
    with pytest.raises(FirevalError, match="unjudged mode"):
        evaluate(run, _judg(), unjudged="middle")
    with pytest.raises(FirevalError, match="preset"):
        evaluate(run, _judg(), preset="nope")
    with pytest.raises(FirevalError, match="direction"):
        query_values(run, _judg(), "x2y", ["C@1"])
