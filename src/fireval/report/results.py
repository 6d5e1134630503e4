"""``fireval evaluate --latex/--markdown``: the evaluation as a paper table, without the trust analysis.

Layout as the report's paper table (:func:`fireval.report.paper.paper_table`): runs as rows;
directions × measures as columns; each label set and the Δ (last label set − first, per run, of
the printed means) a section of rows. The best value per column is bold (lowest for MdR/MnR),
among the runs whose value is comparable: a run that fails the alignment check
(:meth:`fireval.checks.ChecksReport.not_comparable`) carries ``!`` under labels beyond the
instance positives and in its Δ, and is never bold. No significance marks (`evaluate` runs no
tests; `fireval report` does). Values in % (MdR, MnR: ranks). A table wider than the text width
at 8 pt is split into one table per direction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fireval.report.cells import PAIR_MARK, TRUNC_MARK, Cell, Table, direction_columns
from fireval.report.paper import parse_columns

#: the default columns of the paper table, where computed (TVR papers' R@1/5/10, MdR, MnR)
DEFAULT_MEASURES = ("C@1", "C@5", "C@10", "MdR", "MnR")


def results_tables(
    records: Iterable[Mapping[str, Any]],
    *,
    columns: str | None = None,
    unjudged: str = "lower",
    names: str = "ir",
    checks: Any = None,
) -> list[Table]:
    """The paper table(s) of an evaluation's records (``Evaluation.records``)."""
    from fireval.analysis.paper import lower_is_better
    from fireval.report.latex import PAGE_PT, SIZES, width_pt

    recs = [r for r in records if r["unjudged"] == unjudged and r["direction"] in ("t2v", "v2t")]
    dirs = list(dict.fromkeys(str(r["direction"]) for r in recs))
    runs = list(dict.fromkeys(str(r["run"]) for r in recs))
    lsets = list(dict.fromkeys(str(r["labels"]) for r in recs))
    computed = list(dict.fromkeys(str(r["measure"]) for r in recs))
    val: dict[tuple[str, str, str, str], float] = {}
    for r in recs:
        v = r["value"]
        if v is not None and v == v:
            val.setdefault(
                (str(r["direction"]), str(r["labels"]), str(r["run"]), str(r["measure"])), float(v)
            )
    ms = [m for m in DEFAULT_MEASURES if m in computed] or computed
    groups = [*lsets, "Δ"] if len(lsets) > 1 else lsets
    if columns is not None:
        cm, cg = parse_columns(columns, computed, lsets)
        ms = list(cm) or ms
        groups = [g for g in groups if not cg or g in cg]

    def off(run: str, g: str) -> bool:
        return bool(checks is not None and checks.not_comparable(run, g))

    def value(d: str, g: str, run: str, m: str) -> float | None:
        if g == "Δ":
            a, b = val.get((d, lsets[0], run, m)), val.get((d, lsets[-1], run, m))
            return None if a is None or b is None else b - a
        return val.get((d, g, run, m))

    def build(ds: list[str]) -> Table:
        cols, top = direction_columns(ds, ms, names)
        rows: list[list[Any]] = []
        sections: list[tuple[str, int]] = []
        flagged = trunc_any = False
        for g in groups:
            sections.append((g if len(groups) > 1 else "", len(runs)))
            for run in runs:
                row: list[Any] = [run]
                bad = off(run, g)
                flagged = flagged or bad
                for d in ds:
                    cut = set(checks.marked_measures(run, ms, d)) if checks is not None else set()
                    for m in ms:
                        rank = lower_is_better(m)
                        kind = ("rankdiff" if rank else "diff") if g == "Δ" else ("rank" if rank else "score")
                        v = value(d, g, run, m)
                        c = Cell(float("nan") if v is None else v, kind)
                        if g != "Δ" and v is not None and not bad and len(runs) > 1:
                            others = [value(d, g, r, m) for r in runs if not off(r, g)]
                            good = [x for x in others if x is not None]
                            c.bold = bool(good) and v == (min(good) if rank else max(good))
                        c.mark = (TRUNC_MARK if m in cut else "") + (PAIR_MARK if bad else "")
                        trunc_any = trunc_any or m in cut
                        row.append(c)
                rows.append(row)
        note = ["Values in %" + ("; MdR, MnR: ranks (↓)." if any(lower_is_better(m) for m in ms) else ".")]
        if len(runs) > 1:
            note.append("Bold: best per column.")
        if "Δ" in groups:
            note.append(f"Δ = {lsets[-1]} − {lsets[0]}.")
        note.append(f"Unjudged pairs: {unjudged}.")
        if flagged:
            note.append(f"{PAIR_MARK}: fails the alignment check; not comparable.")
        if trunc_any:
            note.append(f"{TRUNC_MARK}: depends on a truncated run's tail.")
        from fireval.metrics.measures import display_name

        what = ", ".join(display_name(m, names) for m in ms)
        return Table(
            "results" + ("" if ds == dirs else f"_{ds[0]}"),
            f"Results ({' and '.join(ds)}; {', '.join(lsets)} labels): {what}",
            cols,
            rows,
            note=" ".join(note),
            groups=[top],
            sections=sections,
        )

    whole = build(dirs)
    if len(dirs) > 1 and width_pt(whole, SIZES[-1][1]) > PAGE_PT:
        return [build([d]) for d in dirs]
    return [whole]


def write_results_tables(
    records: Iterable[Mapping[str, Any]],
    *,
    latex: str | Path | None = None,
    markdown: str | Path | None = None,
    columns: str | None = None,
    unjudged: str = "lower",
    names: str = "ir",
    checks: Any = None,
) -> list[Table]:
    """Build :func:`results_tables` and write them as LaTeX and/or Markdown (each atomically)."""
    from fireval.atomic import atomic_write
    from fireval.report.latex import render_latex
    from fireval.report.markdown import render_markdown

    tables = results_tables(records, columns=columns, unjudged=unjudged, names=names, checks=checks)
    for path, text in (
        (latex, render_latex(tables) if latex is not None else ""),
        (markdown, render_markdown(tables, "fireval evaluate") if markdown is not None else ""),
    ):
        if path is not None:
            with atomic_write(path, "w", encoding="utf-8") as fh:
                fh.write(text)
    return tables
