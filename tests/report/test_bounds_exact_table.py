"""The bounds table with ``unjudged=worst|best``: exact outer columns, ‡ rows bounded, caption."""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console

from fireval.report.terminal import bounds_table, print_tables


def _frame(by_mode: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = [
        {"run": "r", "labels": "original", "direction": "t2v", "unjudged": mode, "ties": "tie-aware",
         "measure": m, "value": v}
        for mode, vals in by_mode.items()
        for m, v in vals.items()
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _rows(tab) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    print_tables([tab], console=Console(file=buf, width=300, color_system=None))
    lines = [ln for ln in buf.getvalue().splitlines() if ln.count("│") > 8]
    return {ln.split("│")[4].strip(): [c.strip() for c in ln.split("│")[6:-1]] for ln in lines}


def test_exact_columns_bound_the_dagger_rows_and_rank_measures() -> None:
    t = _frame(
        {
            "worst": {"AP": 0.10, "Recall@10": 0.001, "MnR": 40.0, "judged@10": 0.1},
            "lower": {"AP": 0.45, "Recall@10": 0.65, "MnR": 37.0, "judged@10": 0.1},
            "condensed": {"AP": 1.0, "Recall@10": 1.0, "MnR": 1.0, "judged@10": 1.0},
            "upper": {"AP": 1.0, "Recall@10": 0.01, "MnR": 1.0, "judged@10": 0.1},
            "best": {"AP": 1.0, "Recall@10": 0.97, "MnR": 1.0, "judged@10": 0.1},
        }
    )
    tab = bounds_table(t)
    rows = _rows(tab)
    # worst | unjudged irrelevant | condensed | unjudged relevant | best | condensed reaches
    assert rows["AP‡"] == ["10.0", "45.0", "100.0", "100.0", "100.0", "optimistic"]
    assert rows["Recall@10‡"][-1] == "outside" and rows["Recall@10‡"][4] == "97.0"
    # a rank: the worst is the larger number; condensed at rank 1 is the best
    assert rows["MnR"][0] == "40.0" and rows["MnR"][-1] == "optimistic"
    assert rows["judged@10‡"][-1] == "– (not bounds)"  # no relevance measure: no claim
    caption = " ".join(str(tab.caption).split())
    assert "worst / best (exact)" in caption and "‡ unjudged irrelevant / relevant do not bound" in caption
    assert "(exact)" in str(tab.title)


def test_without_exact_modes_the_table_is_unchanged() -> None:
    t = _frame({"lower": {"AP": 0.4}, "upper": {"AP": 1.0}})
    tab = bounds_table(t)
    assert "‡ not bounded by these columns" in " ".join(str(tab.caption).split())
    assert "exact" not in str(tab.title)
