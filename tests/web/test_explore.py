"""Explorer: view data, filters, and the queue endpoint (TestClient; the browser test is separate)."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from helpers import csrf_from, login

from fireval.core import Collection, Judgments, Run, merge
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app
from fireval.web.explore import build_data, filter_queries


def toy_data() -> tuple[Collection, dict[str, Run], Judgments]:
    pairs = [
        ("c0", "v0", "a man plays guitar"),
        ("c1", "v1", "a dog runs on the beach in the sun"),
        ("c2", "v2", "<b>bold</b> cooking in a small kitchen"),
        ("c3", "v3", "a man plays guitar"),
    ]
    coll = Collection.from_pairs("toy", pairs)
    a = np.array([[0.9, 0.8, 0.1, 0.2], [0.1, 0.3, 0.9, 0.2], [0.2, 0.1, 0.8, 0.7], [0.1, 0.2, 0.3, 0.9]])
    b = np.array([[0.5, 0.9, 0.1, 0.2], [0.1, 0.9, 0.3, 0.2], [0.2, 0.1, 0.3, 0.7], [0.1, 0.2, 0.3, 0.9]])
    human = Judgments.from_arrays(coll.shape, [0, 2], [1, 3], [1, 0], "human", unresolved=np.array([[1, 2]]))
    j = merge(
        [coll.instance_judgments(), human, Judgments.from_arrays(coll.shape, [1], [3], [0.5], "proxy:bow")]
    )
    return coll, {"A": Run("A", scores=a), "B": Run("B", scores=b)}, j


def test_build_data_states_and_filters() -> None:
    coll, runs, j = toy_data()
    d = build_data(coll, runs, j, k=2)
    np.testing.assert_array_equal(d.tops["A"], [[0, 1], [2, 1], [2, 3], [3, 2]])
    # A, query 0: v0 instance relevant, v1 human relevant
    np.testing.assert_array_equal(d.state["A"][0], [1, 1])
    # A, query 1: v2 disagreement (unresolved), v1 instance relevant
    np.testing.assert_array_equal(d.state["A"][1], [2, 1])
    # A, query 2: v2 instance, v3 human irrelevant
    np.testing.assert_array_equal(d.state["A"][2], [1, 0])
    # B, query 3: v3 relevant, v2 unjudged
    np.testing.assert_array_equal(d.state["B"][3], [1, -1])
    # C@1: A right on 0,2,3 (q1 top is a disagreement); B right on 0 (v1 human), 1, 3; q2 B top = v3 irrelevant
    np.testing.assert_array_equal(d.correct1, [[1, 0, 1, 1], [1, 1, 0, 1]])
    np.testing.assert_array_equal(d.differ, [False, True, True, False])
    np.testing.assert_array_equal(d.n_unjudged, [0, 1, 0, 1])
    np.testing.assert_array_equal(d.n_disagree, [0, 1, 0, 0])
    assert list(filter_queries(d, unjudged=True)) == [1, 3]
    assert list(filter_queries(d, disagreement=True)) == [1]
    assert list(filter_queries(d, differ=True, min_len=5)) == [1, 2]
    assert list(filter_queries(d, max_len=4)) == [0, 3]
    assert list(filter_queries(d, text="PLAYS guitar")) == [0, 3]


@pytest.fixture()
def client_and_tokens(tmp_path):  # type: ignore[no-untyped-def]
    coll, runs, j = toy_data()
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store(url)
    _, admin = store.add_annotator("boss", "admin")
    _, ann = store.add_annotator("ann", "annotator")
    store.close()
    app = create_app(
        WebConfig(
            db_url=url,
            dataset="toy",
            collection=coll,
            runs=runs,
            judgments=j,
            video_url_template="/media/{video_id}.mp4",
            extra={"explore_k": 2},
        )
    )
    with TestClient(app) as client:
        yield client, admin, ann, app


def test_pages_need_login_and_escape(client_and_tokens) -> None:  # type: ignore[no-untyped-def]
    client, admin, ann, _ = client_and_tokens
    assert client.get("/explore", headers={"accept": "application/json"}).status_code == 401
    login(client, ann)
    r = client.get("/explore?unjudged=1")
    assert r.status_code == 200
    assert r.text.count("<tr data-index=") == 2
    assert "&lt;b&gt;bold&lt;/b&gt;" in client.get("/explore").text
    q = client.get("/explore/query/3")
    assert 'data-state="unjudged"' in q.text and 'src="/media/v3.mp4"' in q.text
    assert 'name="pair"' not in q.text  # annotators cannot queue
    assert client.get("/explore/query/99").status_code == 404
    assert client.get("/explore?min_len=abc").status_code == 422


def test_queue_admin_only_csrf_and_store(client_and_tokens) -> None:  # type: ignore[no-untyped-def]
    client, admin, ann, app = client_and_tokens
    tok = login(client, ann)
    assert client.post("/explore/queue", data={"pair": "3:2", "csrf_token": tok}).status_code == 403
    client.post("/logout", data={"csrf_token": tok})
    tok = login(client, admin)
    page = client.get("/explore/query/3")
    assert 'name="pair" value="3:2"' in page.text
    assert client.post("/explore/queue", data={"pair": "3:2", "csrf_token": "wrong"}).status_code == 403
    assert (
        client.post("/explore/queue", data={"pair": "0:0", "csrf_token": csrf_from(page.text)}).status_code
        == 422
    )
    r = client.post(
        "/explore/queue",
        data={"pair": ["3:2", "1:2"], "csrf_token": csrf_from(page.text)},
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == "/explore/query/3?queued=2"
    items = app.state.store.items_table()
    got = {(i["caption"], i["video_id"]) for i in items}
    assert got == {("a man plays guitar", "v2"), ("a dog runs on the beach in the sun", "v2")}
    guitar = next(i for i in items if i["caption"] == "a man plays guitar")
    import json

    assert sorted(json.loads(guitar["caption_ids"])) == ["c0", "c3"]  # same normalised text
    assert json.loads(guitar["runs"]) == {"A": 2, "B": 2}  # both rank v2 second for c3
    again = client.post("/explore/queue", data={"pair": "3:2", "csrf_token": tok}, follow_redirects=False)
    assert again.headers["location"].endswith("queued=0&present=1")  # QA: say it was already queued
    shown = client.get(again.headers["location"])
    assert "0 pair(s) added to the annotation queue; 1 already in it." in shown.text
