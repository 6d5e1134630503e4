from __future__ import annotations

import re

import numpy as np
import pytest

from fireval.analysis.trust import analyse
from fireval.report.build import write_report
from fireval.report.latex import escape

from .conftest import simple_values


@pytest.fixture(scope="module")
def analysis(toy):  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    train = ["a man plays guitar on the beach", "a dog runs in the kitchen", "a woman cooks food"]
    return analyse(
        coll,
        runs,
        sets,
        measures=["C@1", "C@5", "nDCG@10"],
        values_fn=simple_values,
        n_resamples=500,
        budget_resamples=200,
        train_captions=train,
    )


def test_analysis_values_against_direct_computation(analysis, toy) -> None:  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    # original C@1 = share of captions whose own video scores highest
    for name, run in runs.items():
        s = np.asarray(run.scores)
        c1 = float(np.mean(s.argmax(axis=1) == coll.caption_video))
        row = next(r for r in analysis.scores if r["run"] == name and r["measure"] == "C@1")
        assert row["original"] == pytest.approx(c1)
        assert row["augmented"] >= row["original"] - 1e-12
    ci = next(
        r
        for r in analysis.intervals
        if r["run"] == "alpha" and r["measure"] == "C@1" and r["labels"] == "original"
    )
    assert ci["low"] <= ci["mean"] <= ci["high"]
    assert len(analysis.comparisons) == 3 * 3
    assert {(r["a"], r["b"]) for r in analysis.overlap} == {
        ("alpha", "beta"),
        ("alpha", "gamma"),
        ("beta", "gamma"),
    }
    assert {r["run"] for r in analysis.pool_bias} == {"alpha", "beta", "gamma"}
    assert all(r["drop"] >= -1e-12 for r in analysis.pool_bias if r["measure"] == "C@1")
    assert analysis.train_overlap is not None and analysis.train_overlap.shape == (coll.n_captions,)
    assert set(analysis.positive_ranks["alpha"]) == {"instance", "human"}


def test_markdown_and_latex(analysis, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = write_report(analysis, None, markdown=tmp_path / "r.md", latex=tmp_path / "r.tex")
    md = (tmp_path / "r.md").read_text()
    tex = (tmp_path / "r.tex").read_text()
    assert not (tmp_path / "r.html").exists()
    for t in out.tables:
        assert f"### {t.title}" in md
        assert f"tab:fireval-{t.key}" in tex
    # one markdown row per table row
    block = md.split("### Top-10 overlap and RBO")[1].split("###")[0]
    assert len([ln for ln in block.splitlines() if ln.startswith("| alpha") or ln.startswith("| beta")]) == 3
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") == len(out.tables)
    assert "_" not in re.sub(r"\\_|tab:fireval-[a-z_0-9]+", "", tex.split("\n", 1)[1])
    assert escape("a_b & 5% Δ") == r"a\_b \& 5\% $\Delta$"


@pytest.mark.browser
def test_html_renders_in_chromium(analysis, tmp_path, chromium_path, chromium_args) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import sync_playwright

    out = write_report(analysis, tmp_path / "report.html", title="toy <report>", names="tvr")
    html = (tmp_path / "report.html").read_text()
    assert "http://" not in html and "https://" not in html
    assert "<report>" not in html and "&lt;report&gt;" in html
    external: list[str] = []
    shots: dict[int, dict] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium_path,
            args=chromium_args,
        )
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.on(
                    "request",
                    lambda r: external.append(r.url) if not r.url.startswith(("file:", "data:")) else None,
                )
                page.goto((tmp_path / "report.html").as_uri())
                page.wait_for_load_state("load")
                shot = tmp_path / f"report-{width}.png"
                page.screenshot(path=str(shot), full_page=True)
                shots[width] = {
                    "png": shot,
                    # the page itself never scrolls sideways: wide tables scroll inside their box
                    "scroll": page.evaluate("document.documentElement.scrollWidth"),
                    "imgs": page.eval_on_selector_all(
                        "figure img",
                        "els => els.map(e => [e.complete, e.naturalWidth, e.naturalHeight, e.getBoundingClientRect().right])",
                    ),
                    "src": page.eval_on_selector_all(
                        "figure img", "els => els.map(e => e.currentSrc.slice(-64))"
                    ),
                }
                if width == 1400:
                    keys = page.eval_on_selector_all("figure", "els => els.map(e => e.id)")
                    empties = page.eval_on_selector_all(
                        "figure p.empty", "els => els.map(e => e.textContent)"
                    )
                    rows = page.eval_on_selector_all(
                        "table.report-table",
                        "els => Object.fromEntries(els.map(e => [e.dataset.key, e.querySelectorAll('tbody tr').length]))",
                    )
                    cell = page.inner_text("table[data-key=overlap] tbody tr td:nth-child(3)")
                    groups = page.eval_on_selector_all(
                        "table[data-key=paper] thead tr.group th",
                        "els => els.map(e => [e.textContent, e.colSpan])",
                    )
                    bold = page.eval_on_selector_all("table[data-key=paper] strong", "els => els.length")
                page.close()
        finally:
            browser.close()
    assert external == []
    for width, got in shots.items():
        assert got["png"].stat().st_size > 10_000
        assert got["scroll"] <= width, f"page wider than the {width} px viewport"
        assert all(c and w > 100 and h > 100 and right <= width for c, w, h, right in got["imgs"])
    # phones get the one-column drawing (readable fonts), desktops the two-column one
    assert all(a != b for a, b in zip(shots[390]["src"], shots[1400]["src"], strict=True))
    drawn = [f for f in out.figures if not f.empty]
    assert len(shots[1400]["imgs"]) == len(drawn) >= 8
    assert len(empties) == len(out.figures) - len(drawn)
    for key in (
        "fig-intervals",
        "fig-scores",
        "fig-overlap",
        "fig-correctness-words",
        "fig-correctness-chara",
        "fig-positives",
        "fig-ranks",
        "fig-budget",
        "fig-train-overlap",
        "fig-train-similarity",
    ):
        assert key in keys
    for key in (
        "paper",
        "intervals",
        "significance",
        "overlap",
        "pool_bias",
        "judged",
        "budget",
        "train_overlap",
        "train_similarity",
        "caption_examples",
    ):
        assert rows.get(key, 0) > 0, key
    # paper table: direction over 3 measures, rows in sections original / augmented / Δ (bold headings)
    # and one bold best per scored column
    assert [g for g in groups if g[0]] == [["t2v", 3]]
    assert bold >= 3 + 6
    expected = 100 * next(r["overlap"] for r in analysis.overlap if r["a"] == "alpha" and r["b"] == "beta")
    assert float(cell) == pytest.approx(expected, abs=0.051)


def test_pool_bias_from_label_provenance(toy) -> None:  # type: ignore[no-untyped-def]
    from fireval.core import Judgments, merge

    coll, runs, sets = toy
    human = sets["augmented"].from_source("human")
    rows, cols = human.rows, human.cols
    # every third label proposed by model "ALPHA" only, the rest by "ALPHA" and an outside model
    details = {
        (int(r), int(c)): {"models": ["ALPHA"] if i % 3 == 0 else ["ALPHA", "CE"]}
        for i, (r, c) in enumerate(zip(rows, cols))
    }
    h2 = Judgments.from_arrays(coll.shape, rows, cols, human.grades, "human", details=details)
    labels = {"original": sets["original"], "augmented": merge([sets["original"], h2])}
    a = analyse(
        coll,
        runs,
        labels,
        measures=["C@5"],
        values_fn=simple_values,
        n_resamples=200,
        budget_resamples=50,
        run_models={"alpha": "ALPHA", "beta": "BETA"},
    )
    assert a.settings["pool_provenance"] == "labels"
    assert {r["run"] for r in a.pool_bias} == {"alpha", "beta"}
    beta = next(r for r in a.pool_bias if r["run"] == "beta")
    assert beta["drop"] == 0.0  # beta proposed nothing
    # alpha: recompute with the labels alpha alone proposed removed
    keep = [i % 3 != 0 for i in range(len(rows))]
    loo = merge(
        [
            sets["original"],
            Judgments.from_arrays(coll.shape, rows[keep], cols[keep], human.grades[keep], "human"),
        ]
    )
    expected = np.nanmean(simple_values(runs["alpha"], loo, "t2v", ["C@5"])["C@5"])
    alpha = next(r for r in a.pool_bias if r["run"] == "alpha")
    assert alpha["leave_one_out"] == pytest.approx(expected)


def test_v2t_analysis_renders(toy) -> None:  # type: ignore[no-untyped-def]
    from fireval.report.build import render

    coll, runs, sets = toy
    a = analyse(
        coll,
        runs,
        sets,
        measures=["C@1"],
        direction="v2t",
        values_fn=simple_values,
        n_resamples=200,
        budget_resamples=50,
    )
    assert a.settings["direction"] == "v2t"
    assert a.correctness == {} and a.lengths is None
    assert a.positives is not None and a.positives.shape == (coll.n_videos,)
    # v2t instance labels: each video has its 2 captions as positives
    row = next(r for r in a.scores if r["run"] == "alpha")
    s = np.asarray(runs["alpha"].scores).T
    best = s.argmax(axis=1)
    assert row["original"] == pytest.approx(np.mean(coll.caption_video[best] == np.arange(coll.n_videos)))
    out = render(a)
    assert "fig-positives" not in [f.key for f in out.figures] and "<table" in out.html


def test_label_sources_table_counts_sources_and_unresolved(toy) -> None:  # type: ignore[no-untyped-def]
    from fireval.core.judgments import Judgments, merge
    from fireval.report.tables import build_tables

    coll, runs, sets = toy
    # two human labels on non-instance pairs (one relevant, one not) and one unresolved pair
    v0, v1 = int(coll.caption_video[0]), int(coll.caption_video[1])
    others = [v for v in range(coll.n_videos) if v not in (v0, v1)]
    human = Judgments.from_arrays(
        coll.shape, [0, 1], [others[0], others[0]], [1.0, 0.0], "human", unresolved=[[2, others[1]]]
    )
    small = {"original": sets["original"], "augmented": merge([sets["original"], human])}
    a = analyse(
        coll,
        {"alpha": runs["alpha"]},
        small,
        measures=["C@1"],
        values_fn=simple_values,
        n_resamples=50,
        budget_resamples=20,
    )
    tab = next(t for t in build_tables(a) if t.key == "label_sources")
    rows = {(r[0], r[1]): (r[2], r[3]) for r in tab.rows}
    assert rows == {
        ("original", "instance"): (coll.n_captions, 0),
        ("augmented", "instance"): (coll.n_captions, 0),
        ("augmented", "human"): (1, 1),
    }
    assert a.unresolved == {"original": 0, "augmented": 1}
    assert "augmented: 1" in tab.note and "original: 0" not in tab.note


def test_label_sources_table_counts_regraded_instance_positives(toy) -> None:  # type: ignore[no-untyped-def]
    """A graded human label on an instance positive gives that pair its grade: the table says how
    many pairs of each source did (instance labels carry no grade)."""
    from fireval.core.judgments import FIRE_PRECEDENCE, Judgments, merge
    from fireval.report.tables import build_tables

    coll, runs, sets = toy
    v0, v1 = int(coll.caption_video[0]), int(coll.caption_video[1])
    human = Judgments.from_arrays(coll.shape, [0, 1], [v0, v1], [3.0, 1.0], "human")  # grade 1: no change
    # FIRE's precedence (the CLI's default): the instance label wins its pair and takes the grade
    augmented = merge([sets["original"], human], FIRE_PRECEDENCE)
    a = analyse(
        coll,
        {"alpha": runs["alpha"]},
        {"original": sets["original"], "augmented": augmented},
        measures=["C@1"],
        values_fn=simple_values,
        n_resamples=50,
        budget_resamples=20,
    )
    tab = next(t for t in build_tables(a) if t.key == "label_sources")
    assert [c[0] for c in tab.columns][-1] == "regraded"
    got = {(r[0], r[1]): r[-1] for r in tab.rows}
    assert got[("augmented", "human")] == 1 and got[("original", "instance")] == 0
    assert "'regraded'" in tab.note
