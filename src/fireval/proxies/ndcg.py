"""nDCG with proxy relevance, as Wray et al. (2021) evaluate semantic-similarity retrieval.

Per direction, nDCG is the ``wray2021`` preset of the metrics engine (``nDCG@R``; see
:mod:`fireval.metrics.presets`): for a query with relevances ``rel`` over its N items and
``R = #{rel > 0}``,

    DCG@R  = Σ_{r=1..R} rel(item at rank r) / log2(r + 1)        (linear gain)
    IDCG@R = Σ_{r=1..R} rel_(r) / log2(r + 1)                    (rel sorted in decreasing order)
    nDCG@R = DCG@R / IDCG@R   (undefined when R = 0: IDCG = 0)

A query with R = 0 is an explicit choice (:data:`ZERO_RELEVANT`): ``"zero"`` scores it 0, as
Falcon et al.'s patched copy of the code (``ranp``) does and the ``wray2021`` preset does;
``"drop"`` leaves it out; ``"nan"`` is JPoSE's ``nDCG.py`` (0 / 0 = NaN, so the mean is NaN).

Wray's relevance matrix is videos × captions: v2t queries are its rows, t2v queries its
columns. Eq. 3 of the paper reports ``nDCG = (nDCG_v2t + nDCG_t2v) / 2`` (:func:`eq3`).

**Random baseline** (:func:`expected_random_ndcg`). For a uniformly random permutation every
item is at rank r with probability 1/N, so ``E[rel(item at rank r)] = S / N`` with
``S = Σ_i rel_i`` and, IDCG being fixed,

    E[nDCG@R] = (S / N) · Σ_{r=1..R} 1 / log2(r + 1)  /  IDCG@R .

This is exact (no sampling); a random ranking has no ties. ``zero_relevant="drop"`` leaves the
R = 0 queries out of the mean (fireval's default elsewhere) instead of scoring them 0.

**Designs** (:mod:`fireval.proxies.designs`) build the relevance matrix the Random row is
computed on in each of the ways the published row could have been made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fireval.core.direction import Direction
from fireval.core.errors import FirevalError
from fireval.core.judgments import Judgments
from fireval.core.run import Run

#: what a query with no item of relevance > 0 contributes to a direction's mean:
#: ``zero`` scores it 0 (Falcon et al.'s patched copy of the nDCG code, ``ranp``; fireval's
#: ``wray2021`` preset), ``drop`` leaves it out (fireval's default elsewhere), ``nan`` makes it NaN
#: so the whole mean is NaN, as JPoSE's ``nDCG.py`` (0/0) does.
ZERO_RELEVANT = ("zero", "drop", "nan")


def _check_zero(zero_relevant: str) -> str:
    z = str(zero_relevant).strip().lower()
    if z not in ZERO_RELEVANT:
        raise FirevalError(f"unknown zero-relevant policy {zero_relevant!r}; expected zero, drop or nan")
    return z


def discounts(n: int) -> npt.NDArray[np.float64]:
    """``1 / log2(r + 1)`` for ranks r = 1..n."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def _oriented(grades: npt.NDArray[np.floating], direction: Direction | str) -> npt.NDArray[np.floating]:
    """Queries × items for ``direction`` from a caption × video matrix."""
    return grades if Direction.parse(direction) is Direction.T2V else grades.T


def expected_random_ndcg_per_query(
    grades: npt.NDArray[np.floating], chunk: int = 256
) -> npt.NDArray[np.float64]:
    """Exact E[nDCG@R] of a uniformly random ranking, per row of ``grades`` (queries × items).

    NaN for a row with no positive relevance (the caller decides: 0 or left out). Vectorised
    over rows; memory bounded by ``chunk`` rows (one sort per block).
    """
    g = np.asarray(grades)
    nq, n = g.shape
    out = np.full(nq, np.nan)
    if n == 0:
        return out
    disc = discounts(n)
    cum = np.concatenate([[0.0], np.cumsum(disc)])
    for s in range(0, nq, chunk):
        blk = np.asarray(g[s : s + chunk], dtype=np.float64)
        if (blk < 0).any() or np.isnan(blk).any():
            raise FirevalError("relevance must be >= 0 and not NaN for nDCG@R")
        r = np.count_nonzero(blk > 0, axis=1)
        total = blk.sum(axis=1)
        ideal = -np.sort(-blk, axis=1)  # the R positive values first, zeros after
        idcg = ideal @ disc
        ok = r > 0
        out[s : s + chunk][ok] = (total[ok] / n) * cum[r[ok]] / idcg[ok]
    return out


def expected_random_ndcg(
    grades: npt.NDArray[np.floating], zero_relevant: str = "zero", chunk: int = 256
) -> dict[str, Any]:
    """E[nDCG@R] of a random ranking per direction of a caption × video relevance matrix.

    Returns ``{"t2v": …, "v2t": …, "mean": (t2v + v2t) / 2, "n_queries": {d: n},
    "n_zero_relevant": {d: n}}``; with ``zero_relevant="zero"`` (Wray) queries without a
    positive item count as 0 (Falcon et al.'s ``ranp``), with ``"drop"`` they leave the mean,
    with ``"nan"`` (JPoSE's ``nDCG.py``) one such query makes the mean NaN.
    """
    z = _check_zero(zero_relevant)
    out: dict[str, Any] = {"n_queries": {}, "n_zero_relevant": {}}
    for d in (Direction.T2V, Direction.V2T):
        per = expected_random_ndcg_per_query(_oriented(grades, d), chunk)
        empty = np.isnan(per)
        out["n_zero_relevant"][d.value] = int(empty.sum())
        vals = np.where(empty, 0.0, per) if z == "zero" else per if z == "nan" else per[~empty]
        out["n_queries"][d.value] = int(vals.size)
        out[d.value] = float(vals.mean()) if vals.size else float("nan")  # nan: NaN if any is
    out["mean"] = (out["t2v"] + out["v2t"]) / 2
    return out


def _n_positive(judgments: Judgments, d: Direction) -> npt.NDArray[np.int64]:
    """Items with relevance > 0 per query of ``d``."""
    return np.diff(judgments.relevant().matrix(d).indptr).astype(np.int64)


def wray_ndcg(
    run: Run, judgments: Judgments, *, ties: str = "tie-aware", zero_relevant: str = "zero", **kw: Any
) -> dict[str, float]:
    """``{"t2v": …, "v2t": …, "mean": …}`` nDCG@R of ``run`` with graded ``judgments``.

    ``zero_relevant="zero"`` scores a query with no positive item 0 (the ``wray2021`` preset;
    Falcon et al.'s ``ranp``); ``"drop"`` leaves it out of each mean; ``"nan"`` makes the mean NaN
    (JPoSE's ``nDCG.py``).
    """
    from fireval.metrics import evaluate

    z = _check_zero(zero_relevant)
    ev = evaluate(
        run, judgments, directions=("t2v", "v2t"), ties=ties, preset="wray2021", per_query=True, **kw
    )
    assert ev.per_query is not None
    pq = ev.per_query
    out: dict[str, float] = {}
    for d in (Direction.T2V, Direction.V2T):
        sel = pq[(pq["direction"] == d.value) & pq["measure"].astype(str).str.startswith("nDCG")]
        if not len(sel):
            continue
        vals = sel["value"].to_numpy(dtype=np.float64)
        if z == "drop":
            vals = vals[_n_positive(judgments, d) > 0]
        elif z == "nan" and (_n_positive(judgments, d) == 0).any():
            vals = np.full(vals.size, np.nan)  # JPoSE's nDCG.py: 0/0 makes the mean NaN
        out[d.value] = float(np.nanmean(vals)) if vals.size and not np.isnan(vals).all() else float("nan")
    if "t2v" in out and "v2t" in out:
        out["mean"] = (out["t2v"] + out["v2t"]) / 2
    return out


def eq3(table: pd.DataFrame, measure_prefix: str = "nDCG") -> pd.DataFrame:
    """Wray's Eq. 3 from an evaluation table: ``(t2v + v2t) / 2`` per run, labels and unjudged mode.

    Columns ``run, labels, unjudged, measure, t2v, v2t, mean``; only groups with both
    directions.
    """
    cols = ["run", "labels", "unjudged", "measure", "t2v", "v2t", "mean"]
    t = table[table["measure"].astype(str).str.startswith(measure_prefix)]
    t = t[t["direction"].isin(["t2v", "v2t"])]
    if t.empty:
        return pd.DataFrame(columns=cols)
    keys = ["run", "labels", "unjudged", "measure"]
    # unstack, not pivot_table: a NaN mean (--zero-relevant nan) stays a NaN Eq. 3, not a lost row
    wide = (
        t.drop_duplicates(subset=[*keys, "direction"])
        .set_index([*keys, "direction"])["value"]
        .unstack("direction")
        .reset_index()
    )
    wide.columns.name = None
    if not {"t2v", "v2t"} <= set(wide.columns):
        return pd.DataFrame(columns=cols)
    wide["mean"] = (wide["t2v"] + wide["v2t"]) / 2
    return wide[cols]


def _json_float(x: Any) -> float | None:
    """A JSON value: NaN (an undefined mean, e.g. ``--zero-relevant nan``) becomes null."""
    v = float(x)
    return None if v != v else v


def eq3_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """:func:`eq3` as JSON-ready records (values are fractions in [0, 1], as in the table;
    ``unit`` says so)."""
    out = []
    for r in eq3(table).itertuples(index=False):
        out.append(
            {
                "run": str(r.run),
                "labels": str(r.labels),
                "unjudged": str(r.unjudged),
                "measure": str(r.measure),
                "t2v": _json_float(r.t2v),
                "v2t": _json_float(r.v2t),
                "mean": _json_float(r.mean),
                "unit": "fraction in [0, 1]",
                "definition": "Wray et al. 2021 Eq. 3: (nDCG_t2v + nDCG_v2t) / 2",
            }
        )
    return out


def eq3_lines(table: pd.DataFrame, percent: bool = True) -> list[str]:
    """One line per run, label set and unjudged mode: Wray's Eq. 3 from an evaluation table,
    in % (the unit of fireval's printed tables) or as a fraction, the unit named on the line."""
    from fireval.core.units import fixed

    f, unit = (100.0, "%") if percent else (1.0, "fraction")
    return [
        f"Wray Eq. 3 ({unit}): {r.run} / {r.labels} (unjudged={r.unjudged}): {r.measure} = "
        f"(t2v {fixed(f * r.t2v, 2)} + v2t {fixed(f * r.v2t, 2)}) / 2 = {fixed(f * r.mean, 2)}"
        for r in eq3(table).itertuples(index=False)
    ]


def eq3_table_lines(table: pd.DataFrame, percent: bool = True) -> list[str]:
    """Wray et al.'s Table 3 layout: one row per run (and unjudged mode), one column group per
    label set (proxy) holding nDCG t2v, v2t and the Eq. 3 mean; ``[]`` with fewer than two sets."""
    e = eq3(table)
    sets = list(dict.fromkeys(e["labels"].astype(str)))
    if len(sets) < 2:
        return []
    f = 100.0 if percent else 1.0
    run_w = max([len("run")] + [len(f"{r} ({u})") for r, u in zip(e["run"], e["unjudged"])])
    col = 7
    head1 = " " * run_w + "".join(f" | {name[: 3 * col + 2]:^{3 * col + 2}}" for name in sets)
    head2 = f"{'run':<{run_w}}" + "".join(
        f" | {'t2v':>{col}}{'v2t':>{col + 1}}{'Eq.3':>{col + 1}}" for _ in sets
    )
    lines = [f"Wray Table 3 layout: nDCG@R in {'%' if percent else 'fractions'} per label set", head1, head2]
    for (run, unj), part in e.groupby(["run", "unjudged"], sort=False):
        by = {str(r.labels): r for r in part.itertuples(index=False)}
        cells = ""
        for name in sets:
            r = by.get(name)
            if r is None:
                cells += f" | {'-':>{col}}{'-':>{col + 1}}{'-':>{col + 1}}"
            else:
                cells += f" | {f * r.t2v:>{col}.2f}{f * r.v2t:>{col + 1}.2f}{f * r.mean:>{col + 1}.2f}"
        lines.append(f"{f'{run} ({unj})':<{run_w}}{cells}")
    return lines


def random_table(
    relevances: Mapping[str, npt.NDArray[np.floating]], zero_relevant: str = "zero"
) -> pd.DataFrame:
    """:func:`expected_random_ndcg` for each named caption × video matrix, as a tidy table.

    Columns ``proxy, direction (t2v | v2t | mean), zero_relevant, value, n_queries, n_zero_relevant``.
    """
    rows = []
    for name, g in relevances.items():
        r = expected_random_ndcg(g, zero_relevant)
        for d in ("t2v", "v2t", "mean"):
            rows.append(
                {
                    "proxy": name,
                    "direction": d,
                    "zero_relevant": zero_relevant,
                    "value": r[d],
                    "n_queries": r["n_queries"].get(d),
                    "n_zero_relevant": r["n_zero_relevant"].get(d),
                }
            )
    return pd.DataFrame(rows).astype({"n_queries": "Int64", "n_zero_relevant": "Int64"})
