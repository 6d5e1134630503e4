"""The paper table: the report's main results table, to paste into a paper.

Runs as rows; directions × measures as columns; each label set and the Δ (last − first label
set, per query over the common queries, :mod:`fireval.analysis.trust`) a section of rows, so
three runs × R@1/5/10 in both directions fit one column of a two-column paper. The best value
per column is bold (lowest for MdR/MnR), a dagger marks values significantly worse than the
best (:mod:`fireval.analysis.paper`), a double dagger values that depend on a truncated run's
tail, and ``!`` the values of a run that fails the alignment check under labels beyond the
instance positives and its Δ (:func:`not_comparable_cell`, the rule of
:meth:`fireval.checks.ChecksReport.not_comparable`): never bold, never best. ``--columns``
(:func:`parse_columns`) picks measures and groups. The table carries a full note (Markdown,
HTML) and a short one of at most 40 words (``meta["short_note"]``, LaTeX).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

from fireval.analysis.paper import DirectionSummary, lower_is_better
from fireval.analysis.trust import TrustAnalysis
from fireval.metrics.measures import display_name
from fireval.report.cells import (
    MARK,
    PAIR_MARK,
    TRUNC_MARK,
    UNITS_NOTE,
    Marks,
    Pairs,
    Table,
    _marked,
    _mcell,
    _not_comparable,
    direction_columns,
    marks_note,
)
from fireval.report.nouns import doc_noun

#: ``--columns``: measures to show and groups (label sets, ``Δ``) to show; an empty part means all
Columns = tuple[Sequence[str], Sequence[str]]


def paper_table(
    a: TrustAnalysis,
    names: str = "ir",
    marks: Marks | None = None,
    pairs: Pairs | None = None,
    unaligned: frozenset[str] | Sequence[str] = frozenset(),
    columns: Columns | None = None,
) -> Table:
    """Runs × (direction, measure), one section of rows per label set and Δ: the table for a paper.

    The label sets (original / augmented) and their Δ are sections of rows (``Table.sections``),
    so three runs × R@1/5/10 in both directions fit one column of a two-column paper.
    ``pairs``: run pairs the input checks found not comparable per query; a run gets no dagger
    when it is not comparable with a best run of its column (its paired test is meaningless).
    ``unaligned``: runs failing the alignment check: their cells under labels beyond the instance
    positives and their Δ carry ``!`` and are never bold (:func:`not_comparable_cell`).
    ``columns``: ``(measures, groups)`` to show (:func:`parse_columns`); None: all.
    """
    dirs = list(a.paper)
    sums: list[DirectionSummary] = [a.paper[d] for d in dirs]
    lnames = a.label_sets
    groups_l = [*lnames, "Δ"] if len(lnames) > 1 else list(lnames)
    ms = list(a.measures)
    if columns is not None:
        ms = [m for m in ms if not columns[0] or m in columns[0]]
        groups_l = [g for g in groups_l if not columns[1] or g in columns[1]]
    cols, top = direction_columns(dirs, ms, names)
    rows: list[list[Any]] = []
    sections: list[tuple[str, int]] = []
    flagged = False
    for g in groups_l:
        sections.append((g, len(a.runs)) if len(groups_l) > 1 else ("", len(a.runs)))
        for run in a.runs:
            row: list[Any] = [run]
            bad = not_comparable_cell(unaligned, run, g)
            flagged = flagged or bad
            for sm in sums:
                for m in ms:
                    trunc = TRUNC_MARK if _marked(marks, sm.direction, run, m) else ""
                    if g == "Δ":
                        c = _mcell(m, sm.delta.get(run, {}).get(m, float("nan")), diff=True)
                        c.mark = trunc + (PAIR_MARK if bad else "")
                        row.append(c)
                        continue
                    c = _mcell(m, sm.values[g][run][m])
                    best = [b for b in sm.best[g][m] if not not_comparable_cell(unaligned, b, g)]
                    c.bold = run in best and len(a.runs) > 1 and not bad
                    paired = not any(_not_comparable(pairs, run, b) for b in best)
                    c.mark = (MARK if run in sm.worse[g][m] and paired and not bad else "") + trunc
                    c.mark += PAIR_MARK if bad else ""
                    row.append(c)
            rows.append(row)
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
    sm0 = sums[0] if sums else None
    ns = {d: max(s.n[lnames[0]].values()) if s.n[lnames[0]] else 0 for d, s in zip(dirs, sums, strict=True)}
    n_short = (
        f"n = {ns[dirs[0]]}"
        if len(set(ns.values())) == 1
        else ", ".join(f"{d} n = {n}" for d, n in ns.items())
    )
    short: list[str] = [
        f"Values in % over {n_short} queries"
        + ("; MdR, MnR: ranks (↓)." if any(lower_is_better(m) for m in ms) else ".")
    ]
    if len(a.runs) > 1 and sm0 is not None:
        resamples = a.settings["n_resamples"]
        note += (
            f" Bold: best per column. {MARK}: significantly worse than the best run of its column "
            f"({sm0.test_description}, Holm-corrected over the run pairs of each measure, "
            f"α = {sm0.alpha:g}, {resamples} resamples, seed {a.settings['seed']}; MdR is not tested)."
        )
        short.append(
            f"Bold: best; {MARK}: significantly worse ({'randomisation' if sm0.test == 'randomisation' else 'bootstrap'} "
            f"test, Holm, α = {sm0.alpha:g})."
        )
        bad_pairs = [f"{x} vs {y}" for x, y in combinations(a.runs, 2) if _not_comparable(pairs, x, y)]
        if bad_pairs:
            note += (
                f" No {MARK} between runs that the input checks found not comparable per query "
                f"({', '.join(bad_pairs)}): their paired test would pair different queries."
            )
    if len(lnames) > 1:
        dn = "; ".join(
            f"{d}: n = {max(s.delta_n.values()) if s.delta_n else 0}" for d, s in zip(dirs, sums, strict=True)
        )
        note += f" Δ = {lnames[-1]} − {lnames[0]} per query over those same queries ({dn})."
        if "Δ" in groups_l:
            short.append(f"Δ = {lnames[-1]} − {lnames[0]}.")
    if flagged:
        off = [r for r in a.runs if r in set(unaligned)]
        note += (
            f" {PAIR_MARK}: {', '.join(off)} failed the alignment check (rows or columns probably in another "
            "order than the collection), so labels beyond the instance positives land on the wrong pairs: "
            "these values and their Δ are not comparable, never bold."
        )
        short.append(f"{PAIR_MARK}: fails the alignment check; not comparable.")
    tmarks = {d: (marks or {}).get(d, {}) for d in dirs}
    note += marks_note(tmarks, names)
    if any(any(by_run.values()) for by_run in tmarks.values()):
        short.append(f"{TRUNC_MARK}: depends on a truncated run's tail.")
    what = ", ".join(display_name(m, names) for m in ms)
    return Table(
        "paper",
        f"Results ({' and '.join(dirs)}; {', '.join(lnames)} labels): {what}",
        cols,
        rows,
        note=note,
        groups=[top],
        meta={"names": names, "short_note": " ".join(short)},
        sections=sections,
    )


_GROUP_ALIASES = {"delta": "Δ", "Δ": "Δ", "diff": "Δ"}


def parse_columns(
    spec: str, measures: Sequence[str], label_sets: Sequence[str], option: str = "--columns"
) -> Columns:
    """``--columns``: comma-separated measures and groups, e.g. ``R@1,R@5,augmented,delta``.

    An item that names a label set (``original``, ``augmented``) or the difference (``delta``,
    ``Δ``) picks that group of rows; any other item is a measure (``R@K`` is ``C@K``), which must be
    one of ``measures``. Without any measure every measure is shown; without any group every group.
    """
    from fireval.core.errors import FirevalError
    from fireval.metrics.measures import parse_measure

    ms: list[str] = []
    gs: list[str] = []
    for item in (x.strip() for x in spec.split(",")):
        if not item:
            continue
        g = _GROUP_ALIASES.get(item.lower(), _GROUP_ALIASES.get(item))
        if g is not None or item in label_sets:
            gs.append(g or item)
            continue
        try:
            m = str(parse_measure(item, "tvr"))
        except FirevalError as e:
            raise FirevalError(
                f"{option}: {item!r} is neither a label set ({', '.join(label_sets)}, delta) nor a measure: {e}"
            ) from None
        if m not in measures:
            raise FirevalError(
                f"{option}: {item!r} is not among the measures computed ({', '.join(measures)}; see -m)"
            )
        ms.append(m)
    if not ms and not gs:
        raise FirevalError(f"{option}: no measure or group in {spec!r}")
    return list(dict.fromkeys(ms)), list(dict.fromkeys(gs))


def not_comparable_cell(unaligned: frozenset[str] | Sequence[str], run: str, group: str) -> bool:
    """Whether ``run``'s value in label-set group ``group`` (a label set or ``Δ``) depends on an alignment
    the input checks found broken (the rule of :meth:`fireval.checks.ChecksReport.not_comparable`)."""
    from fireval.checks.runner import INSTANCE_LABELS

    return run in unaligned and group != INSTANCE_LABELS
