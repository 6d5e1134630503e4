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
    assert "unjudged irrelevant" in out and "unjudged relevant" in out and "lower: unjudged" not in out
    lines = {ln.split("│")[4].strip(): ln for ln in out.splitlines() if ln.count("│") > 5}
    assert "higher ↑" in lines["R@1"] and "optimistic" in lines["R@1"]
    assert "lower ↓" in lines["MnR"] and "37.3" in lines["MnR"] and "optimistic" in lines["MnR"]
    # nDCG is no bound (unjudged-as-relevant enlarges the ideal ranking): marked, no "reaches"
    assert "nDCG@10" not in lines and "between" not in lines["nDCG@10‡"]
    assert "not bounds" in lines["nDCG@10‡"]
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


def test_bounds_table_marks_measures_the_outer_columns_do_not_bound() -> None:
    """QA: Recall@10 "optimistic" 1.0 below "pessimistic" 74.0 (every unjudged video relevant
    enlarges |relevant|): the columns are named for what they compute and non-bounds are marked."""
    from fireval.report.terminal import bounds_table

    t = _bounds_frame(
        {"C@10": 0.74, "Recall@10": 0.74, "AP": 0.577, "P@10": 0.074, "RR": 0.577},
        {"C@10": 1.0, "Recall@10": 1.0, "AP": 1.0, "P@10": 0.1, "RR": 1.0},
        {"C@10": 1.0, "Recall@10": 0.01, "AP": 1.0, "P@10": 1.0, "RR": 1.0},
    )
    out = _text(bounds_table(t))
    rows = {ln.split("│")[4].strip(): ln for ln in out.splitlines() if ln.count("│") > 5}
    assert {"Recall@10‡", "AP‡", "C@10", "P@10", "RR"} <= set(rows)
    assert "optimistic" in rows["C@10"] and "between" in rows["P@10"]
    assert "optimistic" not in rows["Recall@10‡"] and "pessimistic" not in rows["Recall@10‡"]
    flat = " ".join(out.split())
    assert "‡ not bounded by these columns" in flat and "optimistic" not in flat.split("│")[0]


def test_monotone_in_relevance_by_brute_force() -> None:
    """The measures claimed monotone never fall when one more doc becomes relevant; the others can.

    Oracle from the definitions (a 6-doc ranking, every binary labelling), not from fireval's kernel.
    """
    import itertools
    import math

    from fireval.metrics.measures import parse_measure

    def value(name: str, rel: tuple[int, ...]) -> float:
        hits = [i for i, r in enumerate(rel) if r]
        n_rel = len(hits)
        k = 3
        if name == "C@3":
            return float(any(rel[:k]))
        if name == "P@3":
            return sum(rel[:k]) / k
        if name == "RR":
            return 1 / (hits[0] + 1)
        if name == "MnR":
            return -(hits[0] + 1)  # negated: higher is better, as for the rest
        if name == "Recall@3":
            return sum(rel[:k]) / n_rel
        if name == "AP":
            return sum((j + 1) / (i + 1) for j, i in enumerate(hits)) / n_rel
        if name == "nDCG@3":
            dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rel[:k]))
            return dcg / sum(1 / math.log2(i + 2) for i in range(min(k, n_rel)))
        raise AssertionError(name)

    names = ["C@3", "P@3", "RR", "MnR", "Recall@3", "AP", "nDCG@3"]
    falls = dict.fromkeys(names, False)
    for rel in itertools.product((0, 1), repeat=6):
        if not any(rel):
            continue
        for i in range(6):
            if rel[i]:
                continue
            more = rel[:i] + (1,) + rel[i + 1 :]
            for n in names:
                falls[n] |= value(n, more) < value(n, rel) - 1e-12
    for n in names:
        assert falls[n] == (not parse_measure(n).monotone_in_relevance), n
