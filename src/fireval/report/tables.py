"""The report's tables, built once from a :class:`~fireval.analysis.trust.TrustAnalysis`.

Each :class:`Table` is format-neutral (columns with a kind, raw cell values); the HTML,
Markdown and LaTeX writers only differ in how they print a cell. Scores are printed as
percentages with one decimal, as TVR papers do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from fireval.analysis.trust import TrustAnalysis

# column kinds: text | score (x100, 1 dp) | diff (signed score) | p | int | num (3 dp)


@dataclass
class Table:
    """A format-neutral report table: ``columns`` are ``(header, kind)``, rows hold raw values."""

    key: str
    title: str
    columns: list[tuple[str, str]]
    rows: list[list[Any]]
    note: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def fmt(value: Any, kind: str) -> str:
    """One cell as text."""
    if value is None:
        return "–"
    if kind == "text":
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    if kind == "score":
        return f"{100 * value:.1f}"
    if kind == "diff":
        return f"{100 * value:+.1f}"
    if kind == "p":
        return "<0.0001" if value < 1e-4 else f"{value:.4f}"
    if kind == "int":
        return str(int(value))
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.3f}"


def _pool_note(a: TrustAnalysis) -> str:
    how = a.settings.get("pool_provenance", "top-k")
    src = {
        "labels": "the labels' own model provenance (FIRE JSON 'models')",
        "given": "the provenance given",
        "top-k": f"the runs' top-{a.settings['pool_depth']} (assumes these runs formed the pool)",
    }.get(how, how)
    return f"Human labels that only the run itself proposed are removed; provenance from {src}."


def _sources_note(a: TrustAnalysis) -> str:
    unresolved = ", ".join(f"{ln}: {n}" for ln, n in a.unresolved.items() if n)
    return (
        "Labelled pairs per source after merging (the first source in the precedence wins a pair). "
        + (f"Pairs left unjudged because annotators disagreed: {unresolved}. " if unresolved else "")
        + "FIRE JSON records that could not be joined to the collection are reported on stderr when read."
    )


def build_tables(a: TrustAnalysis) -> list[Table]:
    """All tables of the report, in report order (empty analyses are left out)."""
    out: list[Table] = []
    lnames = a.label_sets
    if a.label_sources:
        out.append(
            Table(
                "label_sources",
                "Label sources",
                [("labels", "text"), ("source", "text"), ("relevant", "int"), ("irrelevant", "int")],
                [[r["labels"], r["source"], r["relevant"], r["irrelevant"]] for r in a.label_sources],
                note=_sources_note(a),
            )
        )
    cols = [("run", "text"), ("measure", "text")] + [(ln, "score") for ln in lnames]
    if len(lnames) > 1:
        cols.append(("Δ", "diff"))
    out.append(
        Table(
            "scores",
            "Original vs augmented labels" if len(lnames) > 1 else "Scores",
            cols,
            [
                [
                    r["run"],
                    r["measure"],
                    *[r[ln] for ln in lnames],
                    *([r["delta"]] if len(lnames) > 1 else []),
                ]
                for r in a.scores
            ],
            note="Mean over queries with at least one relevant document; unjudged pairs count as irrelevant (lower bound).",
        )
    )
    lvl = int(round(100 * a.settings["level"]))
    out.append(
        Table(
            "intervals",
            f"Bootstrap {lvl}% confidence intervals",
            [
                ("labels", "text"),
                ("run", "text"),
                ("measure", "text"),
                ("mean", "score"),
                ("low", "score"),
                ("high", "score"),
                ("queries", "int"),
            ],
            [
                [r["labels"], r["run"], r["measure"], r["mean"], r["low"], r["high"], r["n"]]
                for r in a.intervals
            ],
            note=f"Percentile bootstrap over queries, {a.settings['n_resamples']} resamples, seed {a.settings['seed']}.",
        )
    )
    if a.comparisons:
        out.append(
            Table(
                "significance",
                f"Paired significance ({a.main_labels} labels)",
                [
                    ("measure", "text"),
                    ("A", "text"),
                    ("B", "text"),
                    ("A−B", "diff"),
                    ("Cohen's d_z", "num"),
                    ("P(A>B)", "num"),
                    ("p boot", "p"),
                    ("p boot (Holm)", "p"),
                    ("p rand", "p"),
                    ("p rand (Holm)", "p"),
                ],
                [
                    [
                        c["measure"],
                        c["a"],
                        c["b"],
                        c["mean_difference"],
                        c["cohens_dz"],
                        c["prob_superiority"],
                        c["p_bootstrap"],
                        c["p_bootstrap_holm"],
                        c["p_randomisation"],
                        c["p_randomisation_holm"],
                    ]
                    for c in a.comparisons
                ],
                note="Two-sided paired bootstrap and sign-flip randomisation tests; Holm correction over the run pairs of each measure.",
            )
        )
    if a.overlap:
        out.append(
            Table(
                "overlap",
                f"Top-{a.settings['k']} overlap and RBO",
                [
                    ("A", "text"),
                    ("B", "text"),
                    (f"overlap@{a.settings['k']}", "score"),
                    (f"RBO (p={a.settings['rbo_p']:g})", "score"),
                ],
                [[r["a"], r["b"], r["overlap"], r["rbo"]] for r in a.overlap],
                note="Mean over queries; RBO is the extrapolated RBO_ext of Webber et al. (2010), Eq. 32.",
            )
        )
    out.append(
        Table(
            "judged",
            f"judged@{a.settings['k']}",
            [("labels", "text"), ("run", "text"), (f"judged@{a.settings['k']}", "score")],
            [[r["labels"], r["run"], r["judged"]] for r in a.judged],
            note="Share of each run's top-K that carries a label.",
        )
    )
    if a.pool_bias:
        out.append(
            Table(
                "pool_bias",
                "Pool bias: leave one run out",
                [
                    ("run", "text"),
                    ("measure", "text"),
                    ("all labels", "score"),
                    ("without own pool", "score"),
                    ("drop", "diff"),
                ],
                [
                    [r["run"], r["measure"], r["all_labels"], r["leave_one_out"], r["drop"]]
                    for r in a.pool_bias
                ],
                note=_pool_note(a),
            )
        )
    for pair, rows in a.correctness.items():
        out.append(
            Table(
                f"correctness_{len(out)}",
                f"C@{a.settings['correct_k']} by caption length: {pair}",
                [
                    ("words", "text"),
                    ("both", "int"),
                    ("only A", "int"),
                    ("only B", "int"),
                    ("neither", "int"),
                    ("queries", "int"),
                ],
                [[r["bin"], r["both"], r["only_a"], r["only_b"], r["neither"], r["n"]] for r in rows],
                meta={"pair": pair},
            )
        )
    if a.train_overlap_stats:
        s = a.train_overlap_stats
        out.append(
            Table(
                "train_overlap",
                "Train–test caption overlap vs caption length",
                [
                    ("mean overlap", "num"),
                    ("Spearman ρ", "num"),
                    ("p", "p"),
                    ("Kendall τ", "num"),
                    ("p ", "p"),
                ],
                [[s["mean_overlap"], s["spearman"], s["spearman_p"], s["kendall"], s["kendall_p"]]],
                note="Mean of the top-10 char 5-gram TF-IDF cosines of each test caption to the training captions.",
            )
        )
    if a.recommended:
        keys = [k for k in a.recommended[0] if k not in ("run", "measure")]
        out.append(
            Table(
                "budget",
                "Annotation budget: queries needed",
                [("run", "text"), ("measure", "text"), *[(k, "int") for k in keys]],
                [[r["run"], r["measure"], *[r[k] for k in keys]] for r in a.recommended],
                note="Smallest sample size whose 95th-percentile bootstrap error is at most Δ (– = more than all queries).",
            )
        )
    return out
