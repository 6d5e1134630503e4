"""The machinery every report figure shares (matplotlib, Agg backend, no pyplot).

A :class:`Figure` is a ``draw(fig)`` function plus what the report needs around it (key,
title, caption, or the one sentence that replaces an empty figure). :func:`size` lays ``panels``
out for a width (:data:`WIDTHS`: one column 3.3 in, at most
:data:`~fireval.report.figstyle.MAX_1COL_HEIGHT` high, panels in one row or two; two columns
6.9 in), :func:`render` draws at that width as PNG, PDF or SVG with fireval's style (8 pt text, 7 pt
legends and ticks, Okabe–Ito colour cycle; PDFs embed TrueType fonts, SVGs keep text as text, no
dates so the same analysis gives the same bytes), :func:`write_figures` writes every figure at
both widths. The layout helpers (``_axes``, ``_legend``, ``_title``, ...) keep titles, legends and
labels inside the figure. The drawings of the trust analysis are in :mod:`fireval.report.plots`,
FIRE's in :mod:`fireval.report.fire_figures`.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fireval.analysis.paper import lower_is_better
from fireval.analysis.trust import TrustAnalysis
from fireval.metrics.measures import display_name
from fireval.report.figstyle import MAX_1COL_HEIGHT, OKABE_ITO

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

#: paper figure widths in inches: one column and two columns (ACM/IEEE/CVF templates)
WIDTHS = {"1col": 3.3, "2col": 6.9}
HTML_DPI = 150

_RC: dict[RcKeyType, Any] = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "pdf.fonttype": 42,
    "svg.fonttype": "none",
    "svg.hashsalt": "fireval",
    "axes.prop_cycle": None,  # set in _style (needs matplotlib)
}

Draw = Callable[[Any], None]


@dataclass
class Figure:
    """One report figure: its drawing, the HTML's SVGs, or the sentence that replaces it."""

    key: str
    title: str
    png: bytes = b""  # no longer drawn (the HTML embeds ``svg``); kept for callers that read it
    caption: str = ""
    empty: str = ""  # one sentence when there is nothing to show (then no image)
    draw: Draw | None = None
    panels: int = 1
    aspect: float = 0.75  # panel height / panel width
    png_narrow: bytes = b""  # no longer drawn (see ``svg_narrow``); kept for callers that read it
    min_panel: float = 1.6  # narrowest panel in inches (panels wrap to more rows below it)
    svg: bytes = b""  # two-column drawing for the HTML
    svg_narrow: bytes = b""  # one-column drawing, shown by the HTML on narrow screens


@contextmanager
def _style() -> Iterator[None]:
    import matplotlib as mpl
    from cycler import cycler

    rc: dict[RcKeyType, Any] = dict(_RC)
    rc["axes.prop_cycle"] = cycler(color=list(OKABE_ITO))
    with mpl.rc_context(rc):
        yield


def grid(panels: int, width: float, min_panel: float = 1.6) -> tuple[int, int]:
    """``(rows, cols)`` of ``panels`` at ``width`` inches, each panel at least ``min_panel`` wide (max 4).

    One column (under 5 in): one row of up to three panels, else two rows, so the figure fits
    :data:`~fireval.report.figstyle.MAX_1COL_HEIGHT`."""
    if width < 5:
        return (1, panels) if panels <= 3 else (2, math.ceil(panels / 2))
    per_row = max(1, int(width // min_panel))
    cols = max(1, min(panels, per_row, 4))
    return math.ceil(panels / cols), cols


def size(f: Figure, width: float) -> tuple[float, float]:
    """Figure size for ``width``: panels on a grid, each ``aspect`` times as high as wide (+ margins)."""
    rows, cols = grid(f.panels, width, f.min_panel)
    panel_h = min(2.8, f.aspect * width / cols)
    if width < 5:  # one column: at most 3.3 x 2.5 in
        return width, min(MAX_1COL_HEIGHT, rows * panel_h + 1.0)
    return width, min(9.0, rows * panel_h + 0.8)


def _wrap(text: str, inches: float, size_pt: float = 8) -> str:
    """``text`` wrapped to lines that fit ``inches`` at ``size_pt`` (DejaVu Sans: up to 0.7 em a character)."""
    import textwrap

    return textwrap.fill(text, max(12, int(0.75 * inches * 72 / (0.7 * size_pt))))


def _title(ax: Any, text: str) -> None:
    fig = ax.get_figure()
    cols = ax.get_subplotspec().get_geometry()[1] if ax.get_subplotspec() is not None else 1
    ax.set_title(_wrap(text, fig.get_figwidth() / cols))


def _suptitle(fig: Any, text: str) -> None:
    fig.suptitle(_wrap(text, fig.get_figwidth()), fontsize=8)


def _log_x(ax: Any) -> None:
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())


def render(f: Figure, width: float, fmt: str, dpi: int = HTML_DPI) -> bytes:
    """``f`` drawn at ``width`` inches as ``fmt`` (png, pdf, svg) bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    assert f.draw is not None
    with _style():
        fig = MplFigure(figsize=size(f, width), dpi=dpi, layout="constrained")
        FigureCanvasAgg(fig)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # constrained layout on crowded panels
            f.draw(fig)
            buf = io.BytesIO()
            meta: dict[str, Any] | None = None
            if fmt == "pdf":  # no dates: the same analysis gives the same bytes
                meta = {"Creator": "fireval", "Producer": "fireval", "CreationDate": None}
            elif fmt == "svg":
                meta = {"Creator": "fireval", "Date": None}
            fig.savefig(buf, format=fmt, metadata=meta)
    return buf.getvalue()


FIGURE_KEYS = (
    "fig-intervals",
    "fig-scores",
    "fig-overlap",
    "fig-correctness-words",
    "fig-correctness-chara",
    "fig-positives",
    "fig-ranks",
    "fig-train-similarity",
    "fig-budget",
    "fig-train-overlap",
    # FIRE as published (fireval.report.fire_figures)
    "fig-correctness-labels-words",
    "fig-correctness-labels-chara",
    "fig-rank-histogram",
    "fig-pool-size",
)
"""Every figure key :func:`build_figures` can produce (the file names :func:`write_figures` owns)."""


def figure_files(key: str) -> list[str]:
    """The file names a figure ``key`` may be written as (drawn at two widths, or one sentence)."""
    return [f"{key}-{tag}.{fmt}" for tag in WIDTHS for fmt in ("pdf", "svg")] + [f"{key}.txt"]


def write_figures(figures: list[Figure], directory: str | Path) -> list[Path]:
    """Each figure as ``<key>-1col.{pdf,svg}`` and ``<key>-2col.{pdf,svg}`` (3.3 in and 6.9 in wide).

    A figure with nothing to show is written as ``<key>.txt`` holding its one sentence. Files
    are written atomically; the paths written are returned. Files of an earlier report in the
    same directory that this one did not write (a figure's ``.txt`` that now has a drawing, or a
    figure of an analysis not run this time, e.g. ``fig-train-overlap`` without
    ``--train-captions``) are removed, so the directory never mixes two reports; only the names
    of :data:`FIGURE_KEYS` (:func:`figure_files`) are touched.
    """
    from fireval.atomic import atomic_write

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for f in figures:
        if f.empty:
            p = d / f"{f.key}.txt"
            with atomic_write(p, "w", encoding="utf-8") as fh:
                fh.write(f"{f.title}: {f.empty}\n")
            out.append(p)
            continue
        for tag, w in WIDTHS.items():
            for fmt in ("pdf", "svg"):
                p = d / f"{f.key}-{tag}.{fmt}"
                data = render(f, w, fmt)
                with atomic_write(p, "wb") as fh:
                    fh.write(data)
                out.append(p)
    written = {p.name for p in out}
    for key in FIGURE_KEYS:
        for name in figure_files(key):
            stale = d / name
            if name not in written and stale.is_file() and not stale.is_symlink():
                stale.unlink()
    return out


def _axes(fig: Any, n: int, min_panel: float = 1.6, **kw: Any) -> list[Any]:
    rows, cols = grid(n, fig.get_figwidth(), min_panel)
    first = fig.add_subplot(rows, cols, 1)
    return [first] + [fig.add_subplot(rows, cols, i + 1, **{k: first for k in kw}) for i in range(1, n)]


def _narrow(fig: Any) -> bool:
    return bool(fig.get_figwidth() < 5)


def _legend(fig: Any, handles: list[Any], labels: list[str], ncol_wide: int) -> None:
    """One legend under the panels, in as many columns as fit the figure's width (7 pt text:
    about 4 pt a character, plus the handle), so it is never wider than the figure."""
    col_pt = 4.2 * max((len(x) for x in labels), default=1) + 28
    fit = max(1, int(0.95 * fig.get_figwidth() * 72 // col_pt))
    fig.legend(handles, labels, loc="outside lower center", ncol=max(1, min(len(labels), ncol_wide, fit)))


def _handles(ax: Any) -> tuple[list[Any], list[str]]:
    handles, labels = ax.get_legend_handles_labels()
    return list(handles), [str(x) for x in labels]


def _xlabel_once(axes: list[Any], text: str) -> None:
    """``text`` under the middle panel of the last row only (a ``supxlabel`` would collide with
    the legend under the panels in constrained layout)."""
    rows, cols = axes[0].get_subplotspec().get_geometry()[:2]
    last = axes[(rows - 1) * cols :] or axes[-1:]
    last[(len(last) - 1) // 2].set_xlabel(text)


def _measure_ticks(ax: Any, ms: list[str], names: str) -> None:
    """Measures on the x axis, slanted when a narrow panel would overprint them."""
    crowded = _narrow(ax.get_figure()) and len(ms) > 2
    ax.set_xticks(
        np.arange(len(ms)),
        [display_name(m, names) for m in ms],
        rotation=40 if crowded else 0,
        ha="right" if crowded else "center",
    )


# which directions and measures a figure of the trust analysis draws


def _pct_measures(a: TrustAnalysis) -> list[str]:
    return [m for m in a.measures if not lower_is_better(m)]


def directions(a: TrustAnalysis) -> list[str]:
    """The directions the score figures draw: the report's, then the other paper directions (``-d both``)."""
    main = a.settings["direction"]
    return [main, *[d for d in a.paper if d != main]]


def _augmented(a: TrustAnalysis) -> bool:
    """The main labels are not the first (instance) set: values depend on the run's alignment."""
    return len(a.label_sets) > 1


def _budget_measures(a: TrustAnalysis) -> list[str]:
    have = {r["measure"] for r in a.budget}
    return [m for m in a.measures if m in have]


#: line style of each direction in the budget curves (``-d both``: both in one panel per measure)
_DIRECTION_STYLES: tuple[Any, ...] = ("-", "--", ":")


#: figures about captions as queries (length, similarity to training): t2v only, whatever ``-d``
CAPTION_FIGURES = (
    "fig-correctness-words",
    "fig-correctness-chara",
    "fig-positives",
    "fig-train-similarity",
    "fig-train-overlap",
)


def _by_direction(a: TrustAnalysis, main: Any, extra: dict[str, Any]) -> list[tuple[str, Any]]:
    """``[(direction, data)]``: the report's direction with ``main``, then each other paper
    direction that ``extra`` (a ``direction_*`` field of the analysis) holds (``-d both``)."""
    return [
        (d, main if d == a.settings["direction"] else extra[d])
        for d in directions(a)
        if d == a.settings["direction"] or d in extra
    ]
