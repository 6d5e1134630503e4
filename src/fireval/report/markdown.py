"""The report's tables as GitHub-flavoured Markdown."""

from __future__ import annotations

from collections.abc import Sequence

from fireval.report.tables import Table, fmt


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table_markdown(t: Table) -> str:
    """One table as a Markdown heading, pipe table and italic note."""
    head = "| " + " | ".join(_cell(c) for c, _ in t.columns) + " |"
    align = "|" + "|".join(":---" if k == "text" else "---:" for _, k in t.columns) + "|"
    body = [
        "| " + " | ".join(_cell(fmt(v, k)) for v, (_, k) in zip(row, t.columns, strict=True)) + " |"
        for row in t.rows
    ]
    parts = [f"### {t.title}", "", head, align, *body]
    if t.note:
        parts += ["", f"_{t.note}_"]
    return "\n".join(parts) + "\n"


def render_markdown(tables: Sequence[Table], title: str = "fireval report") -> str:
    """All tables as one Markdown document."""
    return f"# {title}\n\n" + "\n".join(table_markdown(t) for t in tables)
