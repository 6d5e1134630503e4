"""FIRE's tables as published that the core report set lacks, and what its conclusions need.

* ``train_overlap_length``: Table 7, the correlation of train–test overlap with caption length
  in words and in characters.
* ``rank_histogram``: Fig. 12 in numbers, relevant pairs per rank band and label source.
* ``pool_bias_sizes``: pool bias against the number of pooled runs (§4.2).
* ``saturation``: per measure the headroom after the unjudged bounds and label noise (§5).

Numbers come from :mod:`fireval.analysis` (``TrustAnalysis``); this module only lays them out as
:class:`fireval.report.tables.Table` for the HTML, Markdown and LaTeX writers.
"""

from __future__ import annotations

from fireval.analysis.saturation import ASSUMPTIONS
from fireval.analysis.trust import TrustAnalysis
from fireval.metrics.measures import display_name
from fireval.report.cells import Cell, Table, _kind

#: rank bands of the Fig. 12 table (inclusive bounds)
BANDS = ((1, 1), (2, 5), (6, 10), (11, 20), (21, 50))


def build_fire_tables(a: TrustAnalysis, names: str = "ir") -> list[Table]:
    """The tables of the module docstring whose data exist."""
    out: list[Table] = []
    if a.train_overlap_table:
        fit = a.settings.get("tfidf_fit", "all")
        out.append(
            Table(
                "train_overlap_length",
                "Train–test overlap vs caption length in words and characters (FIRE Table 7)",
                [("length", "text"), ("Spearman ρ", "num"), ("p", "p"), ("Kendall τ", "num"), ("p ", "p")],
                [
                    [r["length"], r["spearman"], r["spearman_p"], r["kendall"], r["kendall_p"]]
                    for r in a.train_overlap_table
                ],
                note="Overlap: mean of each test caption's 10 highest char 5-gram TF-IDF cosines to the training "
                f"captions, TF-IDF fitted on {'the training captions only' if fit == 'train' else 'training and test captions'}; "
                "Kendall's τ-b.",
            )
        )
    if any(a.rank_histogram.values()):
        rows = []
        for run, hist in a.rank_histogram.items():
            if not hist:
                continue
            sources = [k for k in hist[0] if k not in ("rank", "beyond")]
            last = max(r["rank"] for r in hist if not r["beyond"])
            bands = [b for b in BANDS if b[0] <= last]
            for src in sources:
                cells = [
                    sum(int(r[src]) for r in hist if not r["beyond"] and lo <= r["rank"] <= min(hi, last))
                    for lo, hi in bands
                ]
                beyond = sum(int(r[src]) for r in hist if r["beyond"])
                rows.append([run, src, *cells, beyond])
        last = max(r["rank"] for h in a.rank_histogram.values() for r in h if not r["beyond"])
        heads = [f"{lo}" if lo == hi else f"{lo}–{min(hi, last)}" for lo, hi in BANDS if lo <= last]
        out.append(
            Table(
                "rank_histogram",
                f"Relevant pairs by rank and label source ({a.main_labels} labels; FIRE Fig. 12)",
                [("run", "text"), ("source", "text"), *[(h, "int") for h in heads], (f">{last}", "int")],
                rows,
                note="Tie-aware rank 1 + #higher + (#tied − 1)/2, counted in the band of its integer part.",
            )
        )
    if a.pool_bias_sizes:
        out.append(
            Table(
                "pool_bias_sizes",
                "Pool bias against the number of pooled runs (FIRE §4.2)",
                [
                    ("run", "text"),
                    ("measure", "text"),
                    ("other runs pooled", "int"),
                    ("pools", "text"),
                    ("mean drop", "diff"),
                    ("min drop", "diff"),
                    ("max drop", "diff"),
                ],
                [
                    [
                        r["run"],
                        display_name(str(r["measure"]), names),
                        r["pool_size"],
                        f"{r['subsets']}" + ("" if r["exhaustive"] else " (sample)"),
                        Cell(r["mean_drop"], _kind(str(r["measure"]), True)),
                        Cell(r["min_drop"], _kind(str(r["measure"]), True)),
                        Cell(r["max_drop"], _kind(str(r["measure"]), True)),
                    ]
                    for r in a.pool_bias_sizes
                ],
                note="Score under all labels minus the score when only the pooled labels proposed by n of the "
                "other runs are kept (the run's own contribution never is); every pool of that size, or a "
                f"seeded sample (seed {a.settings['seed']}). The largest n is leave-one-out; n = 0 keeps no "
                "pooled label. Percentage points (MdR, MnR: ranks).",
            )
        )
    if a.saturation:
        agree = a.settings.get("label_agreement")
        out.append(
            Table(
                "saturation",
                f"Saturation: headroom after unjudged bounds and label noise ({a.main_labels} labels; FIRE §5)",
                [
                    ("run", "text"),
                    ("measure", "text"),
                    ("score", "score"),
                    ("unjudged relevant", "score"),
                    ("noise ceiling", "score"),
                    ("headroom", "text"),
                    ("within noise", "text"),
                ],
                [
                    [
                        r["run"],
                        display_name(str(r["measure"]), names),
                        r["lower"],
                        r["upper"],
                        r["ceiling"],
                        f"{100 * float(r['headroom_min']):.1f}–{100 * float(r['headroom_max']):.1f}",
                        ("yes" if r["within_noise"] else "no") if agree is not None else "–",
                    ]
                    for r in a.saturation
                ],
                note=(
                    f"Pairwise annotator agreement {100 * agree:.1f}% gives a label error rate of "
                    f"{100 * float(a.saturation[0]['eps']):.1f}%. "
                    if agree is not None
                    else "No annotator agreement was given, so the ceiling is 100 and label noise is not counted. "
                )
                + "Headroom in points: ceiling minus the score with unjudged pairs relevant (least) and "
                "irrelevant (most). Assumptions: " + ASSUMPTIONS + ".",
            )
        )
    return out
