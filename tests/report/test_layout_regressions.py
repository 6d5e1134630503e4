"""Layout regressions found by looking at the real report and terminal output (QA)."""

from __future__ import annotations

import io
import itertools

import pandas as pd
import pytest
from rich.console import Console

from fireval.analysis.trust import analyse
from fireval.report import plots
from fireval.report.terminal import bounds_table, comparison_tables, print_tables

from .conftest import simple_values


@pytest.fixture(scope="module")
def long_named(toy):  # type: ignore[no-untyped-def]
    """The toy analysis with run names as long as real ones (``clip4clip_msrvtt``...)."""
    coll, runs, sets = toy
    renamed = {f"{name}_msrvtt_zero_shot": run for name, run in runs.items()}
    return analyse(
        coll,
        renamed,
        sets,
        measures=["C@1", "C@5", "C@10", "nDCG@10"],
        values_fn=simple_values,
        n_resamples=200,
        budget_resamples=50,
    )


def _drawn(a, key: str, width: float):  # type: ignore[no-untyped-def]
    """The report figure ``key`` drawn at ``width`` inches as the PDF/SVG writer lays it out."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    f = next(f for f in plots.build_figures(a, png=False) if f.key == key)
    assert f.draw is not None, f.empty
    with plots._style():
        fig = Figure(figsize=plots.size(f, width), dpi=100, layout="constrained")
        FigureCanvasAgg(fig)
        f.draw(fig)
        fig.canvas.draw()
    return fig, fig.canvas.get_renderer()


@pytest.mark.parametrize("width", plots.WIDTHS.values())
def test_original_vs_augmented_tick_labels_do_not_overprint(long_named, width) -> None:  # type: ignore[no-untyped-def]
    a = long_named
    fig, r = _drawn(a, "fig-scores", width)
    # issue 24: one panel per direction, measures on the x axis, runs in the legend in their colours
    assert len(fig.axes) == len(plots.directions(a))
    (legend,) = fig.legends
    assert set(a.runs) <= {t.get_text() for t in legend.get_texts()}
    for ax in fig.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        assert [t.get_text() for t in labels] == a.measures
        boxes = [t.get_window_extent(r) for t in labels]
        slanted = all(abs(t.get_rotation()) >= 20 for t in labels)
        overprint = any(b1.overlaps(b2) for b1, b2 in itertools.pairwise(boxes))
        assert slanted or not overprint, "horizontal run labels overprint each other"
        assert all(b2.x0 > b1.x0 for b1, b2 in itertools.pairwise(boxes))
    # every panel inside the figure
    fb = fig.bbox
    for ax in fig.axes:
        b = ax.get_window_extent(r)
        assert fb.x0 - 1 <= b.x0 and b.x1 <= fb.x1 + 1


@pytest.mark.parametrize("width", plots.WIDTHS.values())
def test_correctness_legend_does_not_cover_the_bars(long_named, width) -> None:  # type: ignore[no-untyped-def]
    a = long_named
    for key in ("fig-correctness-words", "fig-correctness-chara"):
        fig, r = _drawn(a, key, width)
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
        assert len(legends) == 1
        lb = legends[0].get_window_extent(r)
        fb = fig.bbox
        assert fb.x0 - 1 <= lb.x0 and lb.x1 <= fb.x1 + 1, "legend cut off at the figure edge"
        for ax in fig.axes:
            assert not lb.overlaps(ax.get_window_extent(r)), "legend drawn over a panel"
        for a1, a2 in itertools.combinations(fig.axes, 2):
            assert not a1.get_window_extent(r).overlaps(a2.get_window_extent(r)), "panels overlap"


def _tidy() -> pd.DataFrame:
    rows = []
    for run, ls, d, unj, m, v in itertools.product(
        ["clip4clip_msrvtt", "GRAM_msrvtt"],
        ["original", "augmented"],
        ["t2v"],
        ["lower", "upper"],
        ["C@1", "C@5", "C@10", "MdR", "MnR", "RR", "AP", "nDCG@10", "P@10", "Recall@10", "judged@10"],
        [0.3441],
    ):
        rows.append(
            {
                "run": run,
                "labels": ls,
                "direction": d,
                "unjudged": unj,
                "ties": "tie-aware",
                "measure": m,
                "value": v,
            }
        )
    return pd.DataFrame(rows)


def test_terminal_tables_never_truncate_numbers_on_a_narrow_console() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=60, force_terminal=False, color_system=None)
    t = _tidy()
    print_tables([*comparison_tables(t), bounds_table(t)], console=console)
    out = buf.getvalue()
    assert "…" not in out
    assert out.count("34.4") == 2 * 2 * 9 + 2 * 2 * 9 * 2  # 9 percentage measures per row
    assert "clip4clip_msrvtt" in out and " Δ " in out
    assert console.width == 60  # restored


def test_terminal_tables_unchanged_when_they_fit() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=400, force_terminal=False, color_system=None)
    print_tables(comparison_tables(_tidy()), console=console)
    lines = [ln for ln in buf.getvalue().splitlines() if "────" in ln]
    assert lines and all(len(ln) < 200 for ln in lines)
