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

from fireval.checks.base import Check, CheckResult, Status
from fireval.checks.scan import Scan
from fireval.metrics.measures import CUT_R, parse_measure

CHECK = Check(
    name="truncation",
    description="the run ranks only its top k per query; the rest is one tie at the row's minimum",
    rationale="Below the cut, a relevant document's rank is an expectation over a random order of "
    "the tail (McSherry & Najork 2008), not a property of the model: MnR, MdR, AP, full nDCG, "
    "R-Prec and cutoffs deeper than k depend on it.",
)

#: a tie group at the minimum at least this share of the documents (and >= 2) counts as a cut
MIN_TAIL_SHARE = 0.05


def truncation(scan: Scan) -> CheckResult:
    """The truncation check of one run in one direction."""
    n_d = scan.n_docs
    # a row that ranks no document at all (a query absent from a TREC run: every doc -inf; or one
    # tie over all docs) is reported as such, and left out of the truncation figures below
    empty = scan.bottom_size >= n_d
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
    absent = (
        f"{scan.direction.value}: {n_empty} of {n_q} queries rank no document (absent from the run, "
        "or one tie over all documents); they stay in the means, scored as retrieving nothing "
        "(C@K, RR, AP, nDCG about 0; MdR/MnR the expected middle rank)"
    )
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
      and ``meanR``/``geoC`` when ``k < 10``;
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
        if m.name in ("meanR", "geoC"):
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
