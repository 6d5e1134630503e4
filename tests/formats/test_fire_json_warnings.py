"""``read_fire_json`` called directly returns its warnings and does not log them (before: every
line was logged on ``fireval.formats.fire_json`` as well as returned); ``log=True`` asks for the
log lines too. The CLI's lines are unchanged (``read_labels`` never logged them)."""

from __future__ import annotations

import json
import logging

from fireval import api
from fireval.formats import read_fire_json


def _doc(tmp_path):  # type: ignore[no-untyped-def]
    recs = [
        {"label": "relevant", "video_id": "v2", "query": "a man is cooking"},  # c0 and c3 share it
        {"label": "relevant", "video_id": "v9", "query": "a dog runs"},  # unknown video
    ]
    p = tmp_path / "fire.json"
    p.write_text(json.dumps({"annotations": recs}))
    return p


def test_direct_call_returns_warnings_without_logging(tmp_path, tiny, caplog) -> None:
    p = _doc(tmp_path)
    with caplog.at_level(logging.DEBUG):
        imp = read_fire_json(p, tiny)
    assert len(imp.warnings) == 1 and "several captions" in imp.warnings[0]
    assert [u.reason for u in imp.unmatched] == ["unknown video"]
    assert not caplog.records
    with caplog.at_level(logging.WARNING, logger="fireval.formats.fire_json"):
        again = read_fire_json(p, tiny, log=True)
    assert [r.getMessage() for r in caplog.records] == again.warnings == imp.warnings


def test_the_api_carries_the_same_line_first(tmp_path, tiny, caplog) -> None:
    p = _doc(tmp_path)
    with caplog.at_level(logging.DEBUG):
        j = api.load_labels(p, tiny)
    assert j.warnings[0] == read_fire_json(p, tiny).warnings[0]
    assert any("could not be joined" in w for w in j.warnings)
    assert not caplog.records
