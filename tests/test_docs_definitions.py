"""Every measure fireval accepts and every input check it runs has a definition in the docs.

A newcomer looks a name up in docs/metrics.md (the measures table and "Aggregates") or in
docs/checks.md (the table at the top); a measure or check added to the code without a row there
fails here. The names come from the code (``MEASURE_NAMES``, ``CHECKS``), not from a list kept
in this test.
"""

from __future__ import annotations

import re
from pathlib import Path

from fireval.checks import CHECKS
from fireval.metrics.measures import _CUT_REQUIRED, MEASURE_NAMES

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _table_names(text: str) -> set[str]:
    """The backticked names in the first column of every Markdown table row."""
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            names.update(re.findall(r"`([^`]+)`", first))
    return names


def test_every_measure_has_a_definition_row() -> None:
    text = (DOCS / "metrics.md").read_text(encoding="utf-8")
    rows = {re.sub(r"@(K|R)$", "", n) for n in _table_names(text)}
    aggregates = text.split("## Aggregates", 1)[1].split("\n## ", 1)[0]
    missing = []
    for name in MEASURE_NAMES:
        if name in rows:
            continue
        if name not in _CUT_REQUIRED and f"`{name}`" in aggregates:  # meanR, geoC
            continue
        missing.append(name)
    assert not missing, f"docs/metrics.md defines no {missing} (add a row to the measures table)"


def test_every_check_has_a_definition_row() -> None:
    rows = _table_names((DOCS / "checks.md").read_text(encoding="utf-8"))
    missing = [c.name for c in CHECKS if c.name not in rows]
    assert not missing, f"docs/checks.md defines no {missing} (add a row to its table)"


def test_checks_carry_name_description_and_rationale() -> None:
    for c in CHECKS:
        assert c.name and c.description and c.rationale, c
