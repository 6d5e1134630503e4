"""Measures as values (:mod:`fireval.metrics.definitions`): every name has a complete entry, the
entries agree with what :func:`parse_measure` accepts and with the docs, and the flags they carry
(which way is better, monotone in relevance, aggregate) are what the measures do."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from fireval.core.errors import FirevalError
from fireval.metrics import measures as M
from fireval.metrics import query_values
from fireval.metrics.definitions import MEASURE_INFO, MEASURE_INFO_BY_NAME, Cutoff, MeasureInfo

from .helpers import build, random_case

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"

#: every spelling parse_measure accepted before the measures became values (with a cutoff where
#: one is required): they must keep parsing to the same family
OLD_SPELLINGS = {
    "c@1": "C",
    "correct@5": "C",
    "R@10": "C",
    "p@10": "P",
    "precision@3": "P",
    "recall@10": "Recall",
    "ap": "AP",
    "map": "AP",
    "map@20": "AP",
    "ap_hits@20": "AP_hits",
    "r-prec": "R-Prec",
    "rprec": "R-Prec",
    "r-precision": "R-Prec",
    "rr": "RR",
    "mrr": "RR",
    "recip_rank": "RR",
    "mdr": "MdR",
    "medr": "MdR",
    "mnr": "MnR",
    "meanr_rank": "MnR",
    "ndcg": "nDCG",
    "ndcg@10": "nDCG",
    "ndcg_exp": "nDCG_exp",
    "judged@10": "judged",
    "meanr": "meanR",
    "geoc": "geoC",
}


def test_every_name_has_a_complete_value() -> None:
    assert tuple(i.name for i in MEASURE_INFO) == M.MEASURE_NAMES
    assert set(MEASURE_INFO_BY_NAME) == set(M.MEASURE_NAMES)
    for info in MEASURE_INFO:
        assert info.description.strip() and "\n" not in info.description, info.name
        assert info.citation.strip(), info.name
        assert info.aggregate in ("mean", "median", "composite"), info.name
        assert info.docs.startswith("docs/metrics.md#"), info.name
        json.dumps(info.to_dict())  # JSON-ready


def test_measure_info_property() -> None:
    assert M.parse_measure("AP_hits@10").info is MEASURE_INFO_BY_NAME["AP_hits"]
    assert M.parse_measure("mrr").info.name == "RR"
    assert "exponential" in M.parse_measure("nDCG_exp@5").info.description
    d = M.parse_measure("P@R").describe()
    assert d["measure"] == "P@R" and d["name"] == "P" and d["monotone_in_relevance"] is False
    assert M.parse_measure("C@10").describe()["note"] == "C@10 is what TVR papers call R@10"


@pytest.mark.parametrize("info", MEASURE_INFO, ids=lambda i: i.name)
def test_every_alias_resolves(info: MeasureInfo) -> None:
    cut = "@10" if info.cutoff is Cutoff.REQUIRED else ""
    for alias in (info.name, *info.aliases):
        for spelling in (alias, alias.lower(), alias.upper()):
            assert M.parse_measure(spelling + cut).name == info.name, spelling


def test_old_spellings_keep_parsing() -> None:
    for text, family in OLD_SPELLINGS.items():
        assert M.parse_measure(text).name == family, text
    assert str(M.parse_measure("nDCG@R")) == "nDCG@R" and str(M.parse_measure(" AP @ 5 ")) == "AP@5"


@pytest.mark.parametrize("info", MEASURE_INFO, ids=lambda i: i.name)
def test_cutoff_rule_is_what_parse_measure_accepts(info: MeasureInfo) -> None:
    def parses(text: str) -> bool:
        try:
            M.parse_measure(text)
        except FirevalError:
            return False
        return True

    assert parses(info.name) == (info.cutoff is not Cutoff.REQUIRED)
    assert parses(f"{info.name}@10") == (info.cutoff is not Cutoff.NONE)
    assert parses(f"{info.name}@R") == info.at_r
    for form in info.forms:  # every form shown parses once K is a number
        assert M.parse_measure(form.replace("@K", "@7")).info is info, form


def test_flags_keep_their_meaning() -> None:
    """The families' flags reproduce what Measure said before they existed (no semantics changed)."""
    at_r = {i.name for i in MEASURE_INFO if i.at_r}
    assert at_r == {"P", "Recall", "AP", "nDCG", "nDCG_exp", "infNDCG"}
    assert {n for n in M.MEASURE_NAMES if M.Measure(n).lower_is_better} == {"MdR", "MnR"}
    monotone = {i.name for i in MEASURE_INFO if i.monotone_in_relevance}
    assert monotone == {"C", "P", "RR", "MdR", "MnR", "meanR", "geoC", "RSum"}  # RSum: a sum of C@K
    assert not M.parse_measure("P@R").monotone_in_relevance and M.parse_measure("P@5").monotone_in_relevance
    for info in MEASURE_INFO:
        assert (info.aggregate == "median") == bool(info.mean_counterpart), info.name
        assert (
            M.Measure(info.name, None if info.cutoff is not Cutoff.REQUIRED else 5).aggregate
            == info.aggregate
        )
        assert (info.aggregate == "composite") == M.Measure(info.name).aggregate_only, info.name


def test_monotone_flag_matches_behaviour() -> None:
    """Flip one non-relevant doc per query to relevant (200 independent one-query cases with many
    ties, -inf and unjudged docs): a measure flagged monotone never gets worse; every other
    relevance measure gets worse at least once (judged@K is about coverage, not relevance)."""
    rng = np.random.default_rng(20261123)
    scores, grades = random_case(rng, 200, 6, levels=3, graded=False, p_judged=0.7)
    flipped = [list(row) for row in grades]
    for row in flipped:
        candidates = [j for j, g in enumerate(row) if not g]
        if candidates:
            row[int(rng.choice(candidates))] = 1.0
    names = ["C@3", "P@3", "Recall@3", "AP_hits@3", "AP", "AP@3", "nDCG", "nDCG@3", "nDCG_exp@3"]
    names += ["R-Prec", "RR", "MdR", "MnR", "P@R"]
    run, before_j = build(scores, grades)
    _, after_j = build(scores, flipped)
    before = query_values(run, before_j, "t2v", names)
    after = query_values(run, after_j, "t2v", names)
    for name in names:
        m = M.parse_measure(name)
        ok = ~np.isnan(before[name])
        sign = -1.0 if m.lower_is_better else 1.0
        change = sign * (after[name][ok] - before[name][ok])
        assert ok.sum() > 100
        if m.monotone_in_relevance:
            assert change.min() >= -1e-12, name
        else:
            assert change.min() < -1e-9, f"{name} is flagged not monotone but never got worse"


def _docstring_rows() -> dict[str, str]:
    """The ``=====`` table in measures.py's docstring: family -> description (one line)."""
    lines = (M.__doc__ or "").splitlines()
    edges = [i for i, line in enumerate(lines) if line.startswith("=============  ====")]
    assert len(edges) == 2, "measures.py's docstring has no table"
    body = lines[edges[0] + 1 : edges[1]]
    rows: dict[str, str] = {}
    current = None
    for line in body:
        if line.startswith("``"):
            key, text = line.split("``", 2)[1], line[15:]
            current = re.sub(r"@[KR]$", "", key)
            rows[current] = text.strip()
        elif line.strip() and current is not None:
            rows[current] += " " + line.strip()
    return rows


def test_docstring_table_is_the_descriptions() -> None:
    rows = _docstring_rows()
    assert list(rows) == list(M.MEASURE_NAMES)
    for info in MEASURE_INFO:
        assert rows[info.name] == info.description, info.name


def test_docs_table_lists_the_same_names() -> None:
    """docs/metrics.md: the measures table plus the Aggregates list name exactly MEASURE_NAMES."""
    text = DOCS.read_text(encoding="utf-8")
    table = text.split("## Measures (per query)", 1)[1].split("\n#", 1)[0]
    names: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            names.update(re.sub(r"@[KR]$", "", n) for n in re.findall(r"`([^`]+)`", first))
    names.discard("…")  # the `…@R` row, about the @R cutoff itself
    aggregates = text.split("## Aggregates", 1)[1].split("\n## ", 1)[0]
    names.update(re.findall(r"^\* `(\w+)`", aggregates, re.M))
    assert names == set(M.MEASURE_NAMES)
    for info in MEASURE_INFO:  # the anchors exist
        heading = {
            "measures-per-query": "## Measures (per query)",
            "aggregates": "## Aggregates",
            "measures-for-incomplete-judgments": "## Measures for incomplete judgments",
        }
        assert heading[info.anchor] in text


def test_find_measure_info() -> None:
    assert M.find_measure_info("AP_hits@10") == (MEASURE_INFO_BY_NAME["AP_hits"], M.Measure("AP_hits", 10))
    assert M.find_measure_info("mrr") == (MEASURE_INFO_BY_NAME["RR"], M.Measure("RR"))
    assert M.find_measure_info("Recall") == (MEASURE_INFO_BY_NAME["Recall"], None)  # needs @K to parse
    for bad in ("foo", "C@R", "R@R", "RR@5"):
        with pytest.raises(FirevalError):
            M.find_measure_info(bad)


@pytest.mark.parametrize(("text", "names"), [("R@R", "tvr"), ("R@R", "ir"), ("r@r", "tvr"), ("R@10", "ir")])
def test_ambiguous_r_suggests_only_forms_that_parse(text: str, names: str) -> None:
    with pytest.raises(FirevalError, match="ambiguous") as exc:
        M.parse_measure(text, names=names)
    suggested = re.findall(r"use ([\w-]+@\w+)|or ([\w-]+@\w+)", str(exc.value))
    forms = [a or b for a, b in suggested]
    assert forms, str(exc.value)
    for form in forms:
        M.parse_measure(form)  # raises if the suggestion does not parse


def test_at_r_error_names_the_measures_that_take_it() -> None:
    with pytest.raises(FirevalError) as exc:
        M.parse_measure("C@R")
    listed = re.findall(r"[\w-]+", str(exc.value).split("defined for", 1)[1].replace(" and ", ", "))
    assert set(listed) == {i.name for i in MEASURE_INFO if i.at_r}
    for name in listed:
        M.parse_measure(f"{name}@R")
