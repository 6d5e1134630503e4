"""Regressions from fresh-eyes QA of the report: pairs the input checks flag, stale figure files, wide LaTeX."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from fireval.analysis.trust import analyse
from fireval.report.latex import PAGE_PT, latex_document, table_latex, width_pt
from fireval.report.markdown import render_markdown
from fireval.report.plots import Figure, figure_files, write_figures
from fireval.report.tables import MARK, PAIR_MARK, Cell, build_tables

from .conftest import simple_values

MEASURES = ["C@1", "C@5"]


@pytest.fixture(scope="module")
def analysis(toy):  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    return analyse(
        coll, runs, sets, measures=MEASURES, values_fn=simple_values, n_resamples=2000, budget_resamples=20
    )


def _col(t, header_prefix: str, direction_group: int = 0) -> int:  # type: ignore[no-untyped-def]
    return next(i for i, (h, _) in enumerate(t.columns) if h == header_prefix) + direction_group


def test_no_dagger_between_runs_not_comparable_per_query(analysis) -> None:  # type: ignore[no-untyped-def]
    """gamma (random) is significantly worse than alpha; when the checks find alpha and gamma in
    different orders, their paired test is meaningless and gamma must not get a dagger."""
    plain = next(t for t in build_tables(analysis) if t.key == "paper")
    c1 = next(i for i, (h, _) in enumerate(plain.columns) if h == "C@1")
    gamma = next(r for r in plain.rows if r[0] == "gamma")
    assert "alpha" in analysis.paper["t2v"].best[analysis.label_sets[0]]["C@1"]
    assert isinstance(gamma[c1], Cell) and MARK in gamma[c1].mark  # the premise: marked without pairs
    pairs = {("alpha", "gamma"): "agree only at chance"}
    flagged = next(t for t in build_tables(analysis, pairs=pairs) if t.key == "paper")
    gamma = next(r for r in flagged.rows if r[0] == "gamma")
    assert MARK not in gamma[c1].mark
    assert "not comparable per query (alpha vs gamma)" in flagged.note
    beta = next(r for r in flagged.rows if r[0] == "beta")
    assert beta[c1].mark == next(r for r in plain.rows if r[0] == "beta")[c1].mark  # others unchanged


def test_pair_rows_carry_the_mark_in_every_pair_table(analysis) -> None:  # type: ignore[no-untyped-def]
    pairs = {("gamma", "alpha"): "agree only at chance"}  # either order
    tables = {t.key: t for t in build_tables(analysis, pairs=pairs)}
    sig = tables["significance"]
    for row in sig.rows:
        flagged = {row[1], row[2].value} == {"alpha", "gamma"}
        assert (row[2].mark == PAIR_MARK) is flagged
    assert f"{PAIR_MARK}: not comparable per query (alpha vs gamma)" in sig.note
    ov = tables["overlap"]
    assert [r[1].mark for r in ov.rows if r[0] == "alpha" and r[1].value == "gamma"] == [PAIR_MARK]
    titles = [t.title for t in tables.values() if t.key.startswith("correctness_")]
    assert any(t.endswith("alpha vs gamma" + PAIR_MARK) for t in titles)
    assert not any(t.endswith("alpha vs beta" + PAIR_MARK) for t in titles)
    md = render_markdown(list(tables.values()))
    assert "| alpha | gamma! |" in md.replace("**", "")


def test_without_checks_nothing_is_marked(analysis) -> None:  # type: ignore[no-untyped-def]
    for t in build_tables(analysis):
        assert PAIR_MARK not in t.note
        for row in t.rows:
            assert not any(isinstance(c, Cell) and c.mark == PAIR_MARK for c in row)


def test_figure_directory_never_mixes_two_reports(tmp_path) -> None:
    """A re-run into the same --figures directory left 'fig-positives.txt' (nothing to show) beside
    a new fig-positives drawing, and figures of analyses not run this time."""
    d = tmp_path / "figs"
    d.mkdir()
    for name in [*figure_files("fig-positives"), *figure_files("fig-train-overlap")]:
        (d / name).write_text("old")
    (d / "notes.txt").write_text("mine")
    (d / "fig-mine-1col.pdf").write_text("mine")
    written = write_figures([Figure("fig-positives", "Positives", empty="every caption has one positive")], d)
    assert [p.name for p in written] == ["fig-positives.txt"]
    assert sorted(p.name for p in d.iterdir()) == ["fig-mine-1col.pdf", "fig-positives.txt", "notes.txt"]
    assert (d / "fig-positives.txt").read_text().startswith("Positives: every caption")


def test_wider_than_the_page_is_scaled_to_the_text_width(analysis, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The README's paper table (-d both, labels, 5 measures: 31 columns) ran 504 pt off the page."""
    tables = {t.key: t for t in build_tables(analysis)}
    narrow = table_latex(tables["judged"])
    assert "resizebox" not in narrow
    paper = tables["paper"]

    def widened(ncols: int):  # type: ignore[no-untyped-def]
        return type(paper)(
            paper.key,
            paper.title,
            [paper.columns[0]] + (paper.columns[1:] * 80)[:ncols],
            [[r[0]] + (r[1:] * 80)[:ncols] for r in paper.rows],
        )

    # never scaled below 90%: a far wider table is set as is, with a comment to pick fewer columns
    far = table_latex(widened(60))
    assert "resizebox" not in far and "choose fewer columns" in far and r"\footnotesize" in far
    # just wider than the page (needs 90-100%): scaled to the text width
    n = next(k for k in range(1, 80) if 0.9 <= PAGE_PT / width_pt(widened(k), 8.0) < 1.0)
    wide = widened(n)
    tex = table_latex(wide)
    assert r"\resizebox{\textwidth}{!}{%" in tex and r"\end{tabular}}" in tex
    assert tex.count("{") - tex.count(r"\{") == tex.count("}") - tex.count(r"\}")
    if shutil.which("pdflatex") is None:
        return
    doc = latex_document([wide])
    work = tmp_path
    (work / "t.tex").write_text(doc, encoding="utf-8")
    out = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout[-2000:]
    log = (work / "t.log").read_text(encoding="utf-8", errors="replace")
    over = [float(x) for x in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]
    assert not over or max(over) < 1.0, over
