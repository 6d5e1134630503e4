"""The self-contained HTML report: inline CSS, every figure embedded as a base64 PNG.

Nothing is loaded from the network, so the file works offline and can be mailed around.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from fireval.report.plots import Figure
from fireval.report.tables import Table, fmt

_TEMPLATES = Path(__file__).with_name("templates")


def render_html(
    tables: Sequence[Table],
    figures: Sequence[Figure],
    *,
    title: str = "fireval report",
    settings: dict[str, Any] | None = None,
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
            "header": [c for c, _ in t.columns],
            "cells": [
                [(fmt(v, k), k != "text") for v, (_, k) in zip(row, t.columns, strict=True)] for row in t.rows
            ],
        }
        for t in tables
    ]
    fdata = [
        {"key": f.key, "title": f.title, "b64": base64.b64encode(f.png).decode("ascii")} for f in figures
    ]
    return tpl.render(title=title, tables=tdata, figures=fdata, settings=settings or {}, version=version)
