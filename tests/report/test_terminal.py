from __future__ import annotations

from fireval.report.terminal import _fmt, _fmt_delta


def test_rank_measures_print_as_ranks_and_lower_is_better() -> None:
    assert _fmt("MnR", 12.34) == "12.3" and _fmt("C@1", 0.4567) == "45.7"
    assert _fmt_delta("MdR", -2.0) == "[green]-2.0[/]"
    assert _fmt_delta("MnR@100", 1.5) == "[red]+1.5[/]"
    assert _fmt_delta("C@5", 0.012) == "[green]+1.2[/]"
    assert _fmt_delta("nDCG@10", 0.0) == "[dim]+0.0[/]"


def _bounds_frame(lower: dict, condensed: dict, upper: dict):  # type: ignore[no-untyped-def]
    import pandas as pd

    rows = []
    for mode, vals in (("lower", lower), ("condensed", condensed), ("upper", upper)):
        for m, v in vals.items():
            rows.append(
                {
                    "run": "r",
                    "labels": "original",
                    "direction": "t2v",
                    "unjudged": mode,
                    "ties": "tie-aware",
                    "measure": m,
                    "value": v,
                }
            )
    return pd.DataFrame(rows)


def _text(table) -> str:  # type: ignore[no-untyped-def]
    import io

    from rich.console import Console

    from fireval.report.terminal import print_tables

    buf = io.StringIO()
    print_tables([table], console=Console(file=buf, width=300, color_system=None))
    return buf.getvalue()


def test_bounds_table_names_the_better_side_and_the_bound_reached() -> None:
    from fireval.report.terminal import bounds_table

    t = _bounds_frame(
        {"C@1": 0.531, "MnR": 37.3, "nDCG@10": 0.40},
        {"C@1": 1.0, "MnR": 1.0, "nDCG@10": 0.55},
        {"C@1": 1.0, "MnR": 1.0, "nDCG@10": 0.70},
    )
    out = _text(bounds_table(t, names="tvr"))
    assert "pessimistic" in out and "optimistic" in out and "lower: unjudged" not in out
    lines = {ln.split("│")[4].strip(): ln for ln in out.splitlines() if ln.count("│") > 5}
    assert "higher ↑" in lines["R@1"] and "optimistic" in lines["R@1"]
    assert "lower ↓" in lines["MnR"] and "37.3" in lines["MnR"] and "optimistic" in lines["MnR"]
    assert "between" in lines["nDCG@10"]
    # instance labels only: C@K condensed = 100 for every row is explained in one line
    flat = " ".join(out.split())
    assert (
        "condensed C@K = 100 with original labels: without unjudged videos only the relevant one is left."
        in flat
    )


def test_bounds_table_no_explanation_when_not_degenerate() -> None:
    from fireval.report.terminal import bounds_table

    t = _bounds_frame({"C@1": 0.5}, {"C@1": 0.8}, {"C@1": 0.9})
    out = _text(bounds_table(t))
    assert "condensed C@K = 100" not in out and "between" in out and "C@1" in out


def test_comparison_tables_tvr_names_and_units() -> None:
    from fireval.report.terminal import comparison_tables

    t = _bounds_frame({"C@1": 0.5, "Recall@5": 0.6, "MnR": 3.0}, {}, {})
    out = _text(comparison_tables(t, names="tvr")[0])
    assert "R@1" in out and "C@1" not in out and "Recall@5" in out
    assert "values in %" in out and "MdR/MnR in ranks" in out
