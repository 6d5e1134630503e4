"""QA regressions (fresh-eyes pass h6) of ``fireval.evaluate`` / ``Evaluation``."""

from __future__ import annotations

import numpy as np
import pytest

import fireval
from fireval.core import Collection, FirevalError, InputError
from fireval.formats import read_trec_run


def _coll(n: int = 6) -> Collection:
    return Collection.from_pairs("x", [(f"c{i}", f"v{i}", f"caption {i}") for i in range(n)])


def _scores(n: int = 6) -> np.ndarray:
    rng = np.random.default_rng(0)
    s = rng.normal(size=(n, n))
    s[np.arange(n), np.arange(n)] += 1.0
    return s


def _first_ranks(s: np.ndarray) -> np.ndarray:
    """Rank of the diagonal in each row (no ties in these scores), written from the definition."""
    return np.array([1 + int(np.sum(row > row[i])) for i, row in enumerate(s)])


def test_meanr_with_one_direction_is_an_error_not_an_empty_table() -> None:
    """-d t2v -m meanR used to return no value at all, with exit 0."""
    with pytest.raises(FirevalError, match="both directions"):
        fireval.evaluate(_scores(), collection=_coll(), measures="meanR", direction="t2v")


def test_meanr_with_both_directions_matches_the_definition() -> None:
    s = _scores()
    ev = fireval.evaluate(s, collection=_coll(), measures="meanR")
    cs = [np.mean(_first_ranks(x) <= k) for x in (s, s.T) for k in (1, 5, 10)]
    assert ev.to_dict(names="ir")["both"]["meanR"] == pytest.approx(np.mean(cs))


def test_meanr_on_a_one_direction_run_says_why(tmp_path) -> None:
    coll = _coll(3)
    path = tmp_path / "x.run"
    path.write_text("c0 Q0 v0 1 2.0 t\nc0 Q0 v1 2 1.0 t\nc1 Q0 v1 1 1.0 t\nc2 Q0 v2 1 1.0 t\n")
    run = read_trec_run(path, coll)
    with pytest.raises(InputError, match="meanR needs both directions"):
        fireval.evaluate(run, collection=coll, measures="meanR")


def test_value_defaults_to_the_evaluated_unjudged_mode_and_reads_tvr_names() -> None:
    s = _scores()
    ranks = _first_ranks(s)
    ev = fireval.evaluate(s, collection=_coll(), measures="C@1,MnR", unjudged="condensed")
    # instance labels only: condensed keeps only the relevant video, so C@1 = 1
    assert ev.value("C@1") == 1.0
    ev = fireval.evaluate(s, collection=_coll(), measures="R@1,MnR", direction="t2v")
    assert ev.value("R@1") == pytest.approx(np.mean(ranks <= 1))
    assert ev.value("mnr") == pytest.approx(ranks.mean())
    with pytest.raises(FirevalError, match="measures: C@1, MnR"):
        ev.value("C@5")


def test_value_keeps_lower_as_the_default_when_it_was_evaluated() -> None:
    ev = fireval.evaluate(_scores(), collection=_coll(), measures="C@1", unjudged=("upper", "lower"))
    assert ev.value("C@1") == ev.value("C@1", unjudged="lower")
    assert ev.value("C@1", unjudged="upper") == 1.0  # instance labels: every other video unjudged
