"""The report's format-neutral table model: :class:`Cell`, :class:`Table`, cell formatting, marks and notes.

A :class:`Table` has columns with a kind and raw cell values; the HTML, Markdown, LaTeX and
terminal writers only differ in how they print a cell (:func:`cell_parts`, :func:`fmt`). Scores
are printed as percentages with one decimal, the rank measures MdR and MnR as ranks. The marks:
``†`` significantly worse than the best (:data:`MARK`), ``‡`` depends on a truncated run's tail
(:data:`TRUNC_MARK`), ``!`` not comparable per the input checks (:data:`PAIR_MARK`), each with the
footnote that explains it (:func:`marks_note`, :func:`pairs_note`, :func:`unaligned_note`,
:func:`unaligned_labels_note`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fireval.analysis.paper import lower_is_better
from fireval.metrics.measures import display_name

# column kinds: text | longtext (wrapped text) | score (x100, 1 dp) | diff (signed score) | rank (1 dp)
# | rankdiff (signed rank) | p | int | count (int, or 1 dp when fractional) | num (3 dp)

#: the dagger that marks values significantly worse than the best in their column
MARK = "†"
#: the double dagger that marks values depending on a truncated run's tail
TRUNC_MARK = "‡"


@dataclass
class Cell:
    """A cell with its own kind (e.g. a rank in a column of scores), bold flag and marker."""

    value: Any
    kind: str
    bold: bool = False
    mark: str = ""


@dataclass
class Table:
    """A format-neutral report table: ``columns`` are ``(header, kind)``, rows hold raw values."""

    key: str
    title: str
    columns: list[tuple[str, str]]
    rows: list[list[Any]]
    note: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    #: header rows above the column names: ``[(label, span), ...]`` per row, spans summing to the columns
    groups: list[list[tuple[str, int]]] = field(default_factory=list)
    #: sections of rows: ``[(label, rows), ...]`` in order, rows summing to ``len(rows)`` (empty: one
    #: unnamed section); LaTeX prints each label as a heading row, Markdown and HTML as a bold row
    sections: list[tuple[str, int]] = field(default_factory=list)


def cell_parts(value: Any, kind: str) -> tuple[str, bool, str]:
    """``(text, bold, mark)`` of one cell (a :class:`Cell` carries its own kind, bold and mark)."""
    if isinstance(value, Cell):
        return fmt(value.value, value.kind), value.bold, value.mark
    return fmt(value, kind), False, ""


def fmt(value: Any, kind: str) -> str:
    """One cell as text (bold and marker left out: see :func:`cell_parts`)."""
    if isinstance(value, Cell):
        return fmt(value.value, value.kind) + value.mark
    if value is None:
        return "–"
    if kind in ("text", "longtext"):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    from fireval.core.units import fixed  # never "-0.0" (docs/formats.md#units)

    if kind == "score":
        return fixed(100 * value)
    if kind == "diff":
        return fixed(100 * value, sign=True)
    if kind == "rank":
        return fixed(value)
    if kind == "rankdiff":
        return fixed(value, sign=True)
    if kind == "p":
        return "<0.0001" if value < 1e-4 else f"{value:.4f}"
    if kind == "int":
        return str(int(value))
    if kind == "count":  # an expected count: an integer without ties, else one decimal
        return str(int(value)) if float(value).is_integer() else fixed(value)
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return fixed(value, 3)


def _kind(measure: str, diff: bool = False) -> str:
    """Cell kind of a measure's value: ranks for MdR/MnR, percentages otherwise."""
    if lower_is_better(measure):
        return "rankdiff" if diff else "rank"
    return "diff" if diff else "score"


def _mcell(measure: str, value: Any, diff: bool = False) -> Cell:
    return Cell(value, _kind(measure, diff))


def measure_header(measure: str, names: str = "ir") -> str:
    """A measure's column name, with ``↓`` when lower is better (MdR, MnR)."""
    return display_name(measure, names) + ("↓" if lower_is_better(measure) else "")


def direction_columns(
    dirs: Sequence[str], measures: Sequence[str], names: str = "ir"
) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    """``(columns, top)`` of a runs × (direction, measure) table: a ``run`` column, then one
    score column per measure under each direction's spanning header."""
    cols: list[tuple[str, str]] = [("run", "text")]
    top: list[tuple[str, int]] = [("", 1)]
    for d in dirs:
        top.append((d, len(measures)))
        cols += [(measure_header(m, names), "score") for m in measures]
    return cols, top


UNITS_NOTE = "Values in % (0–100); MdR and MnR are ranks (lower is better, ↓)."


Marks = Mapping[str, Mapping[str, Sequence[str]]]  # direction -> run -> measures
Pairs = Mapping[tuple[str, str], str]  # (run a, run b) -> why their per-query comparison is meaningless

#: the marker of a run pair that the input checks found not comparable per query
PAIR_MARK = "!"


def _not_comparable(pairs: Pairs | None, a: str, b: str) -> str | None:
    """Why runs ``a`` and ``b`` are not comparable per query (either order), or None."""
    if not pairs:
        return None
    return pairs.get((a, b), pairs.get((b, a)))


def pairs_note(pairs: Pairs | None, among: Sequence[tuple[str, str]]) -> str:
    """The footnote naming the pairs of ``among`` that are not comparable per query (or "")."""
    bad = [f"{a} vs {b}" for a, b in among if _not_comparable(pairs, a, b)]
    if not bad:
        return ""
    return (
        f" {PAIR_MARK}: not comparable per query ({', '.join(bad)}): the input checks found these runs in "
        "different row/column orders, so their per-query comparison pairs different queries and is meaningless."
    )


def unaligned_note(bad: Sequence[str]) -> str:
    """The footnote naming the runs ``bad`` that fail the alignment check (or "")."""
    if not bad:
        return ""
    return (
        f" {PAIR_MARK}: failed the alignment check ({', '.join(bad)}): rows or columns probably in another "
        "order than the collection, so these values are filed under the wrong captions and this breakdown "
        "is meaningless for them."
    )


def unaligned_labels_note(bad: Sequence[str]) -> str:
    """The footnote of values under labels beyond the instance positives of runs failing the
    alignment check (or "")."""
    if not bad:
        return ""
    return (
        f" {PAIR_MARK}: {', '.join(bad)} failed the alignment check (rows or columns probably in another "
        "order than the collection): labels beyond the instance positives land on the wrong pairs, so "
        "these values are not comparable."
    )


def marks_note(marks: Marks | None, names: str = "ir", skip: Sequence[str] = ()) -> str:
    """The footnote of the truncation marks, naming the runs, directions and measures marked (or "")."""
    marked = [
        (d, r, [m for m in ms if m not in skip])
        for d, by_run in (marks or {}).items()
        for r, ms in by_run.items()
        if [m for m in ms if m not in skip]
    ]
    if not marked:
        return ""
    what = "; ".join(f"{r} ({d}): {', '.join(display_name(m, names) for m in ms)}" for d, r, ms in marked)
    return (
        f" {TRUNC_MARK}: depends on a truncated run's tail (the run ranks only its top k): an expectation "
        f"over the tail's undefined order where the tail is a tie, a lower bound where it is unretrieved "
        f"(-inf, ranked lists: documents there count as misses); see the input checks / `fireval check` — {what}."
    )


def _marked(marks: Marks | None, direction: str, run: str, measure: str) -> bool:
    return measure in (marks or {}).get(direction, {}).get(run, ())
