"""Pairs that one judging item answers: captions sharing a normalised text (one item per text and
video), and the same (caption, video) pair reached from both directions. A plan's own labels must
include all of them (they depend on its sample), and the walk's budget counts them once."""

from __future__ import annotations

import numpy as np

from fireval.core.collection import Collection
from fireval.core.direction import Direction
from fireval.estimation.estimate import _same_text
from fireval.estimation.plan import Part
from fireval.estimation.walk import distinct_pairs


def _coll() -> Collection:
    texts = ("A man sings.", "a dog runs", "a man sings", "a cat", "A  MAN sings")
    return Collection(
        "t", ("v0", "v1", "v2"), tuple(f"c{i}" for i in range(5)), texts, np.array([0, 1, 2, 0, 1])
    )


def test_a_label_reaches_every_caption_with_the_same_text() -> None:
    coll = _coll()
    g = coll.text_groups
    assert g[0] == g[2] == g[4] and len({g[0], g[1], g[3]}) == 3
    n_v = coll.n_videos
    keys = np.array([0 * n_v + 2, 3 * n_v + 1], np.int64)  # (c0, v2) and (c3, v1)
    got = sorted(_same_text(coll, keys).tolist())
    same = [i for i in range(5) if i in (0, 2, 4)]  # "a man sings" after normalisation
    assert got == sorted([c * n_v + 2 for c in same] + [3 * n_v + 1])
    assert _same_text(coll, np.zeros(0, np.int64)).size == 0


def test_the_budget_counts_a_pair_once_across_runs_and_directions() -> None:
    t2v = Part("a", Direction.T2V, None, "walk", "-", 5, [], pairs=[(0, 2, 0), (1, 1, 0)])
    t2v_b = Part("b", Direction.T2V, None, "walk", "-", 5, [], pairs=[(0, 2, 3)])
    v2t = Part("a", Direction.V2T, None, "walk", "-", 3, [], pairs=[(2, 0, 0), (1, 4, 0)])
    assert distinct_pairs([t2v, t2v_b, v2t]) == {(0, 2), (1, 1), (4, 1)}
