"""The report's tables as LaTeX (``booktabs``) ``table`` environments, ready for a paper.

Needs ``\\usepackage{booktabs}``. Header groups (direction; original / augmented / Δ) become
``\\multicolumn`` cells with ``\\cmidrule(lr)`` under each group; bold cells are ``\\textbf``;
the significance dagger is ``\\textsuperscript{\\dag}``, the truncation mark
``\\textsuperscript{\\ddag}``, a value the input checks found not comparable a plain ``!``; long
text columns are ``p{...}`` paragraphs; row sections (the paper table's label sets and Δ) get an
italic heading row. Every table is set at 9 pt (``\\small``) or 8 pt (``\\footnotesize``) with
4 pt column gaps, in one column (``table``) when its estimated width (Computer Modern advance
widths, :func:`width_pt`) fits 3.3 in, else across both (``table*``); a table wider than the text
width even at 8 pt is scaled with ``\\resizebox`` (``\\usepackage{graphicx}``) only when that takes
no less than 90%, else set as is with a comment (choose fewer columns). All text is escaped
(:func:`escape`). :func:`write_latex_dir` writes one file per table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fireval.report.tables import MARK, PAIR_MARK, TRUNC_MARK, Table, cell_parts

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

#: the widths (pt) a table is fitted to: one column and the text width of a CVPR-style two-column
#: paper (3.3 in and 6.875 in at 72.27 pt/in)
COLUMN_PT = 3.3 * 72.27
PAGE_PT = 6.875 * 72.27
#: the smallest scale of ``\resizebox``: a table that needs less is split or set as is, never shrunk
MIN_SCALE = 0.9
#: tabcolsep (pt) of every table: two of these between columns
TABCOLSEP = 4.0
#: approximate Computer Modern advance widths in em (the width estimate behind the float choice)
_EM = {**dict.fromkeys("0123456789", 0.5), ".": 0.28, ",": 0.28, "+": 0.78, "-": 0.33, " ": 0.33, "@": 0.78}
#: the font size commands tried, largest first, with their size in pt in a 10 pt document
SIZES = ((r"\small", 9.0), (r"\footnotesize", 8.0))


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
    if kind not in ("text", "longtext") and text.startswith("-"):  # a minus sign, not a hyphen
        out = "$-$" + escape(text[1:])
    if bold:
        out = rf"\textbf{{{out}}}"
    bang = r"\textsuperscript{!}" if mark.endswith(PAIR_MARK) else ""  # not comparable: a superscript !
    return out + (escape(mark.removesuffix(PAIR_MARK)) if mark else "") + bang


def _spec(kind: str) -> str:
    if kind == "longtext":
        return r"p{0.32\linewidth}"
    return "l" if kind == "text" else "r"


def _text_em(text: str, bold: bool = False) -> float:
    """Estimated width of ``text`` in em (Computer Modern; bold about 15% wider)."""
    em = 0.0
    for ch in text:
        if ch in _EM:
            em += _EM[ch]
        elif ch in (MARK, TRUNC_MARK, "!"):
            em += 0.32  # a superscript
        elif ch.isupper():
            em += 0.72
        else:
            em += 0.5
    return em * (1.15 if bold else 1.0)


def width_pt(t: Table, size_pt: float) -> float:
    """Estimated natural width (pt) of ``t``'s tabular at font size ``size_pt`` (longtext columns: 30%
    of the text width)."""
    total = 0.0
    for i, (head, kind) in enumerate(t.columns):
        if kind == "longtext":
            total += 0.3 * PAGE_PT + 2 * TABCOLSEP
            continue
        cells = [_text_em(head)]
        for row in t.rows:
            text, bold, mark = cell_parts(row[i], kind)
            cells.append(_text_em(text, bold) + _text_em(mark))
        total += max(cells) * size_pt + 2 * TABCOLSEP
    return total


def layout(t: Table) -> tuple[str, str, float]:
    """``(float, size command, scale)`` for ``t``: the largest size (9 pt, else 8 pt) at which it fits one
    column (``table``), else the text width (``table*``); a table wider than the text width at 8 pt is
    scaled down to it only when that takes no less than :data:`MIN_SCALE` (scale 1: set as is)."""
    for env, room in (("table", COLUMN_PT), ("table*", PAGE_PT)):
        for cmd, pt in SIZES:
            if width_pt(t, pt) <= room:
                return env, cmd, 1.0
    scale = PAGE_PT / width_pt(t, SIZES[-1][1])
    return "table*", SIZES[-1][0], scale if scale >= MIN_SCALE else 1.0


def _section_row(label: str, ncols: int) -> str:
    return rf"\multicolumn{{{ncols}}}{{l}}{{\textit{{{escape(label)}}}}} \\"


def table_latex(t: Table, *, short: bool = True) -> str:
    r"""One table as a ``booktabs`` float labelled ``tab:fireval-<key>``.

    Row sections (``Table.sections``: label sets and Δ of the paper table) get an italic heading
    row under a ``\midrule``. With ``short`` the note is the table's short note when it has one
    (the paper table's, at most 40 words); the full note is in the Markdown and HTML reports.
    """
    spec = "".join(_spec(k) for _, k in t.columns)
    env, size, scale = layout(t)
    lines = [
        rf"\begin{{{env}}}[t]",
        r"\centering",
        rf"\caption{{{escape(t.title)}}}",
        rf"\label{{tab:fireval-{t.key}}}",
        size,
        rf"\setlength{{\tabcolsep}}{{{TABCOLSEP:g}pt}}",
    ]
    scaled = scale < 1.0
    if scaled:
        lines.append(r"\resizebox{\textwidth}{!}{%")
    elif width_pt(t, SIZES[-1][1]) > PAGE_PT:
        lines.append("% wider than the text width even at 8 pt: choose fewer columns (--columns, --tables)")
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
    starts = _section_starts(t)
    for i, row in enumerate(t.rows):
        if i in starts and starts[i]:
            if i:
                lines.append(r"\midrule")
            lines.append(_section_row(starts[i], len(t.columns)))
        lines.append(" & ".join(_cell(v, k) for v, (_, k) in zip(row, t.columns, strict=True)) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}" + ("}" if scaled else "")]
    note = str(t.meta.get("short_note") or t.note) if short else t.note
    if note:
        lines.append(rf"\par\smallskip{{\footnotesize {escape(note)}\par}}")
    lines.append(rf"\end{{{env}}}")
    return "\n".join(lines) + "\n"


def _section_starts(t: Table) -> dict[int, str]:
    """Row index -> label of the section that starts there."""
    out, i = {}, 0
    for label, n in t.sections:
        out[i] = label
        i += n
    return out


HEADER = "% generated by fireval; needs \\usepackage{booktabs} (and \\usepackage{graphicx} where a table is scaled)\n"


def render_latex(tables: Sequence[Table]) -> str:
    """All tables, one float each (needs ``\\usepackage{booktabs}``)."""
    return HEADER + "\n" + "\n".join(table_latex(t) for t in tables)


def write_latex_dir(tables: Sequence[Table], directory: str | Path) -> list[Path]:
    """One ``<key>.tex`` per table in ``directory`` (created), and ``tables.tex`` that inputs them all
    in report order; each file written atomically. Returns the paths written."""
    from fireval.atomic import atomic_write

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for t in tables:
        path = out / f"{t.key}.tex"
        with atomic_write(path, "w", encoding="utf-8") as fh:
            fh.write(HEADER + table_latex(t))
        written.append(path)
    index = out / "tables.tex"
    with atomic_write(index, "w", encoding="utf-8") as fh:
        fh.write(HEADER + "".join(f"\\input{{{p.stem}}}\n" for p in written))
    return [*written, index]


def latex_document(tables: Sequence[Table]) -> str:
    """A complete document around :func:`render_latex` (used to check that the tables compile)."""
    return (
        "\\documentclass[twocolumn]{article}\n\\usepackage[T1]{fontenc}\n\\usepackage[utf8]{inputenc}\n"
        "\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\begin{document}\n"
        + render_latex(tables)
        + "\\end{document}\n"
    )
