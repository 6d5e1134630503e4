"""``POST /api/labels`` parses its body by hand (the hot path skips FastAPI's model machinery):
it must accept and refuse exactly what the Pydantic model :class:`fireval.web.app.LabelIn`
does, and give the same values."""

from __future__ import annotations

import json

import pytest
from fastapi.responses import Response
from pydantic import ValidationError

from fireval.web.app import LabelIn, parse_label

BODIES = (
    [{"item_id": i, "label": "relevant"} for i in (1, 0, -5, 2**70, True, 1.0, 1.5, "1", None, [1], {"a": 1})]
    + [{"item_id": 1, "label": lab} for lab in ("x", 1, None, True, ["a"], "")]
    + [
        {"item_id": 1, "label": "skip", "time_spent_ms": t}
        for t in (None, 5, 5.0, 5.5, "7", " 8 ", "-3", "abc", True, False, [1], 1e300, "1e3", "+4")
    ]
    + [
        {"item_id": 1, "label": "skip", "next": n}
        for n in (True, False, 0, 1, 2, "true", "yes", "off", "maybe", None, 1.0, 0.0, "1", "0", "T")
    ]
    + [{}, {"label": "x"}, {"item_id": 3}, [], 5, "s", None, {"item_id": 2, "label": "skip", "other": 1}]
)


@pytest.mark.parametrize("body", BODIES, ids=lambda b: json.dumps(b)[:60])
def test_parse_label_agrees_with_the_model(body) -> None:
    raw = json.dumps(body).encode()
    mine = parse_label(raw)
    try:
        m = LabelIn.model_validate(json.loads(raw))
    except ValidationError:
        assert isinstance(mine, Response) and mine.status_code == 422
        assert json.loads(mine.body)["detail"]
    else:
        assert mine == (m.item_id, m.label, m.time_spent_ms, m.next)


@pytest.mark.parametrize("raw", [b"", b"{", b"nan", b"[1, 2", '{"item_id": 1, "label": "\u00e9"'.encode()])
def test_malformed_json_is_422(raw) -> None:
    out = parse_label(raw)
    assert isinstance(out, Response) and out.status_code == 422
