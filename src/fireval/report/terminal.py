"""Terminal tables in the layout of FIRE's Table 1: original, augmented and their delta.

Input is the tidy table of :func:`fireval.metrics.evaluate` (columns run, labels, direction,
unjudged, ties, measure, value), possibly concatenated over runs and label sets; for
:func:`comparison_tables` also its rows as dicts (``Evaluation.records``), which needs no pandas
(the ``fireval evaluate`` start-up stays short).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from fireval.report.nouns import doc_noun

if TYPE_CHECKING:
    import pandas as pd

RANK_MEASURES = ("MdR", "MnR")


def _missing(value: Any) -> bool:
    """None or NaN (what ``pd.isna`` says for a scalar, without pandas)."""
    try:
        return value is None or bool(value != value)
    except TypeError:  # pandas.NA
        return True


def _is_rank(measure: str) -> bool:
    """Rank measures (MdR, MnR) are printed as ranks, lower is better; the others as percentages."""
    return measure.split("@", 1)[0] in RANK_MEASURES


def _fmt(measure: str, value: float | None) -> str:
    if value is None or _missing(value):  # no value for this measure in the row, or NaN
        return "–"
    from fireval.core.units import fixed  # never "-0.0"

    return fixed(value) if _is_rank(measure) else fixed(100 * value)


def _fmt_delta(measure: str, delta: float | None) -> str:
    if delta is None or _missing(delta):  # either side missing (_diff gives None), or NaN
        return "–"
    rank = _is_rank(measure)
    d = delta if rank else 100.0 * delta
    better = d < 0 if rank else d > 0
    colour = "green" if better else ("red" if d != 0 else "dim")
    from fireval.core.units import fixed

    return f"[{colour}]{fixed(d, sign=True)}[/]"


def comparison_tables(
    table: pd.DataFrame | Iterable[Mapping[str, Any]],
    baseline: str = "original",
    unjudged: str = "lower",
    measures: Sequence[str] | None = None,
    marks: Mapping[str, Sequence[str] | Mapping[str, Sequence[str]]] | None = None,
    names: str = "ir",
    not_comparable: Callable[[str, str], object] | None = None,
    width: int | None = None,
) -> list[Table]:
    """One rich table per direction: a row per run and label set, a column per measure.

    ``names="tvr"`` heads C@K columns R@K (TVR papers' name); ``"ir"`` keeps C@K.

    ``marks`` (run → measure names, from :meth:`fireval.checks.ChecksReport.marked_measures`;
    or run → direction → measure names, each direction's table marked by its own list) puts a
    ``†`` after values that depend on a truncated run's tail (expectations over an undefined tie,
    lower bounds where the tail is unretrieved).

    ``not_comparable(run, labels)`` (:meth:`fireval.checks.ChecksReport.not_comparable`; ``labels``
    a label set or ``"Δ"``) puts a ``!`` after every value it finds not comparable (a run failing
    the alignment check, under labels beyond the instance positives).

    When several label sets are present, each run gets one row per set and a Δ row against
    ``baseline``. Values are percentages except ranks (MdR, MnR).

    ``width``: the terminal's width; a direction's measures are split over as many tables as it
    takes for every line to fit (each repeats the run, labels and n columns). None: one table.

    ``table``: the tidy DataFrame, or its rows as dicts (``Evaluation.records``; no pandas).
    """
    rows = [r for r in _as_records(table) if r["unjudged"] == unjudged]
    if measures is not None:
        keep = set(measures)
        rows = [r for r in rows if r["measure"] in keep]
    out: list[Table] = []
    label_sets = list(dict.fromkeys(r["labels"] for r in rows))
    by_direction: dict[Any, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_direction.setdefault(r["direction"], []).append(r)
    for direction, part in by_direction.items():
        cols = list(dict.fromkeys(r["measure"] for r in part))
        chunks = (
            [cols]
            if width is None
            else _fit(
                cols,
                width,
                lambda c, d=direction, p=part: _direction_table(  # type: ignore[misc]
                    d, p, c, label_sets, baseline, unjudged, marks, names, not_comparable, "", width
                ),
            )
        )
        for i, chunk in enumerate(chunks):
            part_no = f" ({i + 1}/{len(chunks)})" if len(chunks) > 1 else ""
            out.append(
                _direction_table(
                    direction,
                    part,
                    chunk,
                    label_sets,
                    baseline,
                    unjudged,
                    marks,
                    names,
                    not_comparable,
                    part_no,
                    width,
                )
            )
    return out


def _fit(cols: list[str], width: int, build: Callable[[list[str]], Table]) -> list[list[str]]:
    """``cols`` split into consecutive chunks whose tables fit ``width`` (one column at least each)."""
    console = Console(width=10_000)
    chunks: list[list[str]] = []
    cur: list[str] = []
    for c in cols:
        trial = [*cur, c]
        if cur and Measurement.get(console, console.options, build(trial)).maximum > width:
            chunks.append(cur)
            cur = [c]
        else:
            cur = trial
    if cur:
        chunks.append(cur)
    return chunks


def _direction_table(
    direction: Any,
    part: list[Mapping[str, Any]],
    cols: list[str],
    label_sets: list[Any],
    baseline: str,
    unjudged: str,
    marks: Mapping[str, Sequence[str] | Mapping[str, Sequence[str]]] | None,
    names: str,
    not_comparable: Callable[[str, str], object] | None,
    part_no: str,
    width: int | None = None,
) -> Table:
    """One direction's table over the measures ``cols`` (see :func:`comparison_tables`)."""
    title = f"{direction}{part_no}: unjudged = {unjudged}; values in %, MdR/MnR in ranks"
    tab = Table(
        title=title,
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=(0, 1),
        min_width=min(len(title), width or len(title)),  # room for the title and caption
    )
    tab.add_column("run")
    tab.add_column("labels")
    has_n = any(not _missing(r.get("n")) for r in part)
    n_of: dict[tuple[Any, Any], str] = {}
    if has_n:  # queries in each mean: the Δ compares rows over the same n
        tab.add_column("n", justify="right")
        ns: dict[tuple[Any, Any], list[Any]] = {}
        for r in part:
            ns.setdefault((r["run"], r["labels"]), []).append(r.get("n"))
        n_of = {key: _n_text(v) for key, v in ns.items()}
    for c in cols:
        tab.add_column(_name(c, names), justify="right")
    marked = False  # any † in this table (then the caption says what it means)
    flagged = False  # any ! in this table
    # (run, labels) -> measure -> first non-missing value; a pair evaluated with none (e.g. a mean
    # made NaN by --zero-relevant nan) still gets its row, of "n/a"
    wide: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in part:
        cell = wide.setdefault((r["run"], r["labels"]), {})
        if not _missing(r["value"]):
            cell.setdefault(r["measure"], r["value"])

    def bad(run: Any, ls: Any) -> str:
        return "!" if not_comparable is not None and not_comparable(str(run), str(ls)) else ""

    for run in dict.fromkeys(r["run"] for r in part):
        base = wide.get((run, baseline))
        for ls in label_sets:
            if (run, ls) not in wide:
                continue
            row = wide[(run, ls)]
            n_cell = [n_of.get((run, ls), "")] if has_n else []
            mark = _marks_for(marks, run, direction)
            marked = marked or any(c in mark for c in cols)
            off = bad(run, ls)
            flagged = flagged or bool(off)
            tab.add_row(
                run, ls, *n_cell, *[_fmt(c, row.get(c)) + ("†" if c in mark else "") + off for c in cols]
            )
            if base is not None and ls != baseline:
                off = bad(run, "Δ")
                flagged = flagged or bool(off)
                tab.add_row(
                    "",
                    "Δ",
                    *([""] if has_n else []),
                    *[_fmt_delta(c, _diff(row.get(c), base.get(c))) + off for c in cols],
                )
        tab.add_section()
    notes = []
    if len(label_sets) > 1 and baseline in label_sets:
        notes.append(f"Δ: each label set minus {baseline}, in points.")
    notes.append(
        "R@K = C@K: any relevant in the top K." if names == "tvr" else "C@K is what TVR papers call R@K."
    )
    if marked:
        notes.append(
            "† depends on a truncated run's tail below its top k: an expectation over its undefined "
            "order where the tail is a tie, a lower bound where it is unretrieved (-inf, ranked lists); "
            "see `fireval check`."
        )
    if flagged:
        notes.append(
            "! not comparable: the run fails the alignment check (rows or columns probably in another order "
            "than the collection), so labels beyond the instance positives land on the wrong pairs."
        )
    tab.caption = " ".join(notes)
    tab.caption_justify = "left"
    return tab


def _marks_for(
    marks: Mapping[str, Sequence[str] | Mapping[str, Sequence[str]]] | None, run: Any, direction: Any
) -> set[str]:
    """The measures to mark for ``run`` in ``direction``'s table (see :func:`comparison_tables`)."""
    m = (marks or {}).get(run, ())
    return set(m.get(str(direction), ()) if isinstance(m, Mapping) else m)


def _name(measure: str, names: str) -> str:
    """``display_name`` that leaves names it cannot parse (aggregates, presets' extras) as they are."""
    from fireval.core.errors import FirevalError
    from fireval.metrics.measures import display_name

    try:
        return display_name(measure, names)
    except FirevalError:
        return measure


def _as_records(table: pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows of a tidy table as dicts (a DataFrame's, or the records themselves)."""
    to_dict = getattr(table, "to_dict", None)
    if callable(to_dict):
        return list(to_dict(orient="records"))
    return list(table)  # type: ignore[arg-type]


def _diff(a: Any, b: Any) -> float | None:
    return None if _missing(a) or _missing(b) else float(a - b)


def _n_text(ns: Iterable[Any]) -> str:
    """The number of queries behind a row's means (a range when measures differ, e.g. judged@K)."""
    v = [int(x) for x in ns if not _missing(x)]
    if not v:
        return ""
    return str(max(v)) if min(v) == max(v) else f"{min(v)}–{max(v)}"


#: short headers of the bounds table's columns when it must fit a terminal (its title says what they are)
_BOUNDS_SHORT = {
    "worst": "worst",
    "lower": "irrel.",
    "condensed": "cond.",
    "upper": "rel.",
    "best": "best",
    "reaches": "cond. reaches",
}


def bounds_tables(
    table: pd.DataFrame,
    measures: Sequence[str] | None = None,
    names: str = "ir",
    width: int | None = None,
    not_comparable: Callable[[str, str], object] | None = None,
) -> list[Table]:
    """:func:`bounds_table`, fitted to ``width`` columns (None, or when it fits: that one table).

    Fitted: one table per direction (its name in the title, no direction column), the better side
    as an arrow after the measure (``C@1 ↑``, ``MnR ↓``), short column heads explained in the
    title (``irrel.``/``rel.``: unjudged counted irrelevant/relevant, ``cond.``: removed), a compact
    box, and the value columns split over as many tables as it takes (each repeating run, labels
    and measure), as :func:`comparison_tables` splits a direction's measures.
    """
    full = bounds_table(table, measures, names, not_comparable=not_comparable)
    console = Console(width=10_000)
    if width is None or Measurement.get(console, console.options, full).maximum <= width:
        return [full]  # the full table when it fits
    t = table if measures is None else table[table["measure"].isin(list(measures))]
    out: list[Table] = []
    for direction in dict.fromkeys(t["direction"].astype(str)):
        part = t[t["direction"].astype(str) == direction]
        cols = [c for c in (*_BOUNDS_MODES, "reaches") if c in set(part["unjudged"]) or c == "reaches"]
        cols = [c for c in cols if c != "reaches" or ("condensed" in cols and len(cols) > 2)]

        def build(chunk: list[str], p: pd.DataFrame = part, d: str = direction, tag: str = "") -> Table:
            return bounds_table(p, None, names, compact=(d, chunk, width, tag), not_comparable=not_comparable)  # type: ignore[arg-type]

        chunks = _fit(cols, width, build)
        for i, chunk in enumerate(chunks):
            tag = f" ({i + 1}/{len(chunks)})" if len(chunks) > 1 else ""
            tab = build(chunk, tag=tag)
            if i < len(chunks) - 1:
                tab.caption = None  # the notes once, under the direction's last part
            out.append(tab)
    return out


_BOUNDS_MODES = ("worst", "lower", "condensed", "upper", "best")


def bounds_table(
    table: pd.DataFrame,
    measures: Sequence[str] | None = None,
    names: str = "ir",
    *,
    compact: tuple[str, list[str], int, str] | None = None,
    not_comparable: Callable[[str, str], object] | None = None,
) -> Table:
    """The value with unjudged pairs counted irrelevant, removed (condensed) and counted relevant.

    Columns are named for what they compute (``unjudged irrelevant`` = ``unjudged=lower``,
    ``unjudged relevant`` = ``upper``). They are the *pessimistic* and *optimistic* bounds over
    every labelling of the unjudged videos only for measures that a new relevant doc can only
    improve (:attr:`fireval.metrics.measures.Measure.monotone_in_relevance`: C@K, P@K, RR,
    MdR, MnR, meanR, geoC). For Recall@K, AP, nDCG, R-Prec (a new relevant doc also enlarges
    |relevant| or the ideal ranking: Recall@10 with every unjudged video relevant is about
    10/|videos|) and judged@K they are not bounds: such measures get a ``‡`` and no
    ``condensed reaches``. For MdR/MnR the pessimistic value is the larger number, so the table
    names the better side per measure (``better``). ``condensed reaches`` names the bound the
    condensed value (unjudged removed) equals: ``optimistic`` when every ranked-above unjudged
    video is dropped and the first judged video is relevant, ``both`` when the bounds coincide
    (nothing unjudged matters). The caption explains a degenerate condensed value (every query
    at the best possible value, as with instance labels only, where each caption's one judged
    video is relevant).

    With ``unjudged=worst``/``best`` in the table (:mod:`fireval.metrics.bounds`) two outer
    columns hold the *exact* worst and best values over every labelling of the unjudged docs,
    for every measure including the ``‡`` ones (AP@R and AP_hits@K have none: ``–``);
    ``condensed reaches`` then compares condensed with them (``outside`` when it lies beyond
    one: removing unjudged docs is no labelling).

    ``compact`` (direction, columns shown, width, part tag): the fitted form of
    :func:`bounds_tables`; the notes are computed over every column of ``table`` either way.
    ``not_comparable(run, labels)``: a ``!`` after the values it finds not comparable, as in
    :func:`comparison_tables`.
    """
    t = table if measures is None else table[table["measure"].isin(list(measures))]
    docs = doc_noun(sorted(set(t["direction"].astype(str))), plural=True)  # t2v videos, v2t captions
    present = set(t["unjudged"])
    exact = bool({"worst", "best"} & present)
    if exact:
        title = (
            f"Unjudged {docs}: worst and best over every labelling (exact), counted irrelevant, removed "
            f"(condensed), counted relevant (values in %, MdR/MnR in ranks)"
        )
    else:
        title = (
            f"Unjudged {docs} counted irrelevant, removed (condensed), counted relevant (values in %, "
            f"MdR/MnR in ranks); the two outer columns bound every labelling of the unjudged {docs} only "
            "for measures without ‡"
        )
    modes = [m for m in _BOUNDS_MODES if m in present]
    show = set(compact[1]) if compact is not None else {*modes, "reaches"}
    if compact is None:
        tab = Table(title=title, title_justify="left", header_style="bold", min_width=min(len(title), 100))
        for c in ("run", "labels", "direction", "measure", "better"):
            tab.add_column(c)
    else:
        heads = ", ".join(
            f"{_BOUNDS_SHORT[m]} = {w}"
            for m, w in (
                ("worst", "worst (exact)"),
                ("lower", "unjudged irrelevant"),
                ("condensed", "unjudged removed (condensed)"),
                ("upper", "unjudged relevant"),
                ("best", "best (exact)"),
                ("reaches", "the bound the condensed value equals"),
            )
            if m in show
        )
        tab = Table(
            title=f"{compact[0]}{compact[3]}: unjudged {docs}; {heads} (values in %, MdR/MnR in ranks)",
            title_justify="left",
            header_style="bold",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            min_width=compact[2] - 1,  # title and notes wrap at the terminal's width, not the columns'
        )
        for c in ("run", "labels", "measure"):
            tab.add_column(c)
    header = {
        "worst": "worst (exact)",
        "lower": "unjudged irrelevant",
        "condensed": "condensed",
        "upper": "unjudged relevant",
        "best": "best (exact)",
    }
    if compact is not None:
        header = {m: _BOUNDS_SHORT[m] for m in header}
    for m in modes:
        if m in show:
            tab.add_column(header[m], justify="right")
    if "condensed" in modes and len(modes) > 1 and "reaches" in show:
        tab.add_column("condensed reaches" if compact is None else _BOUNDS_SHORT["reaches"])
    wide = t.pivot_table(
        index=["run", "labels", "direction", "measure"],
        columns="unjudged",
        values="value",
        aggfunc="first",
        sort=False,
    )
    degenerate: dict[str, bool] = {}
    unbounded = False  # any ‡ row (then the caption says what it means)
    flagged = False  # any ! value
    for (run, labels, direction, measure), row in wide.iterrows():
        rank = _is_rank(measure)
        bounded = _bounded(measure)
        unbounded = unbounded or not bounded
        bang = "!" if not_comparable is not None and not_comparable(str(run), str(labels)) else ""
        flagged = flagged or bool(bang)
        cells = [_fmt(measure, row.get(m)) + bang for m in modes if m in show]
        extra = []
        if "condensed" in modes and len(modes) > 1:
            has_exact = not measure.startswith("judged@") and any(
                not _missing(row.get(m)) for m in ("worst", "best") if m in modes
            )
            extra.append(_reached(measure, row, modes) if bounded or has_exact else "– (not bounds)")
            best = 1.0  # best possible: 100% for scores, rank 1 for MdR/MnR
            c = row.get("condensed")
            if not _missing(c) and measure.startswith("C@"):  # C@K (R@K): 100 means every query solved
                degenerate[labels] = degenerate.get(labels, True) and abs(float(c) - best) < 1e-12
        if "reaches" not in show:
            extra = []
        name = _name(measure, names) + ("" if bounded else "‡")
        if compact is not None:
            tab.add_row(run, labels, f"{name} {'↓' if rank else '↑'}", *cells, *extra)
            continue
        tab.add_row(run, labels, direction, name, "lower ↓" if rank else "higher ↑", *cells, *extra)
    notes = []
    if unbounded and len(modes) > 1 and exact:
        notes.append(
            f"‡ unjudged irrelevant / relevant do not bound these: counting unjudged {docs} relevant also "
            "enlarges |relevant| (Recall, AP, nDCG, R-Prec can fall); judged@K is no relevance measure."
        )
    elif unbounded and len(modes) > 1:
        notes.append(
            f"‡ not bounded by these columns: counting unjudged {docs} relevant also enlarges |relevant| "
            "(Recall, AP, nDCG, R-Prec can fall), and judged@K is no relevance measure."
        )
    if exact:
        notes.append(
            f"worst / best (exact): the extremes over every labelling of the unjudged {docs} (each irrelevant, "
            "or relevant at the top grade), per query and over which queries have a relevant doc; meanR/geoC "
            "combine such bounds (valid, exact when every query has a judged relevant doc)."
        )
    flat = [ls for ls, d in degenerate.items() if d]
    if flat:
        notes.append(
            f"condensed C@K = 100 with {', '.join(flat)} labels: without unjudged {docs} only the relevant "
            + ("one is left." if docs == "videos" else "ones are left.")
        )
    if flagged:
        notes.append(
            "! not comparable: the run fails the alignment check (rows or columns probably in another order "
            "than the collection), so labels beyond the instance positives land on the wrong pairs."
        )
    if compact is not None:
        notes.insert(0, "↑ higher is better, ↓ lower is better.")
    if notes:
        tab.caption = "\n".join(notes)
        tab.caption_justify = "left"
    return tab


def _bounded(measure: str) -> bool:
    """Whether unjudged-as-irrelevant and unjudged-as-relevant bound ``measure`` (see :func:`bounds_table`)."""
    from fireval.core.errors import FirevalError
    from fireval.metrics.measures import parse_measure

    try:
        return parse_measure(measure).monotone_in_relevance
    except FirevalError:  # a preset's extra column: no claim
        return False


def _reached(measure: str, row: pd.Series, modes: Sequence[str]) -> str:
    """Which bound the condensed value equals: pessimistic, optimistic, both, or neither (between)."""
    c = row.get("condensed")
    lo = row.get("lower") if "lower" in modes else None
    hi = row.get("upper") if "upper" in modes else None
    if _missing(c):
        return "–"
    if "worst" in modes or "best" in modes:  # the exact bounds, when they are in the table
        lo = row.get("worst") if "worst" in modes else None
        hi = row.get("best") if "best" in modes else None
        lo = None if lo is None or _missing(lo) else lo
        hi = None if hi is None or _missing(hi) else hi
        if lo is None and hi is None:
            return "–"
        sign = -1.0 if _is_rank(measure) else 1.0  # ranks: the worst is the larger number
        beyond = (lo is not None and sign * (float(c) - float(lo)) < -1e-12) or (
            hi is not None and sign * (float(c) - float(hi)) > 1e-12
        )
        if beyond:
            return "outside"
    at_lo = lo is not None and not _missing(lo) and abs(float(c) - float(lo)) < 1e-12
    at_hi = hi is not None and not _missing(hi) and abs(float(c) - float(hi)) < 1e-12
    if at_lo and at_hi:
        return "both"
    if at_lo:
        return "pessimistic"
    if at_hi:
        return "optimistic"
    return "between" if lo is not None and hi is not None else "–"


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


def agreement_tables(stats: dict, max_disagreements: int = 20, width: int | None = None) -> list[Table]:
    """``fireval judgments stats``: agreement (α always with its CI), by number of labels, disagreements.

    ``stats`` is :func:`fireval.judging.agreement.agreement_stats`. ``width``: the terminal's
    width; a disagreements table wider than it is set to it, its queries and labels wrapped
    (video ids and adjudications are never cut).
    """
    from fireval.core.units import fixed
    from fireval.judging.agreement import format_alpha

    def share(v: float | None) -> str:
        return "–" if v is None else f"{100 * v:.1f}%"

    main = Table(title=f"Agreement ({stats['source']})", title_justify="left", header_style="bold")
    main.add_column("statistic")
    main.add_column("value", justify="right")
    for name, val in (
        ("items", str(stats["items"])),
        ("votes (adjudications excluded)", str(stats["votes"])),
        ("items with 2+ labels", str(stats["pairable_items"])),
        ("unanimous (percent agreement)", share(stats["unanimous"])),
        ("pairwise agreement", share(stats["pairwise"])),
        ("Krippendorff's α (nominal)", format_alpha(stats)),
        ("bootstrap", f"{stats['n_resamples']} resamples of items, seed {stats['seed']}"),
        (
            "decided / adjudicated / unresolved",
            f"{stats['decided']} / {stats['adjudicated']} / {stats['unresolved']}",
        ),
    ):
        main.add_row(name, val)
    by = Table(title="Agreement by number of labels (FIRE Fig. 7)", title_justify="left", header_style="bold")
    for c in ("labels", "items", "unanimous", "pairwise", "α"):
        by.add_column(c, justify="right")
    for row in stats["by_labels"]:
        a = row["alpha"]
        by.add_row(
            str(row["labels"]),
            str(row["items"]),
            share(row["unanimous"]),
            share(row["pairwise"]),
            "–" if a is None else fixed(a, 2),
        )
    out = [main, by]
    dis = stats["disagreements"]
    if dis:
        shown = dis[:max_disagreements]
        more = f" (first {len(shown)} of {len(dis)}; all in --json)" if len(dis) > len(shown) else ""
        t = Table(title=f"Disagreements{more}", title_justify="left", header_style="bold")
        for c in ("query", "video", "labels", "adjudication"):
            t.add_column(
                c,
                overflow="fold",
                no_wrap=c in ("video", "adjudication"),
                min_width=max(20, (width or 0) // 3) if c == "query" else None,
            )
        for d in shown:
            t.add_row(
                escape(d["query"]),
                escape(d["video_id"]),
                ", ".join(d["annotator_labels"]),
                d["adjudication"] or "–",
            )
        console = Console(width=10_000)
        if width is not None and Measurement.get(console, console.options, t).maximum > width:
            t.width = width  # rich shares it out: queries and labels wrap
        out.append(t)
    return out


def fit_tsv(lines: Sequence[str], width: int, keep: int = 1, *, align: bool = False) -> list[str]:
    """Tab-separated lines (a header first) as they are when each fits ``width`` once tabs are
    expanded; else as aligned columns split into blocks that fit, each block repeating the first
    ``keep`` columns (the row's key) and the header. Wrapping a wide TSV at 80 columns makes it
    unreadable; the tab-separated form is kept whenever it fits, so pipes still ``cut -f``.
    ``align``: aligned columns even when the tab-separated lines fit (a table for the eye)."""
    if not align and all(len(ln.expandtabs()) <= width for ln in lines):
        return list(lines)
    rows = [ln.split("\t") for ln in lines]
    n = max(len(r) for r in rows)
    rows = [r + [""] * (n - len(r)) for r in rows]
    w = [max(len(r[i]) for r in rows) for i in range(n)]
    base = sum(w[:keep]) + 2 * keep
    blocks: list[list[int]] = []
    cur: list[int] = []
    used = base
    for i in range(keep, n):
        if cur and used + w[i] + 2 > width:
            blocks.append(cur)
            cur, used = [], base
        cur.append(i)
        used += w[i] + 2
    if cur:
        blocks.append(cur)
    out: list[str] = []
    for b, block in enumerate(blocks):
        if b:
            out.append("")
        for r in rows:
            cells = [r[i].ljust(w[i]) for i in range(keep)] + [r[i].rjust(w[i]) for i in block]
            out.append("  ".join(cells).rstrip())
    return out


def wrap(text: str, width: int) -> str:
    """``text`` wrapped to ``width`` columns, continuation lines indented by two spaces."""
    import textwrap

    return textwrap.fill(text, max(40, width), subsequent_indent="  ", break_on_hyphens=False)
