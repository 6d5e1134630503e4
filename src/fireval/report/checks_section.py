"""The reports' opening "Input checks" section (HTML and Markdown), from a ChecksReport.

One row per run and check and per pair of runs (status and the check's one-line finding), then
the pairs whose per-query comparisons, overlap and pooling are meaningless, with the reason.
All run names and messages are escaped (HTML autoescape; Markdown pipes).
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from fireval.checks import ChecksReport

_NOTE = (
    "Checked before any number below: alignment of each run with the collection's text, agreement "
    "between runs beyond the instance positives, truncation and orientation (docs/checks.md)."
)

_HTML = """<section id="input-checks" class="checks-section">
<h2>Input checks</h2>
<p class="note">{{ note }}</p>
<div class="table-wrap"><table class="report-table" data-key="input-checks">
<thead><tr><th>run</th><th>check</th><th>status</th><th>finding</th></tr></thead>
<tbody>{% for r in rows %}<tr class="check-{{ r.status }}"><td>{{ r.subject }}</td><td>{{ r.check }}</td>
<td><strong>{{ r.status }}</strong></td><td>{{ r.message }}</td></tr>
{% endfor %}</tbody></table></div>
{% if pairs %}<p><strong>Not comparable per query</strong> (significance, overlap, RBO and pooling of these pairs are
meaningless):</p><ul>{% for a, b, why in pairs %}<li>{{ a }} vs {{ b }}: {{ why }}</li>{% endfor %}</ul>{% endif %}
</section>
"""


def check_rows(report: ChecksReport) -> list[dict[str, Any]]:
    """One dict per run check and pair: ``subject``, ``check``, ``status``, ``message``."""
    rows = [
        {"subject": name, "check": r.check, "status": r.status.value, "message": r.message}
        for name, res in report.runs.items()
        for r in res.values()
    ]
    rows += [
        {
            "subject": f"{p.a} vs {p.b}",
            "check": "agreement",
            "status": p.result.status.value,
            "message": p.result.message,
        }
        for p in report.pairs
    ]
    return rows


def checks_html(report: ChecksReport | None) -> Markup:
    """The section as HTML (empty when the checks were skipped)."""
    if report is None:
        return Markup("")
    tpl = Environment(autoescape=True).from_string(_HTML)
    pairs = [(a, b, why) for (a, b), why in report.misaligned_pairs().items()]
    return Markup(tpl.render(rows=check_rows(report), pairs=pairs, note=_NOTE))


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def checks_markdown(report: ChecksReport | None) -> str:
    """The section as Markdown (empty when the checks were skipped)."""
    if report is None:
        return ""
    lines = [
        "## Input checks",
        "",
        f"_{_NOTE}_",
        "",
        "| run | check | status | finding |",
        "|:---|:---|:---|:---|",
    ]
    lines += [
        f"| {_md(r['subject'])} | {r['check']} | **{r['status']}** | {_md(r['message'])} |"
        for r in check_rows(report)
    ]
    bad = report.misaligned_pairs()
    if bad:
        lines += [
            "",
            "Not comparable per query (significance, overlap, RBO and pooling of these pairs are meaningless):",
            "",
        ]
        lines += [f"- {_md(a)} vs {_md(b)}: {_md(why)}" for (a, b), why in bad.items()]
    return "\n".join(lines) + "\n"
