"""Paper figures: PDF and SVG at one- and two-column width, palette, labels, and the empty-figure sentence."""

from __future__ import annotations

import re

import pytest

from fireval.analysis.trust import analyse
from fireval.report import plots
from fireval.report.build import write_report

from .conftest import simple_values


@pytest.fixture(scope="module")
def analysis(toy):  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    return analyse(
        coll,
        runs,
        sets,
        measures=["C@1", "C@5"],
        values_fn=simple_values,
        n_resamples=200,
        budget_resamples=50,
        train_captions=["a man plays guitar on the beach", "a dog runs in the kitchen", "a woman cooks food"],
    )


@pytest.fixture(scope="module")
def instance_only(toy):  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    return analyse(
        coll,
        {"alpha": runs["alpha"]},
        {"original": sets["original"]},
        measures=["C@1"],
        values_fn=simple_values,
        n_resamples=100,
        budget_resamples=20,
    )


def _pdf_width_pt(data: bytes) -> float:
    m = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data)
    assert m, "no MediaBox"
    return float(m.group(1))


def test_every_figure_as_pdf_and_svg_at_both_widths(analysis, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = write_report(analysis, None, figures=tmp_path / "figs", names="tvr")
    drawn = [f for f in out.figures if not f.empty]
    assert len(drawn) >= 9
    assert len(out.figure_files) == 4 * len(drawn) + (len(out.figures) - len(drawn))
    for f in drawn:
        for tag, width in plots.WIDTHS.items():
            pdf = (tmp_path / "figs" / f"{f.key}-{tag}.pdf").read_bytes()
            svg = (tmp_path / "figs" / f"{f.key}-{tag}.svg").read_text()
            assert pdf.startswith(b"%PDF") and _pdf_width_pt(pdf) == pytest.approx(72 * width, abs=0.1)
            assert b"/FontFile2" in pdf or b"/Type3" not in pdf  # TrueType (fonttype 42), no Type 3
            m = re.search(r'<svg[^>]*width="([\d.]+)pt"', svg)
            assert m and float(m.group(1)) == pytest.approx(72 * width, abs=0.1)
            assert "<text" in svg  # text stays text (svg.fonttype none)
    assert not out.html  # no HTML asked for: no PNGs drawn either
    assert all(f.png == b"" for f in out.figures)


def test_same_analysis_same_bytes(analysis) -> None:  # type: ignore[no-untyped-def]
    figs = [f for f in plots.build_figures(analysis, png=False) if f.key in ("fig-intervals", "fig-budget")]
    assert len(figs) == 2
    for f in figs:
        for fmt in ("pdf", "svg"):
            assert plots.render(f, plots.WIDTHS["1col"], fmt) == plots.render(f, plots.WIDTHS["1col"], fmt)


def test_palette_labels_and_titles(analysis) -> None:  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    figs = {f.key: f for f in plots.build_figures(analysis, "tvr", png=False)}
    for key, f in figs.items():
        if f.empty:
            continue
        with plots._style():
            fig = Figure(figsize=plots.size(f, plots.WIDTHS["1col"]), layout="constrained")
            FigureCanvasAgg(fig)
            f.draw(fig)  # type: ignore[misc]
            fig.canvas.draw()
        for ax in fig.axes:
            if key != "fig-overlap":  # heat maps: viridis, cells labelled with their value
                assert ax.get_ylabel(), (key, "no y label")
                colours = {to_hex(p.get_facecolor()) for p in ax.patches if p.get_visible()}
                colours |= {to_hex(ln.get_color()) for ln in ax.lines if ln.get_marker() not in ("", "None")}
                colours -= {"#ffffff", "#000000"}
                assert colours <= {c.lower() for c in plots.OKABE_ITO}, (key, colours)
            for t in [*ax.get_xticklabels(), *ax.get_yticklabels()]:
                assert t.get_fontsize() >= 7
        titles = [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text() if fig._suptitle else ""]
        text = " ".join(titles)
        assert text.strip(), key
        if key not in ("fig-overlap", "fig-train-overlap"):
            assert "augmented" in text, (key, "title does not say which labels")
        assert "C@" not in text, (key, "names=tvr must print R@K")


def test_nothing_to_show_is_one_sentence(instance_only, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = write_report(instance_only, tmp_path / "r.html", figures=tmp_path / "figs")
    empty = {f.key: f.empty for f in out.figures if f.empty}
    assert set(empty) == {"fig-scores", "fig-positives"}
    assert "exactly 1 positive video" in empty["fig-positives"]
    for key, sentence in empty.items():
        assert sentence.count(". ") == 0 and sentence.endswith((".", ")."))
        assert (tmp_path / "figs" / f"{key}.txt").read_text().strip().endswith(sentence)
        assert not (tmp_path / "figs" / f"{key}-1col.pdf").exists()
    html = (tmp_path / "r.html").read_text()
    assert html.count('<p class="empty">') == 2
    assert "Spearman ρ = n/a" not in html
