"""Write the trust report (HTML, Markdown, LaTeX) for an analysis, atomically."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fireval.analysis.trust import TrustAnalysis
from fireval.atomic import atomic_write
from fireval.report.html import render_html
from fireval.report.latex import render_latex
from fireval.report.markdown import render_markdown
from fireval.report.plots import Figure, build_figures
from fireval.report.tables import Table, build_tables


@dataclass
class Rendered:
    """The report's tables and figures and the three documents rendered from them."""

    tables: list[Table]
    figures: list[Figure]
    html: str
    markdown: str
    latex: str


def render(analysis: TrustAnalysis, *, title: str = "fireval report", figures: bool = True) -> Rendered:
    """Tables, figures and the three documents for ``analysis``."""
    tables = build_tables(analysis)
    figs = build_figures(analysis) if figures else []
    settings = {
        "collection": f"{analysis.settings['collection']} ({analysis.settings['n_captions']} captions, "
        f"{analysis.settings['n_videos']} videos)",
        "runs": ", ".join(analysis.runs),
        "label sets": ", ".join(analysis.label_sets) + f" (main: {analysis.main_labels})",
        "direction": analysis.settings["direction"],
        "measures": ", ".join(analysis.measures),
        "bootstrap": f"{analysis.settings['n_resamples']} resamples, seed {analysis.settings['seed']}",
    }
    return Rendered(
        tables,
        figs,
        render_html(tables, figs, title=title, settings=settings),
        render_markdown(tables, title),
        render_latex(tables),
    )


def write_report(
    analysis: TrustAnalysis,
    html: str | Path | None = None,
    *,
    markdown: str | Path | None = None,
    latex: str | Path | None = None,
    title: str = "fireval report",
) -> Rendered:
    """Render and write the requested files (each written atomically)."""
    out = render(analysis, title=title, figures=html is not None)
    for path, text in ((html, out.html), (markdown, out.markdown), (latex, out.latex)):
        if path is not None:
            with atomic_write(path, "w", encoding="utf-8") as fh:
                fh.write(text)
    return out
