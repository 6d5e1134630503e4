"""Orientation: are a square score matrix's rows the captions (as fireval reads them) or the videos?

A caption × video matrix of a non-square collection can only be read one way (the loaders refuse
the wrong shape or transpose on ``--run-direction v2t``), and ranked lists name their ids: the
shape or the ids tell, ``pass``. A square matrix (as many captions as videos) could be either.

* When every video has exactly one caption (MSR-VTT 1k-A, DiDeMo, ActivityNet paragraphs), the
  text of caption ``i`` *is* the text of video ``i``, so the two readings carry the same text and
  the text cannot tell them apart: ``inconclusive``, said plainly.
* Otherwise the alignment statistic (:mod:`fireval.checks.alignment`) is computed for the matrix
  as given and for its transpose: ``pass`` when only the given reading aligns, ``fail`` when only
  the transpose does (the file holds video × caption scores: load it with ``--run-direction v2t``),
  ``inconclusive`` when both or neither do.
"""

from __future__ import annotations

import numpy as np

from fireval.checks.alignment import alignment
from fireval.checks.base import CheckResult, Status
from fireval.checks.definitions import ORIENTATION
from fireval.checks.scan import scan
from fireval.checks.text import TextModel
from fireval.core import Collection, Direction, Run

CHECK = ORIENTATION


def orientation(
    run: Run, collection: Collection, model: TextModel, given: CheckResult | None = None, *, k: int = 10
) -> CheckResult:
    """The orientation check of one run (``given``: its t2v alignment result, if already computed)."""
    n_c, n_v = collection.shape
    if run.scores is None:
        return CheckResult(CHECK.name, Status.PASS, "ranked lists name their ids", {"told_by": "ids"})
    if n_c != n_v:
        return CheckResult(
            CHECK.name,
            Status.PASS,
            f"the shape tells: {n_c} caption rows × {n_v} video columns",
            {"told_by": "shape"},
        )
    if np.bincount(collection.caption_video, minlength=n_v).max() == 1:
        return CheckResult(
            CHECK.name,
            Status.INCONCLUSIVE,
            "cannot be told: the matrix is square and each video has one caption, so rows=captions and "
            "rows=videos carry the same text",
            {"told_by": "nothing"},
        )
    if given is None:
        given = alignment(scan(run, collection, Direction.T2V, k=k), collection, model, k=k)
    flipped = alignment(
        scan(Run(run.name, scores=run.scores.T), collection, Direction.T2V, k=k), collection, model, k=k
    )
    figures = {
        "told_by": "text",
        "ratio_as_given": given.figures.get("ratio"),
        "ratio_transposed": flipped.figures.get("ratio"),
    }
    if given.status is Status.PASS and flipped.status is not Status.PASS:
        return CheckResult(CHECK.name, Status.PASS, "the text fits rows=captions", figures)
    if flipped.status is Status.PASS and given.status is not Status.PASS:
        return CheckResult(
            CHECK.name,
            Status.FAIL,
            "the text fits rows=videos: the matrix looks transposed (load it with --run-direction v2t)",
            figures,
        )
    return CheckResult(CHECK.name, Status.INCONCLUSIVE, "the text fits neither reading better", figures)
