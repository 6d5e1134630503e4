"""Paper-ready tables: layout, bold best, significance daggers, LaTeX structure (and pdflatex), names."""

from __future__ import annotations

import re
import shutil
import subprocess
from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from fireval.analysis.trust import analyse
from fireval.core.errors import FirevalError
from fireval.metrics.measures import Measure, display_name, parse_measure
from fireval.report.latex import latex_document, render_latex
from fireval.report.markdown import render_markdown
from fireval.report.tables import MARK, Cell, build_tables

from .conftest import simple_values

MEASURES = ["C@1", "C@5", "nDCG@10"]


@pytest.fixture(scope="module")
def both(toy):  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    return analyse(
        coll,
        runs,
        sets,
        measures=MEASURES,
        values_fn=simple_values,
        n_resamples=4000,
        budget_resamples=50,
        paper_directions=["v2t"],
        alpha=0.05,
    )


def _paper(a, names="ir"):  # type: ignore[no-untyped-def]
    return next(t for t in build_tables(a, names) if t.key == "paper")


def _rows(t, section):  # type: ignore[no-untyped-def]
    """The rows of one row section (label set or Δ) of the paper table."""
    start = 0
    for label, n in t.sections:
        if label == section:
            return t.rows[start : start + n]
        start += n
    raise KeyError(section)


def test_layout_runs_by_direction_label_set_and_measure(both) -> None:  # type: ignore[no-untyped-def]
    t = _paper(both)
    assert t.sections == [("original", 3), ("augmented", 3), ("Δ", 3)]
    assert [r[0] for r in t.rows] == ["alpha", "beta", "gamma"] * 3
    assert len(t.columns) == 1 + 2 * len(MEASURES)
    assert t.groups == [[("", 1), ("t2v", len(MEASURES)), ("v2t", len(MEASURES))]]
    assert all(len(r) == len(t.columns) for r in t.rows)


def _oracle_scores(a, toy, direction):  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    return {
        ln: {r: simple_values(run, j, direction, MEASURES) for r, run in runs.items()}
        for ln, j in sets.items()
    }


@pytest.mark.parametrize("direction", ["t2v", "v2t"])
def test_values_bold_and_delta_match_direct_computation(both, toy, direction) -> None:  # type: ignore[no-untyped-def]
    t = _paper(both)
    vals = _oracle_scores(both, toy, direction)
    offset = 1 + (0 if direction == "t2v" else len(MEASURES))
    for ln in ["original", "augmented"]:
        for mi, m in enumerate(MEASURES):
            col = offset + mi
            means = {r: float(np.nanmean(vals[ln][r][m])) for r in vals[ln]}
            best = max(means.values())
            for row in _rows(t, ln):
                cell = row[col]
                assert isinstance(cell, Cell)
                assert cell.value == pytest.approx(means[row[0]])
                assert cell.bold == (means[row[0]] == best)
    for mi, m in enumerate(MEASURES):
        col = offset + mi
        for row in _rows(t, "Δ"):
            a_, b_ = vals["original"][row[0]][m], vals["augmented"][row[0]][m]
            ok = ~(np.isnan(a_) | np.isnan(b_))
            assert row[col].value == pytest.approx(b_[ok].mean() - a_[ok].mean())
            assert not row[col].bold and not row[col].mark


def _holm(ps: list[float]) -> list[float]:
    """Holm (1979) step-down adjusted p-values, written from the definition."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adj = [0.0] * len(ps)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adj[i] = running
    return adj


def test_daggers_agree_with_an_exact_sign_test_oracle(both, toy) -> None:  # type: ignore[no-untyped-def]
    """For 0/1 measures the randomisation test is McNemar's exact test up to Monte-Carlo error.

    Oracle: exact binomial test on the discordant queries, Holm over the three run pairs; a run
    must carry the dagger when its adjusted p against the best run is far below α, and must not
    when it is far above.
    """
    t = _paper(both)
    vals = _oracle_scores(both, toy, "t2v")
    checked = 0
    for ln in ["original", "augmented"]:
        for m in ["C@1", "C@5"]:
            col = 1 + MEASURES.index(m)
            runs = list(vals[ln])
            pairs = list(combinations(runs, 2))
            ps = []
            for ra, rb in pairs:
                a_, b_ = vals[ln][ra][m], vals[ln][rb][m]
                ok = ~(np.isnan(a_) | np.isnan(b_))
                n01 = int(((a_[ok] == 0) & (b_[ok] == 1)).sum())
                n10 = int(((a_[ok] == 1) & (b_[ok] == 0)).sum())
                ps.append(stats.binomtest(n10, n10 + n01).pvalue if n10 + n01 else 1.0)
            adj = dict(zip(pairs, _holm(ps), strict=True))
            means = {r: np.nanmean(vals[ln][r][m]) for r in runs}
            best = max(means, key=lambda r: means[r])
            for row in _rows(t, ln):
                run = row[0]
                if run == best:
                    assert row[col].mark == ""
                    continue
                p = adj.get((run, best), adj.get((best, run)))
                if p < 0.05 / 3:
                    assert row[col].mark == MARK, (ln, m, run, p)
                    checked += 1
                elif p > 0.15:
                    assert row[col].mark == "", (ln, m, run, p)
                    checked += 1
    assert checked >= 4


def test_lower_is_better_measures_bold_the_smallest(toy) -> None:  # type: ignore[no-untyped-def]
    coll, runs, sets = toy

    def with_ranks(run, judgments, direction, measures):  # type: ignore[no-untyped-def]
        base = simple_values(run, judgments, direction, ["C@1"])
        rng = np.random.default_rng(len(run.name))
        out = {"C@1": base["C@1"]}
        ranks = rng.integers(1, 20, base["C@1"].size).astype(float) * (1 + ord(run.name[0]) % 3)
        for m in measures:
            if m in ("MnR", "MdR"):
                out[m] = ranks
        return {m: out[m] for m in measures}

    a = analyse(
        coll,
        runs,
        {"original": sets["original"]},
        measures=["C@1", "MdR", "MnR"],
        values_fn=with_ranks,
        n_resamples=500,
        budget_resamples=20,
    )
    t = _paper(a)
    assert [c for c, _ in t.columns] == ["run", "C@1", "MdR↓", "MnR↓"]
    for col, agg in ((2, np.median), (3, np.mean)):
        vals = {row[0]: row[col].value for row in t.rows}
        for row in t.rows:
            assert row[col].kind == "rank"
            expected = agg(with_ranks(runs[row[0]], sets["original"], "t2v", ["MnR"])["MnR"])
            assert row[col].value == pytest.approx(expected)
            assert row[col].bold == (vals[row[0]] == min(vals.values()))
    assert all(row[2].mark == "" for row in t.rows)  # MdR is not tested
    # the rank measures are left out of the mean-based intervals
    assert {r["measure"] for r in a.intervals} == {"C@1", "MnR"}


_ESCAPED = re.compile(r"\\[{}&%$#_]")


def _check_latex_structure(tex: str) -> int:
    """Balanced braces, booktabs rules and the same column count in every row of every tabular."""
    bare = _ESCAPED.sub("", tex)
    depth = 0
    for ch in bare:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0, "closing brace without an opening one"
    assert depth == 0, "unbalanced braces"
    blocks = re.findall(r"\\begin\{tabular\}\{(.*?)\}\n(.*?)\\end\{tabular\}", tex, flags=re.S)
    assert blocks
    for spec, body in blocks:
        ncols = len(re.findall(r"p\{[^}]*\}|[lrc]", spec))
        lines = body.splitlines()
        assert lines[0] == r"\toprule" and lines[-1] == r"\bottomrule"
        assert body.count(r"\midrule") >= 1 and body.count(r"\toprule") == 1  # one more per row section
        for line in lines:
            if not line.endswith(r"\\"):
                assert line.startswith((r"\toprule", r"\midrule", r"\bottomrule", r"\cmidrule")), line
                continue
            cells = _ESCAPED.sub("", line[:-2]).split("&")
            spans = sum(
                int(m.group(1)) if (m := re.search(r"\\multicolumn\{(\d+)\}", c)) else 1 for c in cells
            )
            assert spans == ncols, (line, ncols)
    return len(blocks)


def test_latex_is_structurally_sound(both) -> None:  # type: ignore[no-untyped-def]
    tables = build_tables(both, "tvr")
    tex = render_latex(tables)
    assert _check_latex_structure(tex) == len(tables)
    paper = tex.split(r"\label{tab:fireval-paper}")[1].split(r"\end{table")[0]
    assert r"\multicolumn{3}{c}{t2v}" in paper and r"\cmidrule(lr){2-4}" in paper
    assert r"\multicolumn{7}{l}{\textit{$\Delta$}}" in paper  # the Δ row section's heading
    assert r"\textbf{" in paper and r"\textsuperscript{\dag}" in paper
    assert "randomisation test, Holm" in paper and r"$\alpha$ = 0.05" in paper
    assert "C@1" not in paper and "R@1" in paper
    assert "<" not in tex.replace("$<$", "")  # every caption and symbol escaped


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_latex_compiles_with_pdflatex(both, tmp_path) -> None:  # type: ignore[no-untyped-def]
    doc = tmp_path / "doc.tex"
    doc.write_text(latex_document(build_tables(both, "tvr")), encoding="utf-8")
    proc = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 5000


def test_markdown_paper_table(both) -> None:  # type: ignore[no-untyped-def]
    md = render_markdown(build_tables(both, "tvr"))
    block = md.split("### Results")[1].split("###")[0]
    lines = [ln for ln in block.splitlines() if ln.startswith("|")]
    head, align, *rows = lines
    n = len(head.strip("|").split(" | "))
    assert n == 1 + 2 * len(MEASURES)
    assert align.count("|") == n + 1 and len(rows) == 3 + 3 * 3  # a heading row per section
    assert "t2v R@1" in head and "v2t nDCG@10" in head
    assert [r.split("|")[1].strip() for r in rows[::4]] == ["**original**", "**augmented**", "**Δ**"]
    assert all(len(re.split(r"(?<!\\)\|", r)) == n + 2 for r in rows)
    assert "**" in block and MARK in block


def test_r_at_k_means_c_at_k_under_tvr_names() -> None:
    assert parse_measure("R@5") == Measure("C", 5)
    assert parse_measure("r@10", names="tvr") == Measure("C", 10)
    assert parse_measure("Recall@5") == Measure("Recall", 5)  # IR recall, not C@K
    with pytest.raises(FirevalError, match="ambiguous"):
        parse_measure("R@5", names="ir")
    assert display_name("C@5", "tvr") == "R@5" and display_name("C@5", "ir") == "C@5"
    assert display_name("Recall@5", "tvr") == "Recall@5" and display_name("MnR", "tvr") == "MnR"
    with pytest.raises(FirevalError):
        display_name("C@5", "trec")


def test_runs_failing_alignment_are_marked_and_never_best(toy) -> None:  # type: ignore[no-untyped-def]
    """Issue 24 item 1: a run failing the alignment check has ! on its augmented and Δ cells, is
    never bold there, and the best (and the daggers) come from the comparable runs only."""
    from fireval.report.tables import PAIR_MARK

    coll, runs, sets = toy
    kw = dict(measures=MEASURES, values_fn=simple_values, n_resamples=500, budget_resamples=20, alpha=0.05)
    plain = _paper(analyse(coll, runs, sets, **kw))
    a = analyse(coll, runs, sets, unaligned=frozenset({"alpha"}), **kw)
    t = next(tb for tb in build_tables(a, unaligned=frozenset({"alpha"})) if tb.key == "paper")
    vals = _oracle_scores(a, toy, "t2v")
    for section in ("original", "augmented", "Δ"):
        for row in _rows(t, section):
            bad = row[0] == "alpha" and section != "original"
            assert all(c.mark.endswith(PAIR_MARK) == bad for c in row[1:]), (section, row)
            assert not (bad and any(c.bold for c in row[1:]))
    for mi, m in enumerate(MEASURES):
        means = {r: float(np.nanmean(vals["augmented"][r][m])) for r in ("beta", "gamma")}
        best = max(means.values())
        for row in _rows(t, "augmented"):
            if row[0] != "alpha":
                assert row[1 + mi].bold == (means[row[0]] == best)
    assert any(c.bold for c in _rows(plain, "augmented")[0][1:])  # alpha was the best before
    # the original labels (instance positives) are untouched
    assert [[(c.value, c.bold, c.mark) for c in r[1:]] for r in _rows(t, "original")] == [
        [(c.value, c.bold, c.mark) for c in r[1:]] for r in _rows(plain, "original")
    ]
    assert PAIR_MARK + ": alpha failed the alignment check" in t.note
