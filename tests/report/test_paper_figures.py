"""Issue 24 item 6: figures for papers. One colour per run whatever the order of the runs, both
directions with ``-d both``, nothing clipped, one-column figures at most 3.3 x 2.5 in, SVG in the
HTML, and ``!`` on what depends on a run that fails the alignment check."""

from __future__ import annotations

import re

import pytest

from fireval.analysis.trust import analyse
from fireval.report import plots
from fireval.report.build import write_report
from fireval.report.figstyle import MARK_NOTE, OKABE_ITO, run_colours

from .conftest import simple_values


def _analyse(toy, order: list[str], both: bool = True):  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    return analyse(
        coll,
        {r: runs[r] for r in order},
        sets,
        measures=["C@1", "C@5"],
        values_fn=simple_values,
        paper_directions=("v2t",) if both else (),
        n_resamples=100,
        budget_resamples=20,
    )


@pytest.fixture(scope="module")
def both(toy):  # type: ignore[no-untyped-def]
    return _analyse(toy, ["alpha", "beta", "gamma"])


def _drawn(f: plots.Figure, width: float):  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with plots._style():
        fig = Figure(figsize=plots.size(f, width), dpi=100, layout="constrained")
        FigureCanvasAgg(fig)
        f.draw(fig)  # type: ignore[misc]
        fig.canvas.draw()
    return fig


def _legend_colours(fig) -> dict[str, str]:  # type: ignore[no-untyped-def]
    from matplotlib.colors import to_hex

    (leg,) = fig.legends
    return {
        t.get_text(): to_hex(h.get_facecolor() if hasattr(h, "get_facecolor") else h.get_color())
        for t, h in zip(leg.get_texts(), leg.legend_handles, strict=True)
    }


def test_run_colours_are_keyed_by_name_not_order(toy, both) -> None:  # type: ignore[no-untyped-def]
    names = ["clip4clip", "GRAM", "VAST", "x", "y", "z"]
    assert run_colours(names) == run_colours(names[::-1])
    assert len(set(run_colours(names).values())) == 6 and set(run_colours(names).values()) <= set(OKABE_ITO)
    other = _analyse(toy, ["gamma", "alpha", "beta"], both=False)
    for key in ("fig-intervals", "fig-budget"):
        a = next(f for f in plots.build_figures(both, png=False) if f.key == key)
        b = next(f for f in plots.build_figures(other, png=False) if f.key == key)
        ca, cb = _legend_colours(_drawn(a, 3.3)), _legend_colours(_drawn(b, 6.9))
        runs = {"alpha", "beta", "gamma"}
        assert runs <= set(ca) and {r: ca[r] for r in runs} == {r: cb[r] for r in runs}, (
            key
        )  # same colour per run


def test_both_directions_are_drawn(both) -> None:  # type: ignore[no-untyped-def]
    figs = {f.key: f for f in plots.build_figures(both, "tvr", png=False)}
    for key in ("fig-intervals", "fig-scores"):
        fig = _drawn(figs[key], 6.9)
        titles = [ax.get_title() for ax in fig.axes]
        assert [t.split(",")[0].split(":")[0] for t in titles] == ["t2v", "v2t"], (key, titles)
        assert "t2v, v2t" in figs[key].caption


def test_overlap_ranks_and_budget_are_drawn_per_direction(both) -> None:  # type: ignore[no-untyped-def]
    """With -d both, the overlap, rank and budget figures showed t2v only (issue 24 item 6)."""
    assert set(both.direction_overlap) == set(both.direction_ranks) == set(both.direction_budget) == {"v2t"}
    # v2t ranks the captions of each video: as many relevant pairs, seen from the other side
    for run, by in both.direction_ranks["v2t"].items():
        assert sum(r.size for r in by.values()) == sum(r.size for r in both.positive_ranks[run].values())
    assert {(r["run"], r["measure"]) for r in both.direction_budget["v2t"]} == {
        (r["run"], r["measure"]) for r in both.budget
    }
    figs = {f.key: f for f in plots.build_figures(both, "tvr", png=False)}
    for width in plots.WIDTHS.values():
        titles = [ax.get_title() for ax in _drawn(figs["fig-overlap"], width).axes]
        assert [t.split()[-3] for t in titles] == ["t2v", "t2v", "v2t", "v2t"], titles
        titles = [ax.get_title() for ax in _drawn(figs["fig-ranks"], width).axes]
        assert [t.split(":")[0] for t in titles] == ["t2v", "v2t"], titles
        budget = _drawn(figs["fig-budget"], width)
        assert {"t2v", "v2t"} <= set(_legend_colours(budget))
        styles = {ln.get_linestyle() for ax in budget.axes for ln in ax.get_lines()}
        assert styles == {"-", "--"}, styles
    for key in ("fig-overlap", "fig-ranks", "fig-budget"):
        assert "t2v, v2t" in figs[key].caption, (key, figs[key].caption)
    # correctness by caption length is about captions as queries: the caption says why v2t has none
    assert "v2t are videos" in figs["fig-correctness-words"].caption


def test_nothing_clipped_and_one_column_fits(both) -> None:  # type: ignore[no-untyped-def]
    for f in plots.build_figures(both, "tvr", png=False):
        if f.empty:
            continue
        w, h = plots.size(f, plots.WIDTHS["1col"])
        assert w <= 3.3 and h <= 2.5, (f.key, w, h)
        for width in plots.WIDTHS.values():
            fig = _drawn(f, width)
            box = fig.bbox
            r = fig.canvas.get_renderer()
            # what is drawn: each panel with its ticks, labels, titles and texts; legends; figure texts
            parts = [(ax.get_title(loc="left") or ax.get_title(), ax.get_tightbbox(r)) for ax in fig.axes]
            parts += [("legend", leg.get_window_extent(r)) for leg in fig.legends]
            parts += [(t.get_text(), t.get_window_extent(r)) for t in fig.texts if t.get_text().strip()]
            if fig._suptitle is not None:
                parts.append((fig._suptitle.get_text(), fig._suptitle.get_window_extent(r)))
            for what, e in parts:
                inside = (
                    e.x0 >= box.x0 - 1 and e.y0 >= box.y0 - 1 and e.x1 <= box.x1 + 1 and e.y1 <= box.y1 + 1
                )
                assert inside, (f.key, width, what, e, box)


def test_pdf_of_a_one_column_figure_is_at_most_3_3_by_2_5_in(both, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = next(f for f in plots.build_figures(both, png=False) if f.key == "fig-correctness-words")
    pdf = plots.render(f, plots.WIDTHS["1col"], "pdf")
    m = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf)
    assert m and float(m.group(1)) <= 3.3 * 72 + 0.1 and float(m.group(2)) <= 2.5 * 72 + 0.1


def test_html_embeds_svg_and_marks_misaligned_runs(both, tmp_path) -> None:  # type: ignore[no-untyped-def]
    figs = {f.key: f for f in plots.build_figures(both, png=False, unaligned={"gamma"})}
    labels = _legend_colours(_drawn(figs["fig-intervals"], 3.3))
    assert "gamma !" in labels and "alpha" in labels  # augmented values of gamma are marked
    scores = _drawn(figs["fig-scores"], 6.9)
    assert any(t.get_text() == "!" for ax in scores.axes for t in ax.texts)
    corr = _drawn(figs["fig-correctness-words"], 6.9)
    titles = [ax.get_title(loc="left") for ax in corr.axes]
    assert all(t.startswith("!") == ("gamma" in t) for t in titles), titles
    assert MARK_NOTE in figs["fig-intervals"].caption
    out = write_report(both, tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    assert html.count("data:image/svg+xml;base64,") >= 2 * len([f for f in out.figures if not f.empty]) - 1
    assert "image/png" not in html


def test_figure_modules_stay_small_and_the_old_imports_work() -> None:
    """report/plots.py was 720 lines: the shared machinery moved to report/figcore.py, and every
    name callers imported from plots still imports from there (re-exported)."""
    from pathlib import Path

    from fireval.report import figcore

    for mod in (plots, figcore):
        n = len(Path(str(mod.__file__)).read_text(encoding="utf-8").splitlines())
        assert n <= 600, f"{mod.__name__}: {n} lines"
    for name in ("Figure", "render", "size", "grid", "WIDTHS", "HTML_DPI", "FIGURE_KEYS", "figure_files"):
        assert getattr(plots, name) is getattr(figcore, name), name
    for name in ("write_figures", "_axes", "_style", "_title", "_suptitle", "Draw", "OKABE_ITO"):
        assert hasattr(plots, name), name
