"""What the FIRE JSON round trip preserves (docs/formats.md, "Round trip").

``judgments_to_fire_records`` -> ``write_fire_json`` -> ``read_fire_json`` keys labels by
(normalised query text, video). Expected results below are written from that rule: a label of
one caption comes back on every caption with the same normalised text; same-text captions with
different relevance for a video come back unresolved; grades come back as 0/1.
"""

from __future__ import annotations

import logging

from fireval.core import Collection, Judgments
from fireval.formats import judgments_to_fire_records, read_fire_json, write_fire_json


def _coll(texts: list[str]) -> Collection:
    return Collection.from_pairs("msrvtt-toy", [(f"c{i}", f"v{i}", t) for i, t in enumerate(texts)])


def _round_trip(j: Judgments, coll: Collection, tmp_path):  # type: ignore[no-untyped-def]
    anns, dis = judgments_to_fire_records(j, coll)
    path = tmp_path / "fire.json"
    write_fire_json(path, anns, dis, {})
    return read_fire_json(path, coll)


def _pairs(j: Judgments) -> dict[tuple[int, int], float]:
    return {(int(r), int(c)): float(g) for r, c, g in zip(j.rows, j.cols, j.grades, strict=True)}


def test_unique_texts_and_binary_grades_round_trip_exactly(tmp_path, caplog) -> None:
    coll = _coll(["a dog runs", "a man cooks", "kids play football"])
    j = Judgments.from_arrays(coll.shape, [0, 0, 1, 2], [0, 1, 2, 0], [1, 0, 1, 0], "human")
    with caplog.at_level(logging.WARNING):
        imp = _round_trip(j, coll, tmp_path)
    assert _pairs(imp.judgments) == _pairs(j)
    assert imp.warnings == [] and imp.shared_text_records == 0 and not caplog.records


def test_labels_spread_to_same_text_captions_and_the_import_warns(tmp_path, caplog) -> None:
    coll = _coll(["A man plays guitar", "a man  plays guitar/", "dog runs"])  # c0, c1: same text
    j = Judgments.from_arrays(coll.shape, [0, 2], [2, 0], [1, 0], "human")  # only c0 labels v2
    with caplog.at_level(logging.WARNING, logger="fireval.formats.fire_json"):
        imp = _round_trip(j, coll, tmp_path)
    assert _pairs(imp.judgments) == {(0, 2): 1.0, (1, 2): 1.0, (2, 0): 0.0}  # c1 gained c0's label
    assert imp.shared_text_records == 1
    assert len(imp.warnings) == 1 and "\n" not in imp.warnings[0]
    assert "1 FIRE record(s) name a query text that several captions" in imp.warnings[0]
    assert not caplog.records  # returned in imp.warnings, not logged as well


def test_same_text_captions_with_different_labels_come_back_unresolved(tmp_path) -> None:
    coll = _coll(["A man plays guitar", "a man  plays guitar/", "dog runs"])
    j = Judgments.from_arrays(coll.shape, [0, 1], [2, 2], [1, 0], "human")
    imp = _round_trip(j, coll, tmp_path)
    assert len(imp.judgments) == 0
    assert sorted(map(tuple, imp.judgments.unresolved.tolist())) == [(0, 2), (1, 2)]


def test_grades_come_back_binary(tmp_path) -> None:
    coll = _coll(["a dog runs", "a man cooks"])
    j = Judgments.from_arrays(coll.shape, [0, 1], [1, 0], [3, 0], "human")
    assert _pairs(_round_trip(j, coll, tmp_path).judgments) == {(0, 1): 1.0, (1, 0): 0.0}
