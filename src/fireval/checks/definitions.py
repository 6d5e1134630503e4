"""The input checks as values: name, one-line description, rationale with its citation.

One :class:`~fireval.checks.base.Check` per check, in the order reports list them
(:data:`CHECKS`). Each check module (:mod:`~fireval.checks.alignment`,
:mod:`~fireval.checks.agreement`, :mod:`~fireval.checks.truncation`,
:mod:`~fireval.checks.orientation`) takes its value from here and names its results with it;
``fireval check --list`` and the docs read only this module.

This module imports only :mod:`fireval.checks.base` (no numpy, no engine), so listing the
checks stays light (``tests/cli/test_import_cost_checks.py``), as :mod:`fireval.metrics.definitions`
does for the measures.
"""

from __future__ import annotations

from fireval.checks.base import Check

ALIGNMENT = Check(
    name="alignment",
    description="the run's top-K (instance positives left out) follows the collection's text better "
    "than the run's own top-K of other queries",
    rationale="A run whose rows/columns are in another order than the collection keeps a correct "
    "diagonal but pairs every query with the wrong neighbours; per-query comparisons, pooling and "
    "overlap with it are meaningless. TF-IDF cosine (Sparck Jones 1972), paired one-sided test over "
    "queries against a permutation null (Fisher 1935).",
)

AGREEMENT = Check(
    name="agreement",
    description="two runs' top-K lists (instance positives left out) overlap beyond chance",
    rationale="Runs in different row/column orders agree only at chance beyond the diagonal; "
    "comparing, pooling or fusing them per query is meaningless. Overlap against the "
    "hypergeometric chance level and a permutation null (Fisher 1935).",
)

TRUNCATION = Check(
    name="truncation",
    description="the run ranks only its top k per query; the rest is one tie at the row's minimum",
    rationale="Below the cut, a relevant document's rank is an expectation over a random order of "
    "the tail (McSherry & Najork 2008), not a property of the model: MnR, MdR, AP, full nDCG, "
    "R-Prec and cutoffs deeper than k depend on it.",
)

ORIENTATION = Check(
    name="orientation",
    description="a square score matrix's rows are captions, not videos (where the text can tell)",
    rationale="A transposed square matrix evaluates without an error but swaps t2v and v2t; the "
    "collection's text can tell the two readings apart only when videos have several captions.",
)

#: every input check, in the order reports list them
CHECKS: tuple[Check, ...] = (ALIGNMENT, AGREEMENT, TRUNCATION, ORIENTATION)

__all__ = ["AGREEMENT", "ALIGNMENT", "CHECKS", "ORIENTATION", "TRUNCATION"]
