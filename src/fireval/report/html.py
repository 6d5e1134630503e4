"""The self-contained HTML report: inline CSS, every figure embedded as base64 SVG (vector, text as
text; the one-column drawing on narrow screens), drawn in the same run colours as the paper figures.

Nothing is loaded from the network, so the file works offline and can be mailed around.
Header groups become ``colspan`` header rows; bold cells ``<strong>``; the significance dagger
a ``<sup>``. A figure with nothing to show is one sentence instead of an image.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from fireval.report.plots import Figure
from fireval.report.tables import Table, cell_parts

_TEMPLATES = Path(__file__).with_name("templates")


def _cells(t: Table) -> list[list[dict[str, Any]]]:
    out = []
    starts, i = {}, 0
    for label, n in t.sections:  # row sections (label sets, Δ): a bold heading row each
        starts[i] = label
        i += n
    blank = {"text": "", "num": False, "long": False, "bold": False, "mark": ""}
    for r, row in enumerate(t.rows):
        if starts.get(r):
            out.append([{**blank, "text": starts[r], "bold": True}] + [blank] * (len(t.columns) - 1))
        cells = []
        for v, (_, k) in zip(row, t.columns, strict=True):
            text, bold, mark = cell_parts(v, k)
            cells.append(
                {
                    "text": text,
                    "num": k not in ("text", "longtext"),
                    "long": k == "longtext",
                    "bold": bold,
                    "mark": mark,
                }
            )
        out.append(cells)
    return out


def render_html(
    tables: Sequence[Table],
    figures: Sequence[Figure],
    *,
    title: str = "fireval report",
    settings: dict[str, Any] | None = None,
    checks_html: str = "",
) -> str:
    """Render the report page (Jinja2 with autoescape: run names and captions are escaped)."""
    from fireval import __version__ as version

    env = Environment(loader=FileSystemLoader(str(_TEMPLATES)), autoescape=select_autoescape(["html"]))
    tpl = env.get_template("report.html")
    tdata = [
        {
            "key": t.key,
            "title": t.title,
            "note": t.note,
            "groups": t.groups,
            "header": [c for c, _ in t.columns],
            "cells": _cells(t),
        }
        for t in tables
    ]
    fdata = [
        {
            "key": f.key,
            "title": f.title,
            "empty": f.empty,
            "b64": base64.b64encode(f.svg).decode("ascii") if f.svg else "",
            "b64_narrow": base64.b64encode(f.svg_narrow).decode("ascii") if f.svg_narrow else "",
            "mime": "image/svg+xml",
            "caption": f.caption or f.title,
        }
        for f in figures
    ]
    return tpl.render(
        title=title,
        tables=tdata,
        figures=fdata,
        settings=settings or {},
        version=version,
        checks_html=checks_html,
    )
