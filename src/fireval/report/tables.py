"""The report's tables, built once from a :class:`~fireval.analysis.trust.TrustAnalysis`.

Each :class:`Table` is format-neutral (columns with a kind, raw cell values); the HTML,
Markdown and LaTeX writers only differ in how they print a cell. Scores are printed as
percentages with one decimal, as TVR papers do; the rank measures MdR and MnR as ranks.

The first table is the *paper table* (:func:`paper_table`): runs as rows; measures as columns
grouped by direction and, with extra labels, by original / augmented / Δ; the best value per
column in bold (lowest for MdR/MnR); a dagger on values significantly worse than the best
(:mod:`fireval.analysis.paper`). With several label sets every label set's mean and the Δ are
over the same queries (:mod:`fireval.analysis.trust`), and the note states their number n.
A double dagger marks values that depend on a truncated run's tail (expectations over an undefined
tie, lower bounds where the tail is unretrieved)
(``marks``: direction → run → measure names, from :func:`fireval.report.build.truncation_marks`),
in the paper table and the intervals table, with a footnote. A cell that needs its own kind, bold
or marker is a :class:`Cell`. Measure names follow ``names``: ``"tvr"`` prints C@K as R@K,
``"ir"`` keeps C@K.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from fireval.analysis.paper import DirectionSummary, lower_is_better
from fireval.analysis.trust import TrustAnalysis, split_pair
from fireval.metrics.measures import display_name, parse_measure
from fireval.report.nouns import doc_noun

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


def paper_table(
    a: TrustAnalysis, names: str = "ir", marks: Marks | None = None, pairs: Pairs | None = None
) -> Table:
    """Runs × (direction, label set, measure): the table to paste into a paper.

    ``pairs``: run pairs the input checks found not comparable per query; a run gets no dagger
    when it is not comparable with a best run of its column (its paired test is meaningless).
    """
    dirs = list(a.paper)
    sums: list[DirectionSummary] = [a.paper[d] for d in dirs]
    lnames = a.label_sets
    groups_l = [*lnames, "Δ"] if len(lnames) > 1 else list(lnames)
    ms = a.measures
    columns: list[tuple[str, str]] = [("run", "text")]
    top: list[tuple[str, int]] = [("", 1)]
    mid: list[tuple[str, int]] = [("", 1)]
    for d in dirs:
        top.append((d, len(groups_l) * len(ms)))
        for g in groups_l:
            mid.append((g, len(ms)))
            for m in ms:
                columns.append((measure_header(m, names), "diff" if g == "Δ" else "score"))
    rows: list[list[Any]] = []
    for run in a.runs:
        row: list[Any] = [run]
        for sm in sums:
            for g in groups_l:
                for m in ms:
                    trunc = TRUNC_MARK if _marked(marks, sm.direction, run, m) else ""
                    if g == "Δ":
                        c = _mcell(m, sm.delta.get(run, {}).get(m, float("nan")), diff=True)
                        c.mark = trunc
                        row.append(c)
                        continue
                    c = _mcell(m, sm.values[g][run][m])
                    c.bold = run in sm.best[g][m] and len(a.runs) > 1
                    paired = not any(_not_comparable(pairs, run, b) for b in sm.best[g][m])
                    c.mark = (MARK if run in sm.worse[g][m] and paired else "") + trunc
                    row.append(c)
        rows.append(row)
    groups = [top] + ([mid] if len(groups_l) > 1 else [])
    sm0 = sums[0] if sums else None
    n_text = "; ".join(
        f"{d}: " + ", ".join(f"{ln} n = {max(s.n[ln].values()) if s.n[ln] else 0}" for ln in lnames)
        for d, s in zip(dirs, sums, strict=True)
    )
    if len(lnames) > 1:
        common = "; ".join(
            f"{d}: n = {max(s.n[lnames[0]].values()) if s.n[lnames[0]] else 0}"
            for d, s in zip(dirs, sums, strict=True)
        )
        note = (
            f"{UNITS_NOTE} Every label set is averaged over the same queries, those with at least one "
            f"relevant item under any label set ({common}); a query with none under a label set counts "
            "as a miss there (0; MdR/MnR: rank = items + 1), as in `fireval evaluate`. "
            "Unjudged pairs count as irrelevant."
        )
    else:
        note = (
            f"{UNITS_NOTE} Means over the queries with at least one relevant {doc_noun(dirs)} ({n_text}); "
            "unjudged pairs count as irrelevant."
        )
    if len(a.runs) > 1 and sm0 is not None:
        resamples = a.settings["n_resamples"]
        note += (
            f" Bold: best per column. {MARK}: significantly worse than the best run of its column "
            f"({sm0.test_description}, Holm-corrected over the run pairs of each measure, "
            f"α = {sm0.alpha:g}, {resamples} resamples, seed {a.settings['seed']}; MdR is not tested)."
        )
        bad = [f"{x} vs {y}" for x, y in combinations(a.runs, 2) if _not_comparable(pairs, x, y)]
        if bad:
            note += (
                f" No {MARK} between runs that the input checks found not comparable per query "
                f"({', '.join(bad)}): their paired test would pair different queries."
            )
    if len(lnames) > 1:
        dn = "; ".join(
            f"{d}: n = {max(s.delta_n.values()) if s.delta_n else 0}" for d, s in zip(dirs, sums, strict=True)
        )
        note += f" Δ = {lnames[-1]} − {lnames[0]} per query over those same queries ({dn})."
    note += marks_note({d: (marks or {}).get(d, {}) for d in dirs}, names)
    what = ", ".join(display_name(m, names) for m in ms)
    return Table(
        "paper",
        f"Results ({' and '.join(dirs)}; {', '.join(lnames)} labels): {what}",
        columns,
        rows,
        note=note,
        groups=groups,
        meta={"names": names},
    )


def build_tables(
    a: TrustAnalysis,
    names: str = "ir",
    marks: Marks | None = None,
    pairs: Pairs | None = None,
    unaligned: frozenset[str] = frozenset(),
) -> list[Table]:
    """All tables of the report, in report order (empty analyses are left out).

    ``names``: ``"tvr"`` (C@K printed as R@K) or ``"ir"`` (fireval's names). ``marks``: direction
    → run → measures whose values are expectations over a truncated tail (``‡`` and a footnote).
    ``pairs``: run pairs the input checks found not comparable per query
    (:meth:`fireval.checks.ChecksReport.misaligned_pairs`): no dagger between them in the paper
    table, and their rows of the significance, overlap and breakdown tables carry ``!``.
    ``unaligned``: runs that fail the alignment check (:meth:`fireval.checks.ChecksReport.unaligned_runs`);
    the breakdowns by caption (length, train similarity) that show them carry ``!`` too, even
    between two runs that agree with each other (GRAM and VAST share one wrong order).
    """
    main_dir = a.settings["direction"]

    def tcell(run: str, measure: str, value: Any) -> Cell:
        c = _mcell(measure, value)
        c.mark = TRUNC_MARK if _marked(marks, main_dir, run, measure) else ""
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
    out.append(paper_table(a, names, marks, pairs))

    def pcell(x: str, y: str) -> Cell:
        """The B cell of a pair's row: ``!`` when the pair is not comparable per query."""
        return Cell(y, "text", mark=PAIR_MARK if _not_comparable(pairs, x, y) else "")

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
                    tcell(r["run"], r["measure"], r["mean"]),
                    tcell(r["run"], r["measure"], r["low"]),
                    tcell(r["run"], r["measure"], r["high"]),
                    r["n"],
                ]
                for r in a.intervals
            ],
            note=f"{UNITS_NOTE} Percentile bootstrap over queries of the mean (MdR, a median, has none), "
            f"{a.settings['n_resamples']} resamples, seed {a.settings['seed']}."
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
                        pcell(c["a"], c["b"]),
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
                + pairs_note(pairs, list(dict.fromkeys((c["a"], c["b"]) for c in a.comparisons))),
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
                [[r["a"], pcell(r["a"], r["b"]), r["overlap"], r["rbo"]] for r in a.overlap],
                note="In % (0–100), mean over queries; RBO is the extrapolated RBO_ext of Webber et al. (2010), Eq. 32."
                + pairs_note(pairs, [(r["a"], r["b"]) for r in a.overlap]),
            )
        )
    out.append(
        Table(
            "judged",
            f"judged@{a.settings['k']}",
            [("labels", "text"), ("run", "text"), (f"judged@{a.settings['k']}", "score")],
            [[r["labels"], r["run"], r["judged"]] for r in a.judged],
            note="Share of each run's top-K that carries a label, in %.",
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
                        _mcell(r["measure"], r["all_labels"]),
                        _mcell(r["measure"], r["leave_one_out"]),
                        _mcell(r["measure"], r["drop"], diff=True),
                    ]
                    for r in a.pool_bias
                ],
                note=f"{UNITS_NOTE} {_pool_note(a)}",
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
                note="Mean of the top-10 char 5-gram TF-IDF cosines of each test caption to the training captions (0–1).",
            )
        )
    if a.correctness_similarity:
        out.append(
            Table(
                "train_similarity",
                f"{ck} by train–test caption similarity ({a.main_labels} labels; FIRE Fig. 8)",
                [
                    ("max similarity", "text"),
                    ("queries", "int"),
                    *[(r + (PAIR_MARK if r in unaligned else ""), "score") for r in a.runs],
                ],
                [[r["bin"], r["n"], *[r[x] for x in a.runs]] for r in a.correctness_similarity],
                note=f"{ck} in % per bin of each test caption's highest char 5-gram TF-IDF cosine (0–1) to any "
                "training caption; equal-count bins." + unaligned_note([r for r in a.runs if r in unaligned]),
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
                note="Length in characters of the verbatim caption; positives = relevant videos.",
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
