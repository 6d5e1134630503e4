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
