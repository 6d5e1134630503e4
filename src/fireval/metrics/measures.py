"""Measures as parseable values: ``C@10``, ``nDCG@10``, ``AP@20``, ``MdR``, ``meanR`` ...

A :class:`Measure` is a name plus an optional cutoff. ``str(m)`` round-trips through
:func:`parse_measure`. The exact definitions are in ``docs/metrics.md`` and in
:mod:`fireval.metrics.kernel`.

Names (K is a positive integer; ``nDCG@R`` cuts each query at its own number of relevant docs):

=============  ====================================================================================
``C@K``        Correct@K: 1 if any relevant doc is in the top K. TVR papers call this "R@K".
``P@K``        precision at K: relevant docs in the top K / K (trec_eval ``P_K``).
``Recall@K``   hits in the top K / |relevant| (IR recall, trec_eval ``recall_K``).
``AP``         average precision over the full ranking (trec_eval ``map``).
``AP@K``       sum of precision at relevant ranks <= K / |relevant| (trec_eval ``map_cut_K``).
``AP_hits@K``  FIRE (Rodriguez et al. 2023): sum of precision at relevant ranks <= K / hits in the
               top K (0 when there is no hit).
``R-Prec``     precision at rank |relevant| (trec_eval ``Rprec``).
``RR``         reciprocal rank of the first relevant doc (trec_eval ``recip_rank``).
``MdR``        median over queries of the rank of the first relevant doc (lower is better).
``MnR``        mean over queries of the rank of the first relevant doc (lower is better).
``nDCG@K``     nDCG with linear gain and log2(rank+1) discount (trec_eval ``ndcg_cut_K``).
``nDCG``       nDCG over the full ranking (trec_eval ``ndcg``).
``nDCG_exp@K`` / ``nDCG_exp``: the same with exponential gain 2^grade - 1 (Burges et al. 2005);
               grades above :data:`MAX_EXP_GRADE` are refused (2^g would overflow float64).
``judged@K``   fraction of the top K that is judged (Sakai 2007; pool coverage).
``meanR``      aggregate only: mean of C@1, C@5, C@10 over t2v and v2t (direction "both").
``geoC``       aggregate only: geometric mean of C@1, C@5, C@10 per direction.
=============  ====================================================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fireval.core.errors import FirevalError

#: largest grade exponential gain accepts: 2^1000 times any realistic number of docs stays below
#: float64's 2^1024, so nDCG_exp never overflows to inf/NaN (label files hold at most 100)
MAX_EXP_GRADE = 1000.0

#: measures that take a cutoff ``@K`` (required), and the ones where it is optional
_CUT_REQUIRED = ("C", "P", "Recall", "judged", "AP_hits")
_CUT_OPTIONAL = ("AP", "nDCG", "nDCG_exp")
_NO_CUT = ("R-Prec", "RR", "MdR", "MnR", "meanR", "geoC")
#: every measure name, as :func:`parse_measure` returns it
MEASURE_NAMES = _CUT_REQUIRED + _CUT_OPTIONAL + _NO_CUT
#: measures whose value is the *median* over queries of their per-query values (every other one
#: is a mean, or for meanR/geoC a combination of means), each with the measure whose value is the
#: mean of the same per-query values and what those values are
_MEDIANS: dict[str, tuple[str, str]] = {"MdR": ("MnR", "the first-relevant ranks")}
_ALIASES = {
    "c": "C",
    "correct": "C",
    "p": "P",
    "precision": "P",
    "recall": "Recall",
    "ap": "AP",
    "map": "AP",
    "ap_hits": "AP_hits",
    "r-prec": "R-Prec",
    "rprec": "R-Prec",
    "r-precision": "R-Prec",
    "rr": "RR",
    "mrr": "RR",
    "recip_rank": "RR",
    "mdr": "MdR",
    "medr": "MdR",
    "mnr": "MnR",
    "meanr_rank": "MnR",
    "ndcg": "nDCG",
    "ndcg_exp": "nDCG_exp",
    "judged": "judged",
    "meanr": "meanR",
    "geoc": "geoC",
}
_PATTERN = re.compile(r"^\s*([A-Za-z_\-]+?)\s*(?:@\s*(\d+|R|r))?\s*$")

#: ``K`` value meaning "cut at the query's number of relevant docs" (``nDCG@R``)
CUT_R = -1


@dataclass(frozen=True, order=True)
class Measure:
    """A named measure with an optional cutoff ``k`` (``None`` = full ranking; ``-1`` = ``@R``)."""

    name: str
    k: int | None = None

    @property
    def lower_is_better(self) -> bool:
        """Only the rank measures MdR and MnR are better when lower."""
        return self.name in ("MdR", "MnR")

    @property
    def monotone_in_relevance(self) -> bool:
        """Making an unjudged (or irrelevant) doc relevant can only improve the value.

        True for C@K, P@K, RR, MdR, MnR (the first relevant rank can only move up) and the
        C@K aggregates meanR and geoC: for these, scoring unjudged docs as irrelevant and as
        relevant gives a lower and an upper bound over every labelling of the unjudged docs.
        False for Recall@K, AP, AP_hits, nDCG, R-Prec and P@R (a new relevant doc also enlarges
        |relevant| or the ideal ranking, and can lower them) and judged@K (not a relevance measure).
        ``unjudged=worst|best`` gives exact bounds for all but AP@R and AP_hits@K
        (:mod:`fireval.metrics.bounds`).
        """
        if self.name == "P" and self.k == CUT_R:  # P@R is R-Prec
            return False
        return self.name in ("C", "P", "RR", "MdR", "MnR", "meanR", "geoC")

    @property
    def aggregate_only(self) -> bool:
        """``meanR`` and ``geoC`` combine other aggregates; they have no per-query values."""
        return self.name in ("meanR", "geoC")

    @property
    def aggregate(self) -> str:
        """How the value combines the per-query values: ``"mean"`` over queries (every measure
        but those below), ``"median"`` over queries (``MdR``), or ``"composite"`` (``meanR``,
        ``geoC``: combinations of other measures' means, with no per-query values of their own).

        Per-query means are what paired tests, bootstrap intervals and budget curves work on;
        ``tests/cli/test_measure_aggregates.py`` checks this property against the values
        :func:`fireval.metrics.evaluate` reports, for every measure name.
        """
        if self.name in _MEDIANS:
            return "median"
        return "composite" if self.aggregate_only else "mean"

    @property
    def is_mean(self) -> bool:
        """The value is the mean over queries of the per-query values (:attr:`aggregate`)."""
        return self.aggregate == "mean"

    @property
    def mean_counterpart(self) -> Measure | None:
        """For a median measure, the measure whose value is the mean of the same per-query values
        (``MdR`` → ``MnR``); ``None`` otherwise."""
        return Measure(_MEDIANS[self.name][0]) if self.name in _MEDIANS else None

    @property
    def median_note(self) -> str:
        """For a median measure, what the mean of its per-query values is (for messages), e.g.
        ``"the mean of the first-relevant ranks is MnR"``; empty otherwise."""
        if self.name not in _MEDIANS:
            return ""
        mean, values = _MEDIANS[self.name]
        return f"the mean of {values} is {mean}"

    @property
    def cutoff_label(self) -> str:
        if self.k is None:
            return ""
        return "@R" if self.k == CUT_R else f"@{self.k}"

    def __str__(self) -> str:
        return f"{self.name}{self.cutoff_label}"

    @property
    def note(self) -> str:
        """A one-line gloss for tables (e.g. that C@K is what TVR papers call R@K)."""
        if self.name == "C":
            return f"C@{self.k} is what TVR papers call R@{self.k}"
        if self.name == "Recall":
            return "hits / |relevant| (IR recall)"
        return ""


def parse_measure(text: str | Measure, names: str = "tvr") -> Measure:
    """Parse ``"nDCG@10"``, ``"C@1"``, ``"AP"``, ``"MdR"`` ... into a :class:`Measure`.

    Names are case-insensitive and a few aliases are accepted (``R-Precision``, ``MRR``,
    ``map``). Under TVR names (``names="tvr"``, the default) ``"R@K"`` means ``C@K``, as in
    TVR papers (any relevant doc in the top K); ``Recall@K`` always keeps its IR meaning
    (hits / |relevant|). Under ``names="ir"`` ``"R@K"`` is refused as ambiguous.
    """
    if isinstance(text, Measure):
        return text
    m = _PATTERN.match(str(text))
    if not m:
        raise FirevalError(f"cannot parse measure {text!r}; expected e.g. C@10, nDCG@10, AP, MdR")
    raw, cut = m.group(1), m.group(2)
    if raw.upper() == "R" and cut is not None and cut not in ("R", "r") and names == "tvr":
        raw = "C"  # TVR papers' R@K is Correct@K
    elif raw.upper() == "R" and cut is not None:
        raise FirevalError(
            f"measure {text!r} is ambiguous: use C@{cut} (TVR papers' R@K: any relevant in the top K) "
            f"or Recall@{cut} (hits / |relevant|)"
        )
    name = _ALIASES.get(raw.lower())
    if name is None:
        known = ", ".join(_CUT_REQUIRED + _CUT_OPTIONAL + _NO_CUT)
        raise FirevalError(f"unknown measure {text!r}; known measures: {known}")
    k: int | None
    if cut is None:
        k = None
    elif cut in ("R", "r"):
        if name not in ("nDCG", "nDCG_exp", "P", "Recall", "AP"):
            raise FirevalError(f"measure {text!r}: the @R cutoff is only defined for nDCG, P, Recall and AP")
        k = CUT_R
    else:
        k = int(cut)
        if k < 1:
            raise FirevalError(f"measure {text!r}: the cutoff must be a positive integer")
    if name in _CUT_REQUIRED and k is None:
        raise FirevalError(f"measure {text!r} needs a cutoff, e.g. {name}@10")
    if name in _NO_CUT and k is not None:
        raise FirevalError(f"measure {text!r} takes no cutoff")
    return Measure(name, k)


def display_name(measure: str | Measure, names: str = "ir") -> str:
    """How a measure is named in an output: ``names="tvr"`` prints ``C@K`` as ``R@K`` (TVR papers);
    ``names="ir"`` keeps fireval's names (``C@K``; ``Recall@K`` is IR recall under both)."""
    if names not in ("tvr", "ir"):
        raise FirevalError(f"names must be 'tvr' or 'ir', got {names!r}")
    m = parse_measure(measure)
    if names == "tvr" and m.name == "C":
        return f"R{m.cutoff_label}"
    return str(m)


def parse_measures(items: str | Measure | object) -> tuple[Measure, ...]:
    """Parse one measure, a comma-separated string, or an iterable of names/measures."""
    if isinstance(items, Measure):
        return (items,)
    if isinstance(items, str):
        parts = [p for p in items.split(",") if p.strip()]
        return tuple(parse_measure(p) for p in parts)
    try:
        seq = list(items)  # type: ignore[call-overload]
    except TypeError:
        raise FirevalError(f"cannot parse measures from {items!r}") from None
    out: list[Measure] = []
    for it in seq:
        out.extend(parse_measures(it))
    return tuple(dict.fromkeys(out))


DEFAULT_MEASURES: tuple[Measure, ...] = parse_measures(
    "C@1,C@5,C@10,MdR,MnR,RR,AP,nDCG@10,P@10,Recall@10,judged@10,meanR,geoC"
)
"""The default set: the TVR table (C@1/5/10, MdR, MnR), IR measures, pool coverage, aggregates."""
