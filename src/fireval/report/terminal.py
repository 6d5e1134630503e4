"""Terminal tables in the layout of FIRE's Table 1: original, augmented and their delta.

Input is the tidy table of :func:`fireval.metrics.evaluate` (columns run, labels, direction,
unjudged, ties, measure, value), possibly concatenated over runs and label sets.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

RANK_MEASURES = ("MdR", "MnR")


def _is_rank(measure: str) -> bool:
    """Rank measures (MdR, MnR) are printed as ranks, lower is better; the others as percentages."""
    return measure.split("@", 1)[0] in RANK_MEASURES


def _fmt(measure: str, value: float) -> str:
    if pd.isna(value):
        return "–"
    return f"{value:.1f}" if _is_rank(measure) else f"{100 * value:.1f}"


def _fmt_delta(measure: str, delta: float) -> str:
    if pd.isna(delta):
        return "–"
    rank = _is_rank(measure)
    d = delta if rank else 100.0 * delta
    better = d < 0 if rank else d > 0
    colour = "green" if better else ("red" if d != 0 else "dim")
    return f"[{colour}]{d:+.1f}[/]"


def comparison_tables(
    table: pd.DataFrame,
    baseline: str = "original",
    unjudged: str = "lower",
    measures: Sequence[str] | None = None,
) -> list[Table]:
    """One rich table per direction: a row per run and label set, a column per measure.

    When several label sets are present, each run gets one row per set and a Δ row against
    ``baseline``. Values are percentages except ranks (MdR, MnR).
    """
    t = table[table["unjudged"] == unjudged]
    if measures is not None:
        t = t[t["measure"].isin(list(measures))]
    out = []
    label_sets = list(dict.fromkeys(t["labels"]))
    for direction, part in t.groupby("direction", sort=False):
        cols = list(dict.fromkeys(part["measure"]))
        title = f"{direction}  (unjudged = {unjudged}; C@K is what TVR papers call R@K)"
        tab = Table(title=title, title_justify="left", header_style="bold", min_width=len(title))
        tab.add_column("run")
        tab.add_column("labels")
        for c in cols:
            tab.add_column(c, justify="right")
        wide = part.pivot_table(
            index=["run", "labels"], columns="measure", values="value", aggfunc="first", sort=False
        )
        for run in dict.fromkeys(part["run"]):
            base = wide.loc[(run, baseline)] if (run, baseline) in wide.index else None
            for ls in label_sets:
                if (run, ls) not in wide.index:
                    continue
                row = wide.loc[(run, ls)]
                tab.add_row(run, ls, *[_fmt(c, row.get(c)) for c in cols])
                if base is not None and ls != baseline:
                    tab.add_row(
                        "", f"Δ vs {baseline}", *[_fmt_delta(c, row.get(c) - base.get(c)) for c in cols]
                    )
            tab.add_section()
        out.append(tab)
    return out


def bounds_table(table: pd.DataFrame, measures: Sequence[str] | None = None) -> Table:
    """Lower bound, condensed value and upper bound side by side, per run, labels and direction."""
    t = table if measures is None else table[table["measure"].isin(list(measures))]
    title = "Unjudged-aware bounds (lower: unjudged = irrelevant; upper: unjudged = relevant)"
    tab = Table(title=title, title_justify="left", header_style="bold", min_width=len(title))
    for c in ("run", "labels", "direction", "measure"):
        tab.add_column(c)
    modes = [m for m in ("lower", "condensed", "upper") if m in set(t["unjudged"])]
    for m in modes:
        tab.add_column(m, justify="right")
    wide = t.pivot_table(
        index=["run", "labels", "direction", "measure"],
        columns="unjudged",
        values="value",
        aggfunc="first",
        sort=False,
    )
    for (run, labels, direction, measure), row in wide.iterrows():
        tab.add_row(run, labels, direction, measure, *[_fmt(measure, row.get(m)) for m in modes])
    return tab


def print_tables(tables: Sequence[Table], console: Console | None = None) -> None:
    """Print each table at its natural width, even on a narrower console or a pipe.

    Rich would otherwise squeeze a wide table into the console width (80 columns when the
    output is not a terminal) and cut every number to ``34…``; a too-wide line is better.
    """
    console = console or Console()
    for tab in tables:
        need = Measurement.get(console, console.options.update_width(100_000), tab).maximum
        width = console.width
        if need <= width:
            console.print(tab)
            continue
        console.width = need  # rich caps print(width=...) at the console width
        try:
            console.print(tab, crop=False)
        finally:
            console.width = width
