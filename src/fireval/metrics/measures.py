"""Measures as parseable values: ``C@10``, ``nDCG@10``, ``AP@20``, ``MdR``, ``meanR`` ...

A :class:`Measure` is a name plus an optional cutoff. ``str(m)`` round-trips through
:func:`parse_measure`. The exact definitions are in ``docs/metrics.md`` and in
:mod:`fireval.metrics.kernel`.

Names (K is a positive integer; ``@R`` cuts each query at its own number of relevant docs, and
exists for P, Recall, AP, nDCG, nDCG_exp and infNDCG; ``P@R`` = ``Recall@R`` = ``R-Prec``). Each row is
the ``description`` of the family's :class:`~fireval.metrics.definitions.MeasureInfo`, which also
carries its aliases, cutoff rule, trec_eval name and citation (``fireval measures`` lists them;
``tests/metrics/test_measure_info.py`` keeps this table, those values and ``docs/metrics.md`` in
step):

=============  ====================================================================================
``C@K``        Correct@K: 1 if any relevant doc is in the top K. TVR papers call this R@K.
``P@K``        precision at K: relevant docs in the top K / K.
``Recall@K``   IR recall at K: relevant docs in the top K / |relevant|.
``judged@K``   pool coverage: judged docs in the top K / K (relevance plays no part).
``AP_hits@K``  FIRE's AP: sum of precision at the relevant ranks <= K / hits in the top K (0
               without a hit).
``AP``         average precision: sum of precision at the relevant ranks (<= K for AP@K) /
               |relevant|.
``nDCG``       DCG / ideal DCG with gain = grade and discount 1/log2(rank+1), over the full
               ranking or the top K.
``nDCG_exp``   nDCG with exponential gain 2^grade - 1 instead of the grade.
``infNDCG``    inferred nDCG: estimated DCG / estimated ideal DCG from the judged sample (unjudged
               pairs are outside the pool: gain 0).
``R-Prec``     R-precision: relevant docs in the top |relevant| / |relevant| (= P@R = Recall@R).
``RR``         reciprocal rank: 1 / rank of the first relevant doc (0 if none is retrieved).
``bpref``      binary preference: mean over relevant docs of 1 - min(judged irrelevant above, R) /
               min(N, R).
``infAP``      inferred AP: AP with the precision above each relevant doc estimated from the judged
               docs above it.
``MdR``        median over queries of the rank of the first relevant doc (lower is better).
``MnR``        mean over queries of the rank of the first relevant doc (lower is better).
``meanR``      aggregate only: mean of C@1, C@5 and C@10 over t2v and v2t (direction both).
``geoC``       aggregate only: geometric mean of C@1, C@5 and C@10 per direction (0 if any is 0).
``RSum``       aggregate only: C@1 + C@5 + C@10 of t2v plus those of v2t (direction both; printed
               0-600).
=============  ====================================================================================

``AP``, ``nDCG`` and ``nDCG_exp`` take an optional ``@K``; the other ``@K`` rows require it.
``nDCG_exp`` refuses grades above :data:`MAX_EXP_GRADE` (2^g would overflow float64).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fireval.core.errors import FirevalError
from fireval.metrics.definitions import MEASURE_INFO, MEASURE_INFO_BY_NAME, Cutoff, MeasureInfo

#: largest grade exponential gain accepts: 2^1000 times any realistic number of docs stays below
#: float64's 2^1024, so nDCG_exp never overflows to inf/NaN (label files hold at most 100)
MAX_EXP_GRADE = 1000.0

#: measures that take a cutoff ``@K`` (required), and the ones where it is optional (all three
#: tables, and the aliases below, come from :data:`fireval.metrics.definitions.MEASURE_INFO`)
_CUT_REQUIRED = tuple(i.name for i in MEASURE_INFO if i.cutoff is Cutoff.REQUIRED)
_CUT_OPTIONAL = tuple(i.name for i in MEASURE_INFO if i.cutoff is Cutoff.OPTIONAL)
_NO_CUT = tuple(i.name for i in MEASURE_INFO if i.cutoff is Cutoff.NONE)
#: every measure name, as :func:`parse_measure` returns it
MEASURE_NAMES = _CUT_REQUIRED + _CUT_OPTIONAL + _NO_CUT
#: measures that accept ``@R`` (the query's number of relevant docs as the cutoff)
_AT_R = tuple(i.name for i in MEASURE_INFO if i.at_r)
#: lower-cased name or alias -> name
_ALIASES = {n.lower(): i.name for i in MEASURE_INFO for n in (i.name, *i.aliases)}
_PATTERN = re.compile(r"^\s*([A-Za-z_\-]+?)\s*(?:@\s*(\d+|R|r))?\s*$")

#: ``K`` value meaning "cut at the query's number of relevant docs" (``nDCG@R``)
CUT_R = -1


@dataclass(frozen=True, order=True)
class Measure:
    """A named measure with an optional cutoff ``k`` (``None`` = full ranking; ``-1`` = ``@R``)."""

    name: str
    k: int | None = None

    @property
    def info(self) -> MeasureInfo:
        """The measure's family as a value: description, citation, cutoff rule ... (e.g.
        ``parse_measure("mrr").info.citation``)."""
        return MEASURE_INFO_BY_NAME[self.name]

    @property
    def lower_is_better(self) -> bool:
        """Only the rank measures MdR and MnR are better when lower."""
        return not self.info.higher_is_better

    @property
    def monotone_in_relevance(self) -> bool:
        """Making an unjudged (or irrelevant) doc relevant can only improve the value.

        True for C@K, P@K, RR, MdR, MnR (the first relevant rank can only move up) and the
        C@K aggregates meanR and geoC: for these, scoring unjudged docs as irrelevant and as
        relevant gives a lower and an upper bound over every labelling of the unjudged docs.
        False for Recall@K, AP, AP_hits, nDCG, R-Prec and P@R (a new relevant doc also enlarges
        |relevant| or the ideal ranking, and can lower them) and judged@K (not a relevance measure).
        ``unjudged=worst|best`` gives exact bounds for every measure (:mod:`fireval.metrics.bounds`).
        """
        if self.name == "P" and self.k == CUT_R:  # P@R is R-Prec
            return False
        return self.info.monotone_in_relevance

    @property
    def aggregate_only(self) -> bool:
        """``meanR`` and ``geoC`` combine other aggregates; they have no per-query values."""
        return self.info.aggregate == "composite"

    @property
    def aggregate(self) -> str:
        """How the value combines the per-query values: ``"mean"`` over queries (every measure
        but those below), ``"median"`` over queries (``MdR``), or ``"composite"`` (``meanR``,
        ``geoC``: combinations of other measures' means, with no per-query values of their own).

        Per-query means are what paired tests, bootstrap intervals and budget curves work on;
        ``tests/cli/test_measure_aggregates.py`` checks this property against the values
        :func:`fireval.metrics.evaluate` reports, for every measure name. It is the family's
        ``info.aggregate`` (:data:`fireval.metrics.definitions.MEASURE_INFO`, the one record).
        """
        return self.info.aggregate

    @property
    def is_mean(self) -> bool:
        """The value is the mean over queries of the per-query values (:attr:`aggregate`)."""
        return self.aggregate == "mean"

    @property
    def mean_counterpart(self) -> Measure | None:
        """For a median measure, the measure whose value is the mean of the same per-query values
        (``MdR`` → ``MnR``, the family's ``info.mean_counterpart``); ``None`` otherwise."""
        return Measure(self.info.mean_counterpart, self.k) if self.aggregate == "median" else None

    @property
    def median_note(self) -> str:
        """For a median measure, what the mean of its per-query values is (for messages), e.g.
        ``"the mean of the first-relevant ranks is MnR"``; empty otherwise."""
        if self.aggregate != "median":
            return ""
        return f"the mean of {self.info.per_query} is {self.info.mean_counterpart}"

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

    def describe(self) -> dict[str, object]:
        """JSON-ready: the family's :meth:`~fireval.metrics.definitions.MeasureInfo.to_dict`, with
        ``measure`` (this measure's name), its own ``monotone_in_relevance`` (``P@R`` differs
        from its family) and ``note``."""
        return {
            "measure": str(self),
            **self.info.to_dict(),
            "monotone_in_relevance": self.monotone_in_relevance,
            "note": self.note,
        }


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
    elif raw.upper() == "R" and cut in ("R", "r"):  # C takes no @R: only Recall@R is meant
        raise FirevalError(
            f"measure {text!r} is ambiguous: use Recall@R (hits in the top |relevant| / |relevant|, "
            "= P@R = R-Prec)"
        )
    elif raw.upper() == "R" and cut is not None:
        raise FirevalError(
            f"measure {text!r} is ambiguous: use C@{cut} (TVR papers' R@K: any relevant in the top K) "
            f"or Recall@{cut} (hits / |relevant|)"
        )
    name = _ALIASES.get(raw.lower())
    if name is None:
        known = ", ".join(MEASURE_NAMES)
        raise FirevalError(
            f"unknown measure {text!r}; known measures: {known} (definitions: `fireval measures`)"
        )
    k: int | None
    if cut is None:
        k = None
    elif cut in ("R", "r"):
        if name not in _AT_R:
            raise FirevalError(
                f"measure {text!r}: the @R cutoff is only defined for {', '.join(_AT_R[:-1])} and {_AT_R[-1]}"
            )
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


def find_measure_info(text: str) -> tuple[MeasureInfo, Measure | None]:
    """Look a measure up as ``fireval measures NAME`` does: its family value and the parsed
    :class:`Measure`. A full measure (``AP_hits@10``, ``mrr``, ``R@5``) gives both; a family name
    alone that needs a cutoff (``C``, ``Recall``) gives its family and ``None``; anything else
    raises :func:`parse_measure`'s one-line error."""
    try:
        m = parse_measure(text)
    except FirevalError:
        name = _ALIASES.get(str(text).strip().lower())
        if name is None:
            raise
        return MEASURE_INFO_BY_NAME[name], None
    return m.info, m


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
