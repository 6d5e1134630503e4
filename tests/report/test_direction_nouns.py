"""Direction-dependent notes name the right document: a video for t2v, a caption for v2t."""

from __future__ import annotations

import pandas as pd
import pytest

from fireval.analysis.trust import analyse
from fireval.report.nouns import doc_noun, query_noun
from fireval.report.tables import build_tables

from .conftest import simple_values


def test_nouns_per_direction() -> None:
    assert doc_noun("t2v") == "video" and doc_noun("v2t") == "caption"
    assert query_noun("t2v") == "caption" and query_noun(["v2t"], plural=True) == "videos"
    assert "a video for t2v, a caption for v2t" in doc_noun(["t2v", "v2t"])


@pytest.mark.parametrize(
    "direction, says, never",
    [
        ("v2t", "at least one relevant caption", "relevant video"),
        ("t2v", "at least one relevant video", "caption"),
    ],
)
def test_paper_note_names_the_direction_s_documents(toy, direction: str, says: str, never: str) -> None:  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    a = analyse(
        coll,
        runs,
        {"original": sets["original"]},
        measures=["C@1"],
        values_fn=simple_values,
        n_resamples=50,
        budget_resamples=20,
        direction=direction,
        paper_directions=[direction],
    )
    note = next(t for t in build_tables(a, "ir") if t.key == "paper").note
    assert says in note and never not in note


def test_bounds_table_v2t_speaks_of_captions() -> None:
    from fireval.report.terminal import bounds_table

    rows = [
        {"run": "r", "labels": "original", "direction": "v2t", "measure": "C@1", "unjudged": u, "value": v}
        for u, v in (("lower", 0.5), ("condensed", 1.0), ("upper", 1.0))
    ]
    tab = bounds_table(pd.DataFrame(rows))
    text = str(tab.title) + " " + str(tab.caption)
    assert "Unjudged captions counted irrelevant" in text and "videos" not in text
    assert "without unjudged captions only the relevant ones are left" in text
