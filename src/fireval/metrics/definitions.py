"""Measure families as values: name, aliases, cutoff rule, one-line description and citation.

One :class:`MeasureInfo` per family (``C``, ``P``, ``Recall``, ``judged``, ``AP_hits``, ``AP``,
``nDCG``, ``nDCG_exp``, ``infNDCG``, ``R-Prec``, ``RR``, ``bpref``, ``infAP``, ``MdR``, ``MnR``,
``meanR``, ``geoC``, ``RSum``), in the order of
:data:`fireval.metrics.measures.MEASURE_NAMES`. :mod:`fireval.metrics.measures` builds its name
tables and :func:`~fireval.metrics.measures.parse_measure`'s aliases from :data:`MEASURE_INFO`,
``Measure.info`` returns a measure's family value, and ``fireval measures`` prints them.

Conventions:

* ``cutoff``: :attr:`Cutoff.REQUIRED` (``C@K`` only), :attr:`Cutoff.OPTIONAL` (``AP`` is the full
  ranking, ``AP@K`` the top K) or :attr:`Cutoff.NONE`; ``at_r`` says whether ``@R`` (a cutoff at
  the query's own number of relevant docs) is accepted.
* ``monotone_in_relevance``: making an unjudged or irrelevant doc relevant can only improve the
  value, so ``unjudged=lower|upper`` bound it (the measures without it get ``‡`` in the
  bounds tables). ``P@R`` is the one exception inside a monotone family (it is ``R-Prec``);
  :attr:`fireval.metrics.measures.Measure.monotone_in_relevance` applies it.
* ``aggregate``: ``"mean"`` over queries, ``"median"`` (``MdR``) or ``"composite"`` (``meanR``,
  ``geoC``: combinations of other measures' means). A median names, in ``mean_counterpart``, the
  family whose value is the mean of the same per-query values, and says in ``per_query`` what
  those values are (``MdR``: ``MnR``, "the first-relevant ranks"); ``compare`` and ``budget``,
  which work on per-query means, point to it. This is the only record of which measures are
  medians: :attr:`fireval.metrics.measures.Measure.aggregate` reads it, and the values are
  checked when they are built (:meth:`MeasureInfo.__post_init__`).
* ``description`` is the row of the table in :mod:`fireval.metrics.measures`' docstring
  (``tests/metrics/test_measure_info.py`` keeps the two, and ``docs/metrics.md``, in step).
* ``citation`` names the work that defines the measure (or the tool whose definition fireval
  follows).

This module imports nothing from fireval, so any layer can read it without a cycle.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from enum import StrEnum
from typing import Any

#: where the definitions live, relative to the repository root
DOCS_PAGE = "docs/metrics.md"

_TREC_BOOK = (
    'Voorhees & Harman (eds.) 2005, "TREC: Experiment and Evaluation in Information Retrieval", '
    "MIT Press; as computed by trec_eval"
)
_CLIP4CLIP = (
    'Luo et al. 2021, "CLIP4Clip: An Empirical Study of CLIP for End to End Video Clip Retrieval" '
    "(compute_metrics)"
)
_FIRE = (
    'Rodriguez et al. 2023, "Fighting FIRe with FIRE: Assessing the Validity of Text-to-Video '
    'Retrieval Benchmarks" (EACL Findings)'
)
_BPREF = (
    'Buckley & Voorhees 2004, "Retrieval Evaluation with Incomplete Information" (SIGIR); '
    "as computed by trec_eval (m_bpref.c)"
)
_INFAP = (
    'Yilmaz & Aslam 2006, "Estimating Average Precision with Incomplete and Imperfect Judgments" '
    "(CIKM); as computed by trec_eval (m_infap.c)"
)
_INFNDCG = (
    'Yilmaz, Kanoulas & Aslam 2008, "A Simple and Efficient Sampling Method for Estimating AP and '
    'NDCG" (SIGIR)'
)
#: sources of the C@K aggregates (issue 24: "no published source" was wrong for both)
_MEAN_RECALL = (
    'Yang et al. 2022, "Chinese CLIP: Contrastive Vision-Language Pretraining in Chinese" (arXiv '
    '2211.01335), "MR": mean recall, (R@1 + R@5 + R@10) / 3; fireval averages the six of t2v and v2t'
)
_GEO_MEAN = (
    'Wray et al. 2021, "On Semantic Similarity in Video Retrieval" (CVPR), footnote 1: the geometric '
    "mean of R@1, R@5 and R@10"
)
_RSUM = (
    'Chen et al. 2020, "Fine-grained Video-Text Retrieval with Hierarchical Graph Reasoning" '
    '(HGR, CVPR), "rsum": R@1 + R@5 + R@10 of text-to-video plus those of video-to-text on MSR-VTT'
)


#: how a family's value combines its per-query values (``MeasureInfo.aggregate``)
AGGREGATES = ("mean", "median", "composite")


class Cutoff(StrEnum):
    """Whether a measure takes ``@K``."""

    REQUIRED = "required"
    OPTIONAL = "optional"
    NONE = "none"


@dataclass(frozen=True)
class MeasureInfo:
    """One measure family: what ``-m`` accepts, what it means, and where it comes from."""

    name: str
    #: other spellings parse_measure accepts (case-insensitive; the name itself always is)
    aliases: tuple[str, ...]
    cutoff: Cutoff
    description: str
    citation: str
    _: KW_ONLY
    at_r: bool = False
    higher_is_better: bool = True
    monotone_in_relevance: bool = False
    aggregate: str = "mean"
    #: trec_eval's name for the same number ("" when trec_eval has none)
    trec_eval: str = ""
    #: section of docs/metrics.md that defines it
    anchor: str = "measures-per-query"
    #: for a median (``aggregate="median"``): the family whose value is the mean of the same
    #: per-query values, and what those values are, for messages ("" for every other family)
    mean_counterpart: str = ""
    per_query: str = ""

    def __post_init__(self) -> None:
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"{self.name}: aggregate must be one of {AGGREGATES}, got {self.aggregate!r}")
        median = self.aggregate == "median"
        if median != bool(self.mean_counterpart) or median != bool(self.per_query):
            raise ValueError(
                f"{self.name}: a median (and only a median) names its mean_counterpart and per_query values"
            )

    @property
    def forms(self) -> tuple[str, ...]:
        """The accepted forms, e.g. ``("AP", "AP@K", "AP@R")``."""
        if self.cutoff is Cutoff.NONE:
            return (self.name,)
        out = [] if self.cutoff is Cutoff.REQUIRED else [self.name]
        out.append(f"{self.name}@K")
        if self.at_r:
            out.append(f"{self.name}@R")
        return tuple(out)

    @property
    def form(self) -> str:
        """The forms in one short label: ``C@K``, ``P@K|R``, ``AP[@K|R]``, ``RR``."""
        cut = "@K|R" if self.at_r else "@K"
        if self.cutoff is Cutoff.NONE:
            return self.name
        if self.cutoff is Cutoff.REQUIRED:
            return f"{self.name}{cut}"
        return f"{self.name}[{cut}]"

    @property
    def docs(self) -> str:
        """Link to the definition, e.g. ``docs/metrics.md#measures-per-query``."""
        return f"{DOCS_PAGE}#{self.anchor}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, plus ``forms``, ``form`` and ``docs`` (derived from them)."""
        return {
            "name": self.name,
            "aliases": list(self.aliases),
            "cutoff": self.cutoff.value,
            "at_r": self.at_r,
            "forms": list(self.forms),
            "form": self.form,
            "description": self.description,
            "higher_is_better": self.higher_is_better,
            "monotone_in_relevance": self.monotone_in_relevance,
            "aggregate": self.aggregate,
            "trec_eval": self.trec_eval,
            "citation": self.citation,
            "anchor": self.anchor,
            "docs": self.docs,
            "mean_counterpart": self.mean_counterpart,
            "per_query": self.per_query,
        }


#: every measure family, in the order of ``MEASURE_NAMES`` (cutoff required, optional, none)
MEASURE_INFO: tuple[MeasureInfo, ...] = (
    MeasureInfo(
        "C",
        ("Correct",),
        Cutoff.REQUIRED,
        "Correct@K: 1 if any relevant doc is in the top K. TVR papers call this R@K.",
        f"TVR papers' R@K, e.g. {_CLIP4CLIP}; trec_eval's success_K",
        monotone_in_relevance=True,
        trec_eval="success_K",
    ),
    MeasureInfo(
        "P",
        ("Precision",),
        Cutoff.REQUIRED,
        "precision at K: relevant docs in the top K / K.",
        _TREC_BOOK,
        at_r=True,
        monotone_in_relevance=True,
        trec_eval="P_K",
    ),
    MeasureInfo(
        "Recall",
        (),
        Cutoff.REQUIRED,
        "IR recall at K: relevant docs in the top K / |relevant|.",
        _TREC_BOOK,
        at_r=True,
        trec_eval="recall_K",
    ),
    MeasureInfo(
        "judged",
        (),
        Cutoff.REQUIRED,
        "pool coverage: judged docs in the top K / K (relevance plays no part).",
        f'Sakai 2007, "Alternatives to Bpref" (SIGIR); FIRE\'s p_annotated_preds, {_FIRE}',
    ),
    MeasureInfo(
        "AP_hits",
        (),
        Cutoff.REQUIRED,
        "FIRE's AP: sum of precision at the relevant ranks <= K / hits in the top K (0 without a hit).",
        _FIRE,
    ),
    MeasureInfo(
        "AP",
        ("MAP",),
        Cutoff.OPTIONAL,
        "average precision: sum of precision at the relevant ranks (<= K for AP@K) / |relevant|.",
        _TREC_BOOK,
        at_r=True,
        trec_eval="map (AP), map_cut_K (AP@K)",
    ),
    MeasureInfo(
        "nDCG",
        (),
        Cutoff.OPTIONAL,
        "DCG / ideal DCG with gain = grade and discount 1/log2(rank+1), over the full ranking or the top K.",
        'Järvelin & Kekäläinen 2002, "Cumulated Gain-Based Evaluation of IR Techniques" (ACM TOIS); '
        'nDCG@R: Wray et al. 2021, "On Semantic Similarity in Video Retrieval" (CVPR)',
        at_r=True,
        trec_eval="ndcg (nDCG), ndcg_cut_K (nDCG@K)",
    ),
    MeasureInfo(
        "nDCG_exp",
        (),
        Cutoff.OPTIONAL,
        "nDCG with exponential gain 2^grade - 1 instead of the grade.",
        'Burges et al. 2005, "Learning to Rank using Gradient Descent" (ICML)',
        at_r=True,
    ),
    MeasureInfo(
        "infNDCG",
        (),
        Cutoff.OPTIONAL,
        "inferred nDCG: estimated DCG / estimated ideal DCG from the judged sample (unjudged pairs are "
        "outside the pool: gain 0).",
        _INFNDCG,
        at_r=True,
        anchor="measures-for-incomplete-judgments",
    ),
    MeasureInfo(
        "R-Prec",
        ("R-Precision", "Rprec"),
        Cutoff.NONE,
        "R-precision: relevant docs in the top |relevant| / |relevant| (= P@R = Recall@R).",
        'Buckley & Voorhees 2000, "Evaluating Evaluation Measure Stability" (SIGIR); trec_eval\'s Rprec',
        trec_eval="Rprec",
    ),
    MeasureInfo(
        "RR",
        ("MRR", "recip_rank"),
        Cutoff.NONE,
        "reciprocal rank: 1 / rank of the first relevant doc (0 if none is retrieved).",
        _TREC_BOOK,
        monotone_in_relevance=True,
        trec_eval="recip_rank",
    ),
    MeasureInfo(
        "bpref",
        (),
        Cutoff.NONE,
        "binary preference: mean over relevant docs of 1 - min(judged irrelevant above, R) / min(N, R).",
        _BPREF,
        trec_eval="bpref",
        anchor="measures-for-incomplete-judgments",
    ),
    MeasureInfo(
        "infAP",
        ("inf_AP",),
        Cutoff.NONE,
        "inferred AP: AP with the precision above each relevant doc estimated from the judged docs above it.",
        _INFAP,
        trec_eval="infAP",
        anchor="measures-for-incomplete-judgments",
    ),
    MeasureInfo(
        "MdR",
        ("MedR",),
        Cutoff.NONE,
        "median over queries of the rank of the first relevant doc (lower is better).",
        f"TVR papers' MdR, e.g. {_CLIP4CLIP}",
        higher_is_better=False,
        monotone_in_relevance=True,
        aggregate="median",
        mean_counterpart="MnR",
        per_query="the first-relevant ranks",
    ),
    MeasureInfo(
        "MnR",
        ("meanR_rank",),
        Cutoff.NONE,
        "mean over queries of the rank of the first relevant doc (lower is better).",
        f"TVR papers' MnR, e.g. {_CLIP4CLIP}",
        higher_is_better=False,
        monotone_in_relevance=True,
    ),
    MeasureInfo(
        "meanR",
        (),
        Cutoff.NONE,
        "aggregate only: mean of C@1, C@5 and C@10 over t2v and v2t (direction both).",
        _MEAN_RECALL,
        monotone_in_relevance=True,
        aggregate="composite",
        anchor="aggregates",
    ),
    MeasureInfo(
        "geoC",
        (),
        Cutoff.NONE,
        "aggregate only: geometric mean of C@1, C@5 and C@10 per direction (0 if any is 0).",
        _GEO_MEAN,
        monotone_in_relevance=True,
        aggregate="composite",
        anchor="aggregates",
    ),
    MeasureInfo(
        "RSum",
        ("rsum", "R-Sum"),
        Cutoff.NONE,
        "aggregate only: C@1 + C@5 + C@10 of t2v plus those of v2t (direction both; printed 0-600).",
        _RSUM,
        monotone_in_relevance=True,
        aggregate="composite",
        anchor="aggregates",
    ),
)

#: family name -> value
MEASURE_INFO_BY_NAME: dict[str, MeasureInfo] = {i.name: i for i in MEASURE_INFO}
