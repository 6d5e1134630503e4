"""Issue 24 items 5 and 7: one unit story, integer counts, no "-0.0"; RSum, sources of meanR and
geoC, and compare's CI of each difference with its seed and resamples.

The oracles are written from the definitions (docs/formats.md#units, docs/metrics.md#aggregates,
the percentile bootstrap of Efron & Tibshirani 1993 §13.3), not from the code under test.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import fireval
from fireval.cli import main
from fireval.core import Collection


def _exit(args: list[str], capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as info:
        main(args)
    cap = capsys.readouterr()
    return info.value.code or 0, cap.out, cap.err


def _coll(n: int = 30) -> Collection:
    return Collection.from_pairs(
        "toy", [(f"c{i}", f"v{i}", f"caption {i}") for i in range(n)], video_ids=[f"v{i}" for i in range(n)]
    )


def _scores(n: int = 30, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n)) + 1.5 * np.eye(n)


def _first_ranks(s: np.ndarray) -> np.ndarray:  # own item on the diagonal, no ties (continuous)
    return (s > np.diag(s)[:, None]).sum(axis=1) + 1


# ------------------------------------------------------------------------------- one unit


def test_value_table_and_to_dict_share_one_unit() -> None:
    ev = fireval.evaluate(_scores(), collection=_coll(), measures="R@1,R@5,MnR")
    flat = ev.to_dict(names="tvr")
    want = float(np.mean(_first_ranks(_scores()) <= 1))  # a fraction
    t = ev.table
    tab = float(t[(t.measure == "C@1") & (t.direction == "t2v")].value.iloc[0])
    assert flat["t2v"]["R@1"] == ev.value("R@1") == tab == pytest.approx(want)
    assert ev.to_dict(names="ir", units="percent")["t2v"]["C@1"] == pytest.approx(100 * want)
    assert ev.to_dict(names="tvr", units="percent")["t2v"]["MnR"] == flat["t2v"]["MnR"]  # ranks stay ranks


def test_every_evaluation_json_has_units_and_integer_n() -> None:
    ev = fireval.evaluate(_scores(), collection=_coll(), measures="C@1,meanR,RSum")
    rec = ev.to_dict()
    assert "fraction" in rec["units"]
    ns = [r["n"] for r in rec["table"]]
    assert all(n is None or type(n) is int for n in ns) and any(type(n) is int for n in ns)
    assert str(ev.table["n"].dtype) == "Int64"  # an integer column, missing for meanR/RSum
    # the file API's record, which the demo's results.json and evaluate --json are (it had no
    # units; n was 1000.0 there and 1000 elsewhere)
    from fireval import api
    from fireval.core import Run

    coll = _coll()
    res = api.evaluate_runs(
        {"r": Run("r", scores=_scores())},
        {"original": coll.instance_judgments()},
        collection=coll,
        measures="C@1,MnR,meanR",
        unjudged=("lower", "upper"),
    )
    doc = res.to_dict()
    text = json.dumps(doc)
    assert "fraction" in doc["units"]
    assert not re.search(r'"n": \d+\.0\b', text)
    assert all(r["n"] is None or type(r["n"]) is int for r in doc["results"])
    assert {type(r["n"]) for r in doc["results"]} == {int, type(None)}


def test_no_negative_zero_anywhere_a_number_is_formatted() -> None:
    from fireval.core.units import fixed, percent
    from fireval.report.tables import fmt
    from fireval.report.terminal import _fmt, _fmt_delta

    assert fixed(-0.0) == "0.0" and fixed(-0.04) == "0.0" and fixed(-0.04, sign=True) == "+0.0"
    assert fixed(-0.06) == "-0.1" and percent(-0.0004) == "0.0" and fixed(-1e-12, 3) == "0.000"
    assert fixed(float("nan")) == "nan"
    for kind in ("score", "diff", "rank", "rankdiff", "count", "float"):
        assert not fmt(-1e-9, kind).startswith("-"), (kind, fmt(-1e-9, kind))
    assert _fmt("C@1", -1e-12) == "0.0" and "-0.0" not in _fmt_delta("C@1", -1e-12)
    assert "-0.0" not in _fmt_delta("MnR", -0.01)


def test_wray_eq3_line_is_in_percent_like_its_table() -> None:
    import pandas as pd

    from fireval.proxies.ndcg import eq3_lines

    t = pd.DataFrame(
        {
            "run": ["r", "r"],
            "labels": ["bow", "bow"],
            "unjudged": ["lower", "lower"],
            "measure": ["nDCG@R", "nDCG@R"],
            "direction": ["t2v", "v2t"],
            "value": [0.4142, 0.3858],
        }
    )
    (line,) = eq3_lines(t)
    assert "Wray Eq. 3 (%)" in line and "(t2v 41.42 + v2t 38.58) / 2 = 40.00" in line and "0.4142" not in line


# ------------------------------------------------------------------ RSum, sources


def test_rsum_is_the_sum_of_six_recalls() -> None:
    s = _scores(seed=3)
    ev = fireval.evaluate(s, collection=_coll(), measures="rsum")
    six = [np.mean(_first_ranks(x) <= k) for x in (s, s.T) for k in (1, 5, 10)]
    assert ev.value("RSum", "both") == pytest.approx(sum(six))
    assert ev.to_dict(names="tvr", units="percent")["both"]["RSum"] == pytest.approx(100 * sum(six))
    with pytest.raises(fireval.FirevalError, match="RSum is the sum"):
        fireval.evaluate(s, collection=_coll(), measures="RSum", direction="t2v")


def test_measures_name_sources_for_meanr_geoc_and_rsum(capsys) -> None:  # type: ignore[no-untyped-def]
    from fireval.metrics.definitions import MEASURE_INFO_BY_NAME

    for name in ("meanR", "geoC", "RSum"):
        cite = MEASURE_INFO_BY_NAME[name].citation
        assert "no published source" not in cite and re.search(r"(19|20)\d\d", cite), name
    assert "Wray et al. 2021" in MEASURE_INFO_BY_NAME["geoC"].citation
    assert "footnote 1" in MEASURE_INFO_BY_NAME["geoC"].citation
    code, out, _ = _exit(["measures", "rsum"], capsys)
    assert code == 0 and "RSum" in out and "HGR" in out


# ------------------------------------------------------------------------- compare CIs


def test_compare_ci_is_the_percentile_interval_of_the_paired_bootstrap() -> None:
    from fireval.analysis.significance import compare_runs

    rng = np.random.default_rng(5)
    a = rng.integers(0, 2, 200).astype(float)
    b = np.where(rng.random(200) < 0.8, a, 1 - a)
    (c,) = compare_runs({"a": {"C@1": a}, "b": {"C@1": b}}, n_resamples=500, seed=11)
    # oracle: resample queries with replacement with the documented generator, mean of d, quantiles
    from fireval.analysis.bootstrap import bootstrap_means

    tb = bootstrap_means(a - b, 500, 11, method="indices")
    lo, hi = np.quantile(tb, [0.025, 0.975])
    assert c.ci_low <= c.mean_difference <= c.ci_high
    assert (c.ci_low, c.ci_high) == pytest.approx((lo, hi), abs=0.02)  # same law, other draw method
    assert (c.seed, c.n_resamples, c.level) == (11, 500, 0.95)


def test_compare_prints_ci_and_effect_size_and_json_holds_seed_resamples_ci(
    tmp_path, capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "200")  # the tab-separated form (at 80 columns it is split in blocks)
    coll = tmp_path / "coll.jsonl"
    coll.write_text(
        "".join(
            json.dumps({"caption_id": f"c{i}", "video_id": f"v{i}", "text": f"t {i}"}) + "\n"
            for i in range(30)
        )
    )
    np.save(tmp_path / "a.npy", _scores(seed=1))
    np.save(tmp_path / "b.npy", _scores(seed=2) * 0.3)
    js = tmp_path / "c.json"
    args = ["compare", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "-c", str(coll)]
    code, out, err = _exit(
        [*args, "--resamples", "300", "--seed", "9", "--no-checks", "-q", "--json", str(js)], capsys
    )
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("measure\t"))  # the note wraps to the width
    head = lines[at].split("\t")
    assert "95% CI" in head and "d_z" in head
    row = lines[at + 1].split("\t")
    assert re.fullmatch(r"\[[+-]?\d+\.\d, [+-]?\d+\.\d\]", row[head.index("95% CI")]), row
    doc = json.loads(js.read_text())
    # the file states its settings once at the top level (an object, issue 24 item 7) ...
    assert isinstance(doc, dict), type(doc)
    assert (doc["seed"], doc["n_resamples"], doc["level"]) == (9, 300, 0.95)
    assert "fraction" in doc["units"] and doc["direction"] == "t2v" and doc["labels"]
    rows = doc["comparisons"]
    assert rows
    for r in rows:  # ... and each comparison still carries them beside its CI
        assert r["seed"] == 9 and r["n_resamples"] == 300 and r["level"] == 0.95
        assert r["ci_low"] <= r["mean_difference"] <= r["ci_high"]
        assert "fraction" in r["units"]
