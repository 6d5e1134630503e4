"""Write the trust report (HTML, Markdown, LaTeX, figure files) for an analysis, atomically."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fireval.analysis.trust import TrustAnalysis
from fireval.atomic import atomic_write
from fireval.checks import ChecksReport, truncated_measures
from fireval.core.units import UNITS_PRINTED
from fireval.report.checks_section import checks_html, checks_markdown
from fireval.report.html import render_html
from fireval.report.latex import render_latex, write_latex_dir
from fireval.report.markdown import render_markdown
from fireval.report.plots import Figure, build_figures, write_figures
from fireval.report.tables import Columns, Table, build_tables


@dataclass
class Rendered:
    """The report's tables and figures and the three documents rendered from them."""

    tables: list[Table]
    figures: list[Figure]
    html: str
    markdown: str
    latex: str
    figure_files: list[Path] = field(default_factory=list)
    latex_files: list[Path] = field(default_factory=list)


#: the table names of ``--tables`` (``correctness`` picks every caption-length breakdown)
TABLE_NAMES = (
    "label_sources",
    "paper",
    "intervals",
    "significance",
    "overlap",
    "judged",
    "pool_bias",
    "correctness",
    "train_overlap",
    "train_similarity",
    "caption_examples",
    "budget",
)


def check_tables(spec: str, option: str = "--tables") -> list[str]:
    """``--tables``: comma-separated names of :data:`TABLE_NAMES` (one-line error otherwise)."""
    from fireval.core.errors import FirevalError

    names = [x.strip() for x in spec.split(",") if x.strip()]
    bad = [n for n in names if n not in TABLE_NAMES]
    if bad or not names:
        raise FirevalError(f"{option}: expected names among {', '.join(TABLE_NAMES)}, got {spec!r}")
    return names


def select_tables(tables: Sequence[Table], keep: Sequence[str] | None) -> list[Table]:
    """The tables named in ``keep`` (:data:`TABLE_NAMES`), in report order; None: all."""
    if keep is None:
        return list(tables)
    return [t for t in tables if t.key in keep or ("correctness" in keep and t.key.startswith("correctness"))]


def render(
    analysis: TrustAnalysis,
    *,
    title: str = "fireval report",
    figures: bool = True,
    png: bool = True,
    names: str = "ir",
    checks: ChecksReport | None = None,
    columns: Columns | None = None,
    keep: Sequence[str] | None = None,
) -> Rendered:
    """Tables, figures and the three documents for ``analysis`` (``names``: ``tvr`` or ``ir``).

    With ``checks`` the HTML and Markdown documents open with the "Input checks" section, and
    the values the checks find to depend on a truncated run's tail
    (:meth:`fireval.checks.ChecksReport.marked_measures`) or on a broken alignment
    (:meth:`fireval.checks.ChecksReport.not_comparable`) are marked in the tables of all three.
    ``columns``: the paper table's measures and groups; ``keep``: the tables of the Markdown and
    LaTeX documents (:func:`select_tables`; the HTML report has them all).
    """
    pairs = checks.misaligned_pairs() if checks is not None else None
    tables = build_tables(
        analysis,
        names,
        marks=truncation_marks(analysis, checks),
        pairs=pairs,
        unaligned=checks.unaligned_runs() if checks is not None else frozenset(),
        columns=columns,
    )
    from fireval.report.fire_tables import build_fire_tables

    tables += build_fire_tables(analysis, names)
    chosen = select_tables(tables, keep) if keep is not None else tables
    figs = (
        build_figures(
            analysis,
            names,
            png=png,
            unaligned=checks.unaligned_runs() if checks is not None else frozenset(),
            misaligned_pairs=pairs,
        )
        if figures
        else []
    )
    if figures:
        from fireval.report.fire_figures import build_fire_figures

        figs += build_fire_figures(analysis, names, png=png)
    settings = {
        "collection": f"{analysis.settings['collection']} ({analysis.settings['n_captions']} captions, "
        f"{analysis.settings['n_videos']} videos)",
        "runs": ", ".join(analysis.runs),
        "label sets": ", ".join(analysis.label_sets) + f" (main: {analysis.main_labels})",
        "direction": analysis.settings["direction"]
        + (f" (paper table: {', '.join(analysis.paper)})" if len(analysis.paper) > 1 else ""),
        "measures": ", ".join(analysis.measures) + (" (names: TVR, R@K = C@K)" if names == "tvr" else ""),
        "units": UNITS_PRINTED,
        "bootstrap": f"{analysis.settings['n_resamples']} resamples, seed {analysis.settings['seed']}",
    }
    if analysis.settings.get("min_grade") is not None:  # --min-grade (trec_eval's -l)
        settings["relevance"] = (
            f"grade ≥ {analysis.settings['min_grade']:g} for the binary measures (nDCG keeps the grades)"
        )
    return Rendered(
        tables,
        figs,
        render_html(tables, figs, title=title, settings=settings, checks_html=checks_html(checks))
        if png
        else "",
        _with_checks(render_markdown(chosen, title), checks),
        render_latex(chosen),
    )


def truncation_marks(analysis: TrustAnalysis, checks: ChecksReport | None) -> dict[str, dict[str, list[str]]]:
    """Direction → run → the analysis' measures that are expectations over the run's truncated tail.

    Each direction uses its own cut ``k`` from the truncation check's figures (a top-50-per-row
    matrix is cut differently along its columns); a direction the check did not scan falls back
    to :meth:`fireval.checks.ChecksReport.marked_measures`.
    """
    if checks is None:
        return {}
    dirs = list(dict.fromkeys([analysis.settings["direction"], *analysis.paper]))
    out: dict[str, dict[str, list[str]]] = {d: {} for d in dirs}
    for r in analysis.runs:
        res = checks.runs.get(r, {}).get("truncation")
        per_dir = res.figures.get("directions", {}) if res is not None else {}
        for d in dirs:
            f = per_dir.get(d)
            if f is None:
                out[d][r] = checks.marked_measures(r, analysis.measures)
            elif f.get("truncated"):
                out[d][r] = truncated_measures(analysis.measures, f["k"], f["share_relevant_in_cut"])
            else:
                out[d][r] = []
    return out


def write_report(
    analysis: TrustAnalysis,
    html: str | Path | None = None,
    *,
    markdown: str | Path | None = None,
    latex: str | Path | None = None,
    figures: str | Path | None = None,
    title: str = "fireval report",
    names: str = "ir",
    checks: ChecksReport | None = None,
    columns: Columns | None = None,
    keep: Sequence[str] | None = None,
    latex_dir: str | Path | None = None,
) -> Rendered:
    """Render and write the requested files (each written atomically).

    ``figures``: a directory for every figure as PDF and SVG at one- and two-column width
    (:func:`fireval.report.plots.write_figures`). ``latex_dir``: a directory for one ``.tex`` file
    per table (:func:`fireval.report.latex.write_latex_dir`).
    """
    out = render(
        analysis,
        title=title,
        figures=html is not None or figures is not None,
        png=html is not None,
        names=names,
        checks=checks,
        columns=columns,
        keep=keep,
    )
    if latex_dir is not None:
        out.latex_files = write_latex_dir(select_tables(out.tables, keep) if keep else out.tables, latex_dir)
    for path, text in ((html, out.html), (markdown, out.markdown), (latex, out.latex)):
        if path is not None:
            with atomic_write(path, "w", encoding="utf-8") as fh:
                fh.write(text)
    if figures is not None:
        out.figure_files = write_figures(out.figures, figures)
    return out


def _with_checks(markdown: str, checks: ChecksReport | None) -> str:
    """``markdown`` with the "Input checks" section right after its title line."""
    section = checks_markdown(checks)
    if not section:
        return markdown
    head, sep, rest = markdown.partition("\n\n")
    return f"{head}\n\n{section}\n{rest}" if sep else f"{markdown}\n\n{section}"
