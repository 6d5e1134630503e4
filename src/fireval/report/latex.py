"""The report's tables as LaTeX (``booktabs``) ``table`` environments, ready for a paper.

Needs ``\\usepackage{booktabs}``. Header groups (direction; original / augmented / Δ) become
``\\multicolumn`` cells with ``\\cmidrule(lr)`` under each group; bold cells are ``\\textbf``;
the significance dagger is ``\\textsuperscript{\\dag}``, the truncation mark
``\\textsuperscript{\\ddag}``; long text columns are ``p{...}``
paragraphs. Tables wider than a column (more than 8 columns) are ``table*`` floats, and a table
wider than the page (estimated from its widest cells, :data:`PAGE_CHARS`) is scaled to the text
width with ``\\resizebox`` (``\\usepackage{graphicx}``). All text is escaped (:func:`escape`).
"""

from __future__ import annotations

from collections.abc import Sequence

from fireval.report.tables import MARK, TRUNC_MARK, Table, cell_parts

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "Δ": r"$\Delta$",
    "−": "--",
    "–": "--",
    "—": "---",
    "…": r"\ldots{}",
    "ρ": r"$\rho$",
    "τ": r"$\tau$",
    "α": r"$\alpha$",
    "∞": r"$\infty$",
    "↓": r"$\downarrow$",
    "↑": r"$\uparrow$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "<": r"$<$",
    ">": r"$>$",
    "|": r"$|$",
    MARK: r"\textsuperscript{\dag}",
    TRUNC_MARK: r"\textsuperscript{\ddag}",
}

#: columns above which a table spans both columns of a two-column paper (``table*``)
WIDE = 8
#: estimated characters (widest cell per column + padding) that fit one column of a two-column paper
COLUMN_CHARS = 48
#: estimated characters that fit the full text width (``table*``); wider tables are scaled down
PAGE_CHARS = 2 * COLUMN_CHARS + 8


def escape(text: str) -> str:
    """Escape LaTeX special characters (and the Unicode symbols the report uses).

    A span between backticks (a command name in a note) becomes ``texttt``. Other non-ASCII
    characters are kept (pdflatex with ``inputenc`` utf8, the default since 2018, prints Latin
    accents).
    """
    parts = text.split("`")
    if len(parts) % 2 == 0:  # unbalanced backticks: no code spans, escape them all
        parts = [text]
    out = []
    for i, part in enumerate(parts):
        esc = "".join(_SPECIAL.get(ch, ch) for ch in part)
        out.append(rf"\texttt{{{esc}}}" if i % 2 else esc)  # `code` in notes -> \texttt
    return "".join(out)


def _cell(value: object, kind: str) -> str:
    text, bold, mark = cell_parts(value, kind)
    out = escape(text)
    if bold:
        out = rf"\textbf{{{out}}}"
    return out + (escape(mark) if mark else "")


def _spec(kind: str) -> str:
    if kind == "longtext":
        return r"p{0.32\linewidth}"
    return "l" if kind == "text" else "r"


def _chars(t: Table) -> int:
    """Estimated width in characters: the widest cell of each column plus two of padding."""
    total = 0
    for i, (head, kind) in enumerate(t.columns):
        if kind == "longtext":
            total += 30
            continue
        cells = [len(cell_parts(row[i], kind)[0]) for row in t.rows]
        total += max([len(head), *cells]) + 2
    return total


def table_latex(t: Table) -> str:
    """One table as a ``booktabs`` float labelled ``tab:fireval-<key>``."""
    spec = "".join(_spec(k) for _, k in t.columns)
    env = "table*" if len(t.columns) > WIDE or _chars(t) > COLUMN_CHARS else "table"
    lines = [
        rf"\begin{{{env}}}[t]",
        r"\centering",
        rf"\caption{{{escape(t.title)}}}",
        rf"\label{{tab:fireval-{t.key}}}",
    ]
    if len(t.columns) > WIDE:
        lines.append(r"\setlength{\tabcolsep}{3pt}")
    scaled = _chars(t) > PAGE_CHARS  # wider than the page: scale to the text width (graphicx)
    if scaled:
        lines.append(r"\resizebox{\textwidth}{!}{%")
    lines += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
    for grow in t.groups:
        cells, rules, col = [], [], 1
        for label, span in grow:
            if label:
                cells.append(rf"\multicolumn{{{span}}}{{c}}{{{escape(label)}}}")
                rules.append(rf"\cmidrule(lr){{{col}-{col + span - 1}}}")
            else:
                cells.extend([""] * span)
            col += span
        lines.append(" & ".join(cells) + r" \\")
        if rules:
            lines.append(" ".join(rules))
    lines += [" & ".join(escape(c) for c, _ in t.columns) + r" \\", r"\midrule"]
    for row in t.rows:
        lines.append(" & ".join(_cell(v, k) for v, (_, k) in zip(row, t.columns, strict=True)) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}" + ("}" if scaled else "")]
    if t.note:
        lines.append(rf"\par\smallskip{{\footnotesize {escape(t.note)}\par}}")
    lines.append(rf"\end{{{env}}}")
    return "\n".join(lines) + "\n"


def render_latex(tables: Sequence[Table]) -> str:
    """All tables, one float each (needs ``\\usepackage{booktabs}``)."""
    return (
        "% generated by fireval report; needs \\usepackage{booktabs} and \\usepackage{graphicx}\n\n"
        + "\n".join(table_latex(t) for t in tables)
    )


def latex_document(tables: Sequence[Table]) -> str:
    """A complete document around :func:`render_latex` (used to check that the tables compile)."""
    return (
        "\\documentclass[twocolumn]{article}\n\\usepackage[T1]{fontenc}\n\\usepackage[utf8]{inputenc}\n"
        "\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\begin{document}\n"
        + render_latex(tables)
        + "\\end{document}\n"
    )
