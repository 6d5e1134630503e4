"""The reports' "Input checks" section and the terminal marks, from a ChecksReport built by hand."""

from __future__ import annotations

import pandas as pd

from fireval.checks import CheckResult, ChecksReport, PairResult, Status
from fireval.report.checks_section import checks_html, checks_markdown
from fireval.report.terminal import comparison_tables


def _report() -> ChecksReport:
    evil = "<script>alert(1)</script>|x"
    rep = ChecksReport()
    rep.runs[evil] = {"alignment": CheckResult("alignment", Status.FAIL, "rows <b>shuffled</b>")}
    rep.runs["ok"] = {"alignment": CheckResult("alignment", Status.PASS, "fine")}
    rep.pairs.append(PairResult(evil, "ok", CheckResult("agreement", Status.FAIL, "at chance")))
    return rep


def test_html_section_escapes_names_and_messages():
    html = str(checks_html(_report()))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>" not in html
    assert "Not comparable per query" in html
    assert str(checks_html(None)) == ""


def test_markdown_section_escapes_pipes():
    md = checks_markdown(_report())
    assert md.startswith("## Input checks")
    assert "\\|x" in md and "**fail**" in md
    assert checks_markdown(None) == ""


def test_terminal_tables_mark_truncated_values():
    table = pd.DataFrame(
        {
            "run": ["g", "g"],
            "labels": ["original"] * 2,
            "direction": ["t2v"] * 2,
            "unjudged": ["lower"] * 2,
            "ties": ["tie-aware"] * 2,
            "measure": ["C@1", "MnR"],
            "value": [0.5, 55.8],
        }
    )
    from rich.console import Console

    con = Console(width=200, record=True)
    for t in comparison_tables(table, marks={"g": ["MnR"]}):
        con.print(t)
    text = con.export_text()
    assert "55.8†" in text and "50.0†" not in text and "truncated" in text
    plain = Console(width=200, record=True)
    for t in comparison_tables(table):
        plain.print(t)
    assert "†" not in plain.export_text()


def _truncated(per_direction: dict[str, tuple[int, float] | None]) -> ChecksReport:
    """A report whose run ``g`` is cut at ``k`` (share of relevant docs in the cut) per direction."""
    dirs = {
        d: {"truncated": False, "k": None}
        if v is None
        else {"truncated": True, "k": v[0], "share_relevant_in_cut": v[1]}
        for d, v in per_direction.items()
    }
    rep = ChecksReport()
    rep.runs["g"] = {"truncation": CheckResult("truncation", Status.WARN, "cut", {"directions": dirs})}
    return rep


def test_marked_measures_use_each_directions_own_cut():
    measures = ["C@1", "C@10", "C@50", "C@100", "MnR", "MdR", "meanR"]
    rep = _truncated({"t2v": (50, 0.1), "v2t": (8, 0.6)})
    assert rep.marked_measures("g", measures, "t2v") == ["C@100", "MnR"]
    assert rep.marked_measures("g", measures, "v2t") == ["C@10", "C@50", "C@100", "MnR", "MdR", "meanR"]
    # over both directions: marked when either direction marks it; no direction: the first cut
    assert rep.marked_measures("g", measures, "both") == rep.marked_measures("g", measures, "v2t")
    assert rep.marked_measures("g", measures) == rep.marked_measures("g", measures, "t2v")
    only_v2t = _truncated({"t2v": None, "v2t": (50, 0.0)})
    assert only_v2t.marked_measures("g", measures, "t2v") == []
    assert only_v2t.marked_measures("g", measures, "v2t") == ["C@100"]
    assert only_v2t.truncated("g", "t2v") is None and only_v2t.truncated("g") == (50, 0.0)
    assert only_v2t.marked_measures("other", measures, "v2t") == []


def test_terminal_tables_mark_each_direction_by_its_own_list():
    rows = [
        {"run": "g", "labels": "original", "direction": d, "unjudged": "lower", "ties": "tie-aware"}
        | {"measure": m, "value": v}
        for d in ("t2v", "v2t")
        for m, v in (("C@50", 0.9), ("MnR", 55.8))
    ]
    from rich.console import Console

    texts = []
    for t in comparison_tables(rows, marks={"g": {"t2v": [], "v2t": ["C@50"]}}):
        con = Console(width=200, record=True)
        con.print(t)
        texts.append(con.export_text())
    t2v, v2t = texts
    assert "†" not in t2v and "truncated" not in t2v  # no mark, no caption
    assert "90.0†" in v2t and "55.8†" not in v2t and "truncated" in v2t
