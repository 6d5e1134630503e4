"""The report's "Estimated corrected scores" section (``fireval report --plan``), HTML and Markdown.

One row per run, direction and measure of :func:`fireval.estimation.workflow.estimate`: the
estimate, its 95% CI, the exact bounds, n, pairs judged / planned, the method; then the paired
differences. Values in percent (MnR in ranks). Text is escaped (HTML autoescape; Markdown pipes).
The section is added to the written documents (:func:`add_to_files`): before the HTML's
``</body>`` and at the end of the Markdown, each file rewritten atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment

from fireval.atomic import atomic_write
from fireval.estimation.estimate import value_text

TITLE = "Estimated corrected scores"
NOTE = (
    "Design-based estimates under the judging plans given (--plan): the value the labels decide where "
    "they decide it (CI of zero width), a stratified Horvitz-Thompson estimate with its 95% CI under a "
    "plan's sample, else only the exact bounds over every labelling of the unjudged pairs. Percent; MnR in "
    "ranks. Definitions and measured coverage: docs/estimation.md."
)

_HTML = """<section id="estimated-corrected-scores" class="table-section">
<h2>{{ title }}</h2>
<div class="table-wrap"><table class="report-table" data-key="estimates">
<thead><tr>{% for h in head %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in rows %}<tr>{% for c in row %}<td>{{ c }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div>
{% if diffs %}<h3>Paired differences</h3>
<div class="table-wrap"><table class="report-table" data-key="estimate-differences">
<thead><tr>{% for h in dhead %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in diffs %}<tr>{% for c in row %}<td>{{ c }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div>{% endif %}
<p class="note">{{ note }}</p>
</section>
"""

HEAD = [
    "run",
    "direction",
    "measure",
    "estimate",
    "95% CI",
    "lower",
    "upper",
    "n",
    "judged / planned",
    "method",
]
DHEAD = ["A - B", "direction", "measure", "estimate", "95% CI", "bounds", "method"]


def rows(
    records: list[dict[str, Any]], diffs: list[dict[str, Any]]
) -> tuple[list[list[str]], list[list[str]]]:
    """Table cells of the records and of the differences."""
    out = [
        [
            str(r["run"]),
            str(r["direction"]),
            str(r["measure"]),
            value_text(r["estimate"], r["measure"]),
            f"[{value_text(r['ci_low'], r['measure'])}, {value_text(r['ci_high'], r['measure'])}]",
            value_text(r["lower"], r["measure"]),
            value_text(r["upper"], r["measure"]),
            str(r["n"]),
            f"{r['judged']} / {r['sampled']}",
            str(r["method"]),
        ]
        for r in records
    ]
    dout = [
        [
            f"{d['run_a']} - {d['run_b']}",
            str(d["direction"]),
            str(d["measure"]),
            value_text(d["estimate"], d["measure"]),
            f"[{value_text(d['ci_low'], d['measure'])}, {value_text(d['ci_high'], d['measure'])}]",
            f"[{value_text(d['lower'], d['measure'])}, {value_text(d['upper'], d['measure'])}]",
            str(d["method"]),
        ]
        for d in diffs
    ]
    return out, dout


def html(records: list[dict[str, Any]], diffs: list[dict[str, Any]]) -> str:
    cells, dcells = rows(records, diffs)
    tpl = Environment(autoescape=True).from_string(_HTML)
    return tpl.render(title=TITLE, head=HEAD, rows=cells, dhead=DHEAD, diffs=dcells, note=NOTE)


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def markdown(records: list[dict[str, Any]], diffs: list[dict[str, Any]]) -> str:
    cells, dcells = rows(records, diffs)
    lines = [f"## {TITLE}", "", _md_row(HEAD), "|" + "---|" * len(HEAD)]
    lines += [_md_row(c) for c in cells]
    if dcells:
        lines += ["", "### Paired differences", "", _md_row(DHEAD), "|" + "---|" * len(DHEAD)]
        lines += [_md_row(c) for c in dcells]
    lines += ["", f"_{NOTE}_", ""]
    return "\n".join(lines)


def add_to_files(
    records: list[dict[str, Any]],
    diffs: list[dict[str, Any]],
    *,
    html_path: str | Path | None = None,
    markdown_path: str | Path | None = None,
) -> None:
    """Add the section to a written HTML report (before ``</body>``) and Markdown (at the end)."""
    if html_path is not None:
        text = Path(html_path).read_text(encoding="utf-8")
        head, sep, tail = text.rpartition("</body>")
        new = f"{head}{html(records, diffs)}{sep}{tail}" if sep else text + html(records, diffs)
        with atomic_write(html_path, "w", encoding="utf-8") as fh:
            fh.write(new)
    if markdown_path is not None:
        text = Path(markdown_path).read_text(encoding="utf-8")
        with atomic_write(markdown_path, "w", encoding="utf-8") as fh:
            fh.write(text.rstrip("\n") + "\n\n" + markdown(records, diffs))
