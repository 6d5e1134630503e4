"""Blind judging of answers: what an annotator gets back for an answer must not tell a gold item
from a pool item (:mod:`fireval.web.handles`).

- the answer to ``POST /api/labels`` / ``/api/skip`` carries an opaque answer handle, never a row
  id (gold answers are numbered in another table), with the same keys for both kinds;
- a second, different answer is 409 for both kinds with the same message (the first answer
  keeps counting for gold accuracy); the same answer again is ``duplicate`` with the same handle;
- any string that is not a handle is 404 ``unknown item`` on every annotator endpoint, whatever
  its length (the body size limit is what refuses huge input: 413);
- ``fireval serve --no-prefetch``.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from helpers import label_of, login, raw_id, session_sid
from test_annotation_ux import db_url, post_json  # noqa: F401  (fixture)
from test_item_handles import _app

from fireval.judging.gold import GOLD_BASE
from fireval.judging.store import Store
from fireval.web.handles import answer_row

SHAPE = re.compile(r"[A-Za-z0-9_-]{32}")


def _conflict(detail: str, item_handle: str) -> str:
    """A 409's message with the item's handle (the only item-specific part) taken out."""
    return detail.replace(item_handle, "<item>")


def test_answers_of_gold_and_pool_items_look_alike(db_url) -> None:  # noqa: F811
    app, tokens = _app(db_url)
    seen: dict[str, list[dict]] = {"gold": [], "pool": []}
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        sid = session_sid(c)
        item = c.get("/api/next").json()["item"]
        while item is not None:
            h = item["id"]
            kind = "gold" if raw_id(c, h) > GOLD_BASE else "pool"
            # some answers are skips (by /api/skip): the 3rd and 6th of a kind (gold positions are drawn)
            skip = len(seen[kind]) % 3 == 2
            url, body = (
                ("/api/skip", {"item_id": h, "reason": "unclear"})
                if skip
                else ("/api/labels", {"item_id": h, "label": "irrelevant"})
            )
            r = post_json(c, url, tok, {**body, "next": True})
            assert r.status_code == 200, r.text
            first = r.json()
            # the same answer again: duplicate, the same answer handle
            again = post_json(c, url, tok, body)
            assert again.status_code == 200
            assert again.json() == {"status": "duplicate", "answer": first["answer"], "item_id": h}
            # another answer: 409 for both kinds, with the same message
            other = post_json(c, "/api/labels", tok, {"item_id": h, "label": "relevant"})
            code = app.state.answer_handles.decode(sid, first["answer"])
            seen[kind].append(
                {
                    "keys": (url, tuple(sorted(first))),
                    "next_keys": tuple(sorted(first["next"] or {})),
                    "answer": first["answer"],
                    "row": answer_row(code) if code is not None else None,
                    "raw": raw_id(c, h),
                    "conflict": (other.status_code, _conflict(other.json()["detail"], h)),
                    "conflict_keys": tuple(sorted(other.json())),
                }
            )
            item = first["next"]
        history = c.get("/api/history").json()["answers"]
    gold, pool = seen["gold"], seen["pool"]
    assert len(gold) == 2 and len(pool) == 6
    # the same keys for both kinds (no label_id), an answer handle of one shape
    assert {s["keys"] for s in gold} <= {s["keys"] for s in pool}
    assert all("label_id" not in s["keys"][1] and "answer" in s["keys"][1] for s in gold + pool)
    assert all(SHAPE.fullmatch(s["answer"]) for s in gold + pool)
    assert len({s["answer"] for s in gold + pool}) == len(gold) + len(pool)
    # the handle stands for the right row: a labels row (pool), a gold_answers row (gold)
    st = Store(db_url, upgrade=False)
    try:
        v = st.votes()
        rows = dict(zip(v["item_id"].tolist(), v["label_id"].tolist()))
        assert all(s["row"] == (rows[s["raw"]], False) for s in pool)
        assert all(s["row"] is not None and s["row"][1] for s in gold)
        # the first answer counts: both gold items answered "irrelevant" (or skipped) once
        acc = st.gold.accuracy()
    finally:
        st.close()
    answered = sum(1 for s in gold if s["keys"][0] == "/api/labels")
    if answered:
        assert acc["ann"]["answered"] == answered
        assert acc["ann"]["correct"] == sum(
            1 for s in gold if s["keys"][0] == "/api/labels" and s["raw"] - GOLD_BASE == 2
        )  # gold 2 ("a cat swims") is irrelevant, gold 1 relevant
    # a second, different answer: 409 for both kinds, the same message and shape
    conflicts = {(s["conflict"][0], s["conflict"][1].split("'")[0]) for s in gold + pool}
    assert conflicts == {(409, "item <item> already labelled ")}, conflicts
    assert {s["conflict_keys"] for s in gold + pool} == {("detail",)}
    for s in gold + pool:
        label = "skip" if s["keys"][0] == "/api/skip" else "irrelevant"
        assert (
            s["conflict"][1] == f"item <item> already labelled {label!r}; undo it first to change the answer"
        )
    # the history names answers by the same handles, never by row ids
    assert history and all("label_id" not in a for a in history)
    assert {a["answer"] for a in history} == {s["answer"] for s in gold + pool}  # gold listed too


def test_label_of_maps_an_answer_back(tmp_path) -> None:
    app, tokens = _app(f"sqlite:///{tmp_path / 'a.db'}")
    app.state.store.gold.key = None  # the fixed rule: a pool item first (judging.gold._gold_turn)
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        h = c.get("/api/next").json()["item"]["id"]
        r = post_json(c, "/api/labels", tok, {"item_id": h, "label": "relevant"}).json()
        assert label_of(c, r["answer"]) == int(app.state.store.votes()["label_id"][0])
    with TestClient(app) as other:  # another session cannot read the handle
        login(other, tokens["ann"])
        assert other.app.state.answer_handles.decode(session_sid(other), r["answer"]) is None


@pytest.mark.parametrize("length", [0, 1, 31, 33, 64, 65, 200, 5000])
def test_any_non_handle_string_is_an_unknown_item_everywhere(tmp_path, length) -> None:
    app, tokens = _app(f"sqlite:///{tmp_path / 'u.db'}")
    bad = ("A" * length) if length != 33 else "é" * 33
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        c.get("/api/next")
        answers = {
            url: post_json(c, url, tok, body)
            for url, body in (
                ("/api/labels", {"item_id": bad, "label": "relevant"}),
                ("/api/undo", {"item_id": bad}),
                ("/api/skip", {"item_id": bad, "reason": "x"}),
                ("/api/flags", {"item_id": bad, "reason": "x"}),
                ("/api/history/change", {"item_id": bad, "label": "relevant"}),
            )
        }
        got = {url: (r.status_code, r.json()) for url, r in answers.items()}
        assert all(v == (404, {"detail": "unknown item"}) for v in got.values()), got
        assert app.state.store.votes()["label_id"].size == 0


def test_huge_item_ids_are_refused_by_the_body_limit(tmp_path) -> None:
    app, tokens = _app(f"sqlite:///{tmp_path / 'h.db'}")
    huge = "A" * (app.state.config.max_body_bytes + 1)
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        for url in ("/api/labels", "/api/undo", "/api/skip", "/api/flags", "/api/history/change"):
            r = post_json(c, url, tok, {"item_id": huge, "label": "relevant"})
            assert r.status_code == 413, (url, r.status_code)


@pytest.mark.parametrize("flag", [[], ["--no-prefetch"]])
def test_serve_no_prefetch(tmp_path, monkeypatch, flag) -> None:
    import fireval.web.workers as workers
    from fireval.cli import main
    from fireval.web.app import create_app

    got = {}
    monkeypatch.setattr(workers, "serve", lambda cfg, *a: got.setdefault("cfg", cfg))
    db = f"sqlite:///{tmp_path / 'p.db'}"
    _app(db)  # the store, its items and annotators
    st = Store(db, upgrade=False)
    token = st.add_annotator("pat")[1]
    st.close()
    with pytest.raises(SystemExit) as done:
        main(["serve", "--db", db, "--port", "0", "--video-url-template", "/m/{video_id}.mp4", *flag])
    assert not done.value.code
    cfg, on = got["cfg"], not flag
    assert cfg.prefetch is on
    with TestClient(create_app(cfg)) as c:
        login(c, token)
        page = c.get("/annotate").text
    # the page's script asks /api/peek only from the prefetch player's data-peek attribute
    assert 'id="player"' in page
    assert ('data-peek="/api/peek"' in page) is on


def test_a_changed_answer_is_409_for_gold_and_pool_alike(tmp_path) -> None:
    app, tokens = _app(f"sqlite:///{tmp_path / 'c.db'}")
    got: dict[str, set] = {"gold": set(), "pool": set()}
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        item = c.get("/api/next").json()["item"]
        while item is not None:
            h = item["id"]
            kind = "gold" if raw_id(c, h) > GOLD_BASE else "pool"
            r = post_json(c, "/api/labels", tok, {"item_id": h, "label": "relevant", "next": True})
            assert r.status_code == 200
            other = post_json(c, "/api/labels", tok, {"item_id": h, "label": "irrelevant"})
            got[kind].add((other.status_code, _conflict(other.text, h)))
            item = r.json()["next"]
    assert got["gold"] == got["pool"] and len(got["pool"]) == 1, got
    st = Store(f"sqlite:///{tmp_path / 'c.db'}", upgrade=False)
    try:  # the first answer counts: gold 1 is relevant (correct), gold 2 irrelevant (wrong)
        assert st.gold.accuracy()["ann"] == {"answered": 2, "correct": 1, "accuracy": 0.5}
    finally:
        st.close()
