"""Truncation: a run cut to its top ``k`` per query, the rest one big tie at the row's minimum.

Sparsified matrices (GRAM and VAST keep exactly the top 50 of each row and store 0 elsewhere)
and TREC runs of depth ``k`` rank only ``k`` documents. Below that, every document shares one
score (or ``-inf``), so the rank of a relevant document there is not known. What the measures
make of it depends on the tail (as :mod:`fireval.metrics` evaluates, docs/metrics.md
"Unretrieved documents"; measured on a 60-query run cut at 10: C@20 = C@50 = C@10 for ranked
lists and for a matrix with ``-inf`` below the cut, but C@20 > C@10 for a finite tie):

* a finite tie (GRAM and VAST store 0 below their top 50): tie-aware measures give the
  *expectation* over a random order of the tail (McSherry & Najork 2008), so MnR, full AP/nDCG
  and cutoffs deeper than ``k`` are expectations over an undefined tail, a number about the
  file format, not the model;
* ``-inf`` (ranked lists, a TREC run of depth ``k``, or a matrix cut with ``-inf``): the tail
  is *not retrieved* and a relevant document there counts as a miss (trec_eval's convention),
  so ``C@K`` for ``K > k`` equals ``C@k``, and AP/nDCG/RR/cutoffs beyond ``k`` are lower bounds;
  only MdR/MnR of a query with no relevant document retrieved are expectations (its rank inside
  the unretrieved group).

The figure ``tail`` says which (``"unretrieved"`` when most cut rows end at ``-inf``, else
``"tie"``), and the message words it accordingly.

Figures (per direction): ``k`` = the median number of documents above the row's minimum tie
group (with its minimum and maximum over rows), the share of rows cut, and the share of queries
whose instance positive falls in the cut. A run is *truncated* when at least half its rows end
in a tie group of at least ``max(2, 5%)`` of the documents. Status: ``pass`` (not truncated) or
``warn`` (truncated: the values listed by :func:`truncated_measures` are expectations over an
undefined tail and are marked in tables). Truncation never makes ``fireval check`` fail.
Rows that rank no document at all (queries absent from a TREC run, or one tie over every
document) are counted apart (``n_queries_unranked``, a ``warn``) and left out of the figures above.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.checks.base import CheckResult, Status
from fireval.checks.definitions import TRUNCATION
from fireval.checks.scan import Scan
from fireval.core import Direction, Run
from fireval.metrics.measures import CUT_R, parse_measure

CHECK = TRUNCATION

#: a tie group at the minimum at least this share of the documents (and >= 2) counts as a cut
MIN_TAIL_SHARE = 0.05


def truncation(scan: Scan) -> CheckResult:
    """The truncation check of one run in one direction."""
    n_d = scan.n_docs
    # a row that ranks no document at all (a query absent from a TREC run: every doc -inf; or one
    # tie over all docs) is reported as such, and left out of the truncation figures below
    empty = ~scan.ranks_any()
    tail = scan.bottom_size[~empty]
    pos_bottom = scan.positive_at_bottom[~empty]
    cut = tail >= max(2, int(np.ceil(MIN_TAIL_SHARE * n_d)))
    kept = n_d - tail
    share_cut = float(cut.mean()) if cut.size else 0.0
    n_empty, n_q = int(empty.sum()), int(empty.size)
    figures: dict[str, Any] = {
        "direction": scan.direction.value,
        "truncated": bool(share_cut >= 0.5),
        "share_rows_cut": share_cut,
        "k": None,
        "n_queries_unranked": n_empty,
    }
    absent = f"{scan.direction.value}: {n_empty} of {n_q} queries rank no document" + _unranked_how(
        scan, empty
    )
    if n_q and n_empty >= 0.5 * n_q:
        # most queries rank nothing: every value is an expectation over a random order of all the
        # documents (a tie) or a count of misses (-inf), whatever the measure: a cut at k = 0
        unret = scan.bottom_unretrieved
        figures.update(
            truncated=True,
            k=0,
            k_min=0,
            k_max=0,
            share_relevant_in_cut=1.0,
            affected_measures=truncated_measures(DEFAULT_MEASURES, 0, 1.0),
            tail="unretrieved" if unret is not None and unret[empty].mean() > 0.5 else "tie",
        )
        return CheckResult(CHECK.name, Status.WARN, absent + "; every value of this run is marked", figures)
    if share_cut < 0.5:
        if n_empty:
            return CheckResult(CHECK.name, Status.WARN, absent, figures)
        return CheckResult(CHECK.name, Status.PASS, f"{scan.direction.value}: full rankings", figures)
    srt = np.sort(kept[cut])  # the median as np.median gives it, without its import of numpy.ma
    k = int((srt[(srt.size - 1) // 2] + srt[srt.size // 2]) / 2)
    in_cut = float((pos_bottom & cut).mean())
    figures.update(
        k=k,
        k_min=int(kept[cut].min()),
        k_max=int(kept[cut].max()),
        share_relevant_in_cut=in_cut,
        affected_measures=truncated_measures(DEFAULT_MEASURES, k, in_cut),
    )
    unret = scan.bottom_unretrieved
    unretrieved = bool(unret is not None and unret[~empty][cut].mean() > 0.5)
    figures["tail"] = "unretrieved" if unretrieved else "tie"
    head = f"{scan.direction.value}: cut to its top {k} per query ({100 * share_cut:.0f}% of rows); "
    if unretrieved:
        msg = head + (
            f"the other documents are not retrieved and count as misses, so C@K for K > {k} equals "
            f"C@{k} and, like AP/nDCG/RR, is a lower bound; {100 * in_cut:.1f}% of queries have their "
            "relevant document unretrieved, and their MdR/MnR ranks are expectations over the unranked tail"
        )
    else:
        msg = head + (
            f"{100 * in_cut:.1f}% of queries have their relevant document in the cut, so MnR, full "
            f"AP/nDCG and cutoffs beyond {k} are expectations over an undefined tail"
        )
    if n_empty:
        msg = f"{absent}; of the other {n_q - n_empty}, {msg.partition(': ')[2]}"
    return CheckResult(CHECK.name, Status.WARN, msg, figures)


def _unranked_how(scan: Scan, empty: npt.NDArray[np.bool_]) -> str:
    """How the rows that rank nothing are scored: a row of ``-inf`` (a query absent from a
    ranked-list run) retrieves nothing (``C@K``, RR, AP, nDCG are 0); a constant finite row is one
    tie over all ``n`` documents, so each value is its expectation over a random order of the tie
    (McSherry & Najork 2008): with one relevant document ``C@K = K/n``, ``RR = AP = H_n/n``; with
    ``R``, ``C@K = 1 - C(n-R, K)/C(n, K)``. MdR/MnR are the middle rank either way."""
    unret = scan.bottom_unretrieved
    n_inf = int((empty & unret).sum()) if unret is not None else 0
    n_tie = int(empty.sum()) - n_inf
    n = scan.n_docs
    parts = []
    if n_inf:
        parts.append(
            f"{n_inf} retrieve nothing (every document -inf, e.g. absent from a TREC run), so C@K, RR, "
            "AP and nDCG are 0 and MdR/MnR the expected middle rank"
        )
    if n_tie:
        parts.append(
            f"{n_tie} are one tie over all {n} documents, so each value is the expectation over a random "
            f"order of the tie (C@K = K/{n} with one relevant document: C@1 = {100 / n:.3g}%; MdR/MnR "
            "the middle rank)"
        )
    return " and stay in the means: " + "; ".join(parts)


def constant_scores(run: Run, direction: Direction, result: CheckResult) -> CheckResult:
    """``result`` with a warning in front when ``run`` holds ranked lists (a TREC run) in which
    every query's listed scores are one value (within each query, or over the whole file).

    Such a file's order, if any, is in its rank column, which neither trec_eval (it orders tied
    documents by docno) nor fireval reads: fireval (tie-aware) treats each list as one tie, so
    ``C@1`` is about ``1 / depth``. The file is not reinterpreted; the message says so and
    suggests a score column (e.g. ``-rank``). Rows whose list has fewer than two finite scores
    cannot tell and are left out; figure ``constant_scores`` (True when it warns).
    """
    lists = run.lists
    if lists is None or lists.direction is not direction:
        return result
    counts = np.diff(lists.indptr)
    row = np.repeat(np.arange(counts.size), counts)
    finite = np.isfinite(lists.scores)
    n_finite = np.bincount(row[finite], minlength=counts.size)
    # lists are sorted by descending score, so a row's first score is its largest
    differs = finite & (lists.scores != lists.scores[lists.indptr[row]])
    varies = np.bincount(row[differs], minlength=counts.size) > 0
    told = n_finite >= 2
    if not told.any() or varies[told].any():
        return result
    values = np.unique(lists.scores[finite])
    which = f"the same score ({values[0]:g})" if values.size == 1 else "one score per query"
    note = (
        f"{direction.value}: every query's listed documents have {which}, so the scores carry no order: "
        "fireval treats each list as one tie (trec_eval orders it by docno; neither reads the rank "
        "column); if the rank column holds the order, write it as the score (e.g. score = -rank)"
    )
    figures = {**result.figures, "constant_scores": True}
    msg = note if result.status is Status.PASS else f"{note}; {result.message.partition(': ')[2]}"
    return CheckResult(CHECK.name, Status.WARN, msg, figures)


DEFAULT_MEASURES = (
    "C@1",
    "C@5",
    "C@10",
    "C@50",
    "C@100",
    "AP",
    "nDCG",
    "nDCG@10",
    "R-Prec",
    "RR",
    "MdR",
    "MnR",
)


def truncated_measures(measures: Iterable[str], k: int | None, share_in_cut: float = 1.0) -> list[str]:
    """The names among ``measures`` whose value depends on the undefined tail of a run cut at ``k``.

    * any measure with a cutoff ``K > k`` (``C@K``, ``P@K``, ``nDCG@K``, ``AP@K``, ``judged@K``...),
      and ``meanR``/``geoC``/``RSum`` when ``k < 10``;
    * full-ranking measures ``AP``, ``nDCG``, ``nDCG_exp``, ``R-Prec``, ``@R`` cutoffs, ``RR`` and
      ``MnR`` when some query has its relevant document in the cut (``share_in_cut > 0``);
    * ``MdR`` when at least half of the queries do (then the median itself lies in the tail).

    Names that do not parse are left out. ``k=None`` (not truncated) gives an empty list.
    """
    if k is None:
        return []
    out = []
    for name in measures:
        try:
            m = parse_measure(name)
        except Exception:  # noqa: BLE001 - a table column that is not a measure
            continue
        if m.name in ("meanR", "geoC", "RSum"):
            hit = k < 10
        elif m.aggregate == "median":  # (MdR) the median itself lies in the tail
            hit = share_in_cut >= 0.5
        elif m.k is None or m.k == CUT_R:
            hit = share_in_cut > 0
        else:
            hit = m.k > k
        if hit:
            out.append(str(name))
    return out
