"""The report's tables, built once from a :class:`~fireval.analysis.trust.TrustAnalysis`.

Each :class:`Table` is format-neutral (columns with a kind, raw cell values); the HTML,
Markdown and LaTeX writers only differ in how they print a cell. Scores are printed as
percentages with one decimal, as TVR papers do; the rank measures MdR and MnR as ranks.

The first table is the *paper table* (:mod:`fireval.report.paper`): runs as rows, directions ×
measures as columns, label sets and Δ as sections of rows; the best value per column in bold
(lowest for MdR/MnR); a dagger on values significantly worse than the best
(:mod:`fireval.analysis.paper`). With several label sets every label set's mean and the Δ are
over the same queries (:mod:`fireval.analysis.trust`), and the note states their number n.
The table model (:class:`Cell`, :class:`Table`, marks and their notes) is :mod:`fireval.report.cells`,
re-exported here.
A double dagger marks values that depend on a truncated run's tail (expectations over an undefined
tie, lower bounds where the tail is unretrieved)
(``marks``: direction → run → measure names, from :func:`fireval.report.build.truncation_marks`),
in the paper table and the intervals table, with a footnote. A cell that needs its own kind, bold
or marker is a :class:`Cell`. Measure names follow ``names``: ``"tvr"`` prints C@K as R@K,
``"ir"`` keeps C@K.
"""

from __future__ import annotations

from typing import Any

from fireval.analysis.trust import TrustAnalysis, split_pair
from fireval.metrics.measures import display_name, parse_measure
from fireval.report.cells import (  # re-exported: the table model's one import place for writers
    MARK,
    PAIR_MARK,
    TRUNC_MARK,
    UNITS_NOTE,
    Cell,
    Marks,
    Pairs,
    Table,
    _marked,
    _mcell,
    _not_comparable,
    cell_parts,
    fmt,
    marks_note,
    measure_header,
    pairs_note,
    unaligned_labels_note,
    unaligned_note,
)
from fireval.report.paper import Columns, not_comparable_cell, paper_table, parse_columns

__all__ = [
    "MARK",
    "PAIR_MARK",
    "TRUNC_MARK",
    "UNITS_NOTE",
    "Cell",
    "Columns",
    "Marks",
    "Pairs",
    "Table",
    "build_tables",
    "cell_parts",
    "fmt",
    "marks_note",
    "measure_header",
    "not_comparable_cell",
    "pairs_note",
    "paper_table",
    "parse_columns",
    "unaligned_labels_note",
    "unaligned_note",
]


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
        "'overruled': labels of the source that conflicted with a source earlier in the precedence "
        "and were not used (by default FIRE's: a human 'irrelevant' on an instance positive keeps the "
        "instance label). 'regraded': instance positives (which carry no grade) that take this "
        "source's grade for graded measures. "
        + (f"Pairs left unjudged because annotators disagreed: {unresolved}. " if unresolved else "")
        + "FIRE JSON records that could not be joined to the collection are reported on stderr when read."
    )


def build_tables(
    a: TrustAnalysis,
    names: str = "ir",
    marks: Marks | None = None,
    pairs: Pairs | None = None,
    unaligned: frozenset[str] = frozenset(),
    columns: Columns | None = None,
) -> list[Table]:
    """All tables of the report, in report order (empty analyses are left out).

    ``names``: ``"tvr"`` (C@K printed as R@K) or ``"ir"`` (fireval's names). ``marks``: direction
    → run → measures whose values are expectations over a truncated tail (``‡`` and a footnote).
    ``pairs``: run pairs the input checks found not comparable per query
    (:meth:`fireval.checks.ChecksReport.misaligned_pairs`): no dagger between them in the paper
    table, and their rows of the significance, overlap and breakdown tables carry ``!``.
    ``unaligned``: runs that fail the alignment check (:meth:`fireval.checks.ChecksReport.unaligned_runs`);
    the breakdowns by caption (length, train similarity) that show them carry ``!`` too, even
    between two runs that agree with each other (GRAM and VAST share one wrong order), and so do
    their paper-table cells beyond the instance labels. ``columns``: the paper table's measures and
    groups (:func:`parse_columns`).
    """
    main_dir = a.settings["direction"]

    def tcell(run: str, measure: str, value: Any, labels: str = "") -> Cell:
        c = _mcell(measure, value)
        c.mark = TRUNC_MARK if _marked(marks, main_dir, run, measure) else ""
        c.mark += PAIR_MARK if labels and not_comparable_cell(unaligned, run, labels) else ""
        return c

    out: list[Table] = []

    def mn(m: str) -> str:
        return display_name(m, names)

    if a.label_sources:
        out.append(
            Table(
                "label_sources",
                "Label sources",
                [
                    ("labels", "text"),
                    ("source", "text"),
                    ("relevant", "int"),
                    ("irrelevant", "int"),
                    ("overruled", "int"),
                    ("regraded", "int"),
                ],
                [
                    [
                        r["labels"],
                        r["source"],
                        r["relevant"],
                        r["irrelevant"],
                        r.get("overruled", 0),
                        r.get("regraded", 0),
                    ]
                    for r in a.label_sources
                ],
                note=_sources_note(a),
            )
        )
    out.append(paper_table(a, names, marks, pairs, unaligned, columns))

    def pcell(x: str, y: str, labels: str = "") -> Cell:
        """The B cell of a pair's row: ``!`` when the pair is not comparable per query, or (with
        ``labels``) when either run's values under those labels are not comparable."""
        off = labels and (
            not_comparable_cell(unaligned, x, labels) or not_comparable_cell(unaligned, y, labels)
        )
        return Cell(y, "text", mark=PAIR_MARK if _not_comparable(pairs, x, y) or off else "")

    lvl = int(round(100 * a.settings["level"]))
    out.append(
        Table(
            "intervals",
            f"Bootstrap {lvl}% confidence intervals ({main_dir})",
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
                [
                    r["labels"],
                    r["run"],
                    mn(r["measure"]),
                    tcell(r["run"], r["measure"], r["mean"], r["labels"]),
                    tcell(r["run"], r["measure"], r["low"], r["labels"]),
                    tcell(r["run"], r["measure"], r["high"], r["labels"]),
                    r["n"],
                ]
                for r in a.intervals
            ],
            note=f"{UNITS_NOTE} Percentile bootstrap over queries of the mean (MdR, a median, has none), "
            f"{a.settings['n_resamples']} resamples, seed {a.settings['seed']}."
            + unaligned_labels_note(
                sorted(
                    {r["run"] for r in a.intervals if not_comparable_cell(unaligned, r["run"], r["labels"])}
                )
            )
            + marks_note(
                {main_dir: (marks or {}).get(main_dir, {})},
                names,
                skip=[m for m in a.measures if parse_measure(m).aggregate == "median"],
            ),
        )
    )
    if a.comparisons:
        out.append(
            Table(
                "significance",
                f"Paired significance ({main_dir}; {a.main_labels} labels)",
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
                        mn(c["measure"]),
                        c["a"],
                        pcell(c["a"], c["b"], a.main_labels),
                        _mcell(c["measure"], c["mean_difference"], diff=True),
                        c["cohens_dz"],
                        c["prob_superiority"],
                        c["p_bootstrap"],
                        c["p_bootstrap_holm"],
                        c["p_randomisation"],
                        c["p_randomisation_holm"],
                    ]
                    for c in a.comparisons
                ],
                note="A−B in percentage points (MdR, MnR: ranks). Two-sided paired bootstrap and sign-flip "
                "randomisation tests; Holm correction over the run pairs of each measure."
                + pairs_note(pairs, list(dict.fromkeys((c["a"], c["b"]) for c in a.comparisons)))
                + unaligned_labels_note(
                    sorted(
                        {
                            r
                            for c in a.comparisons
                            for r in (c["a"], c["b"])
                            if not_comparable_cell(unaligned, r, a.main_labels)
                        }
                    )
                ),
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
                    (f"RBO@{a.settings['k']} truncated", "score"),
                ],
                [
                    [
                        r["a"],
                        pcell(r["a"], r["b"]),
                        r["overlap"],
                        r["rbo"],
                        r.get("rbo_truncated", float("nan")),
                    ]
                    for r in a.overlap
                ],
                note="In % (0–100), mean over queries; RBO is the extrapolated RBO_ext of Webber et al. (2010), Eq. 32; "
                "RBO@K truncated is (1 − p) times the sum over d ≤ K of p^(d−1) X_d/d (Eq. 7 cut at depth K, the variant FIRE's "
                "Table 3 matches: it leaves out the weight p^K of the unseen tail, so it lies below overlap@K)."
                + pairs_note(pairs, [(r["a"], r["b"]) for r in a.overlap]),
            )
        )
    out.append(
        Table(
            "judged",
            f"judged@{a.settings['k']}",
            [("labels", "text"), ("run", "text"), (f"judged@{a.settings['k']}", "score")],
            [
                [
                    r["labels"],
                    r["run"],
                    Cell(
                        r["judged"],
                        "score",
                        mark=PAIR_MARK if not_comparable_cell(unaligned, r["run"], r["labels"]) else "",
                    ),
                ]
                for r in a.judged
            ],
            note="Share of each run's top-K that carries a label, in %."
            + unaligned_labels_note(
                sorted({r["run"] for r in a.judged if not_comparable_cell(unaligned, r["run"], r["labels"])})
            ),
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
                    [
                        r["run"],
                        mn(r["measure"]),
                        *[
                            Cell(c.value, c.kind, mark=PAIR_MARK if r["run"] in unaligned else "")
                            for c in (
                                _mcell(r["measure"], r["all_labels"]),
                                _mcell(r["measure"], r["leave_one_out"]),
                                _mcell(r["measure"], r["drop"], diff=True),
                            )
                        ],
                    ]
                    for r in a.pool_bias
                ],
                note=f"{UNITS_NOTE} {_pool_note(a)}"
                + unaligned_labels_note(sorted({r["run"] for r in a.pool_bias if r["run"] in unaligned})),
            )
        )
    ck = mn(f"C@{a.settings['correct_k']}")
    for unit, data in (("words", a.correctness), ("characters", a.correctness_chars)):
        for pair, rows in data.items():
            ra, rb = split_pair(pair, a.runs)
            off = [r for r in (ra, rb) if r in unaligned]
            bad = PAIR_MARK if _not_comparable(pairs, ra, rb) or off else ""
            out.append(
                Table(
                    f"correctness_{len(out)}",
                    f"{ck} by caption length in {unit} ({a.main_labels} labels): {pair}{bad}",
                    [
                        (unit, "text"),
                        ("both", "count"),
                        (f"only {ra}", "count"),
                        (f"only {rb}", "count"),
                        ("neither", "count"),
                        ("queries", "int"),
                    ],
                    [[r["bin"], r["both"], r["only_a"], r["only_b"], r["neither"], r["n"]] for r in rows],
                    note=f"Queries (counts) each run gets right at {ck} (FIRE Fig. 3); with ties, expected "
                    f"counts over random orders of the tied documents (both + only A = A's {ck} × queries)."
                    + pairs_note(pairs, [(ra, rb)])
                    + unaligned_note(off),
                    meta={"pair": pair, "unit": unit},
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
                note="Mean of the top-10 char 5-gram TF-IDF cosines of each test caption to the training captions (0–1); "
                + (
                    "TF-IDF fitted on the training captions only (fireval's earlier variant)."
                    if a.settings.get("tfidf_fit") == "train"
                    else "TF-IDF fitted on the training and test captions (FIRE App. D)."
                ),
            )
        )
    if a.correctness_similarity:
        fig8_max = a.settings.get("fig8_similarity") == "max"
        ck8 = mn(f"C@{a.settings.get('fig8_k', a.settings['correct_k'])}")
        out.append(
            Table(
                "train_similarity",
                f"{ck8} by train–test caption similarity ({a.main_labels} labels; FIRE Fig. 8)",
                [
                    ("max similarity" if fig8_max else "mean top-10 similarity", "text"),
                    ("queries", "int"),
                    *[(r + (PAIR_MARK if r in unaligned else ""), "score") for r in a.runs],
                ],
                [[r["bin"], r["n"], *[r[x] for x in a.runs]] for r in a.correctness_similarity],
                note=f"{ck8} in % per bin of each test caption's "
                + (
                    "highest char 5-gram TF-IDF cosine (0–1) to any training caption (fireval's earlier variant)"
                    if fig8_max
                    else "mean of its 10 highest char 5-gram TF-IDF cosines (0–1) to the training captions (FIRE)"
                )
                + "; equal-count bins."
                + unaligned_note([r for r in a.runs if r in unaligned]),
            )
        )
    if a.caption_examples:
        out.append(
            Table(
                "caption_examples",
                f"Shortest, median and longest captions with their positives ({a.main_labels} labels; FIRE Tables 5, 6)",
                [
                    ("", "text"),
                    ("caption", "longtext"),
                    ("chars", "int"),
                    ("words", "int"),
                    ("positives", "int"),
                    ("positive videos", "longtext"),
                ],
                [
                    [
                        r["group"],
                        r["caption"],
                        r["chars"],
                        r["words"],
                        r["positives"],
                        ", ".join(r["videos"]) + (", …" if r["positives"] > len(r["videos"]) else ""),
                    ]
                    for r in a.caption_examples
                ],
                note=(
                    "Ranked by length in characters of the verbatim caption (fireval's earlier variant)"
                    if a.settings.get("examples_by") == "chars"
                    else "Ranked by length in words (FIRE)"
                )
                + f", {a.settings.get('examples_per_group', 3)} per group, ties in collection order; "
                "positives = relevant videos.",
            )
        )
    if a.recommended:
        keys = [k for k in a.recommended[0] if k not in ("run", "measure")]
        out.append(
            Table(
                "budget",
                "Annotation budget: queries needed",
                [("run", "text"), ("measure", "text"), *[(k, "int") for k in keys]],
                [[r["run"], mn(r["measure"]), *[r[k] for k in keys]] for r in a.recommended],
                note="Smallest number of queries whose 95th-percentile bootstrap error is at most Δ "
                "(percentage points; – = more than all queries). Rank measures (MnR) have no target in "
                "points: their error curves are in the figure.",
            )
        )
    return out
