"""The report's tables as GitHub-flavoured Markdown.

Markdown has one header row, so header groups (direction; original / augmented / Δ) are
joined into each column name (``t2v augmented R@1``). Bold cells are ``**x**``; the
significance marker stays a ``†`` after the value. Row sections (the paper table's label sets and Δ)
get a bold heading row.
"""

from __future__ import annotations

from collections.abc import Sequence

from fireval.report.tables import Table, cell_parts


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _headers(t: Table) -> list[str]:
    names = [c for c, _ in t.columns]
    prefix = [""] * len(names)
    for grow in t.groups:
        i = 0
        for label, span in grow:
            for j in range(i, i + span):
                prefix[j] = f"{prefix[j]} {label}".strip()
            i += span
    return [f"{p} {n}".strip() for p, n in zip(prefix, names, strict=True)]


def _fmt(value: object, kind: str) -> str:
    text, bold, mark = cell_parts(value, kind)
    text = _cell(text)
    return (f"**{text}**" if bold else text) + mark


def table_markdown(t: Table) -> str:
    """One table as a Markdown heading, pipe table and italic note."""
    head = "| " + " | ".join(_cell(c) for c in _headers(t)) + " |"
    align = "|" + "|".join(":---" if k in ("text", "longtext") else "---:" for _, k in t.columns) + "|"
    starts = {}
    i = 0
    for label, n in t.sections:  # row sections (label sets, Δ): a bold heading row each
        starts[i] = label
        i += n
    body = []
    for i, row in enumerate(t.rows):
        if starts.get(i):
            body.append("| " + " | ".join([f"**{_cell(starts[i])}**"] + [""] * (len(t.columns) - 1)) + " |")
        body.append("| " + " | ".join(_fmt(v, k) for v, (_, k) in zip(row, t.columns, strict=True)) + " |")
    parts = [f"### {t.title}", "", head, align, *body]
    if t.note:
        parts += ["", f"_{t.note}_"]
    return "\n".join(parts) + "\n"


def render_markdown(tables: Sequence[Table], title: str = "fireval report") -> str:
    """All tables as one Markdown document."""
    return f"# {title}\n\n" + "\n".join(table_markdown(t) for t in tables)
