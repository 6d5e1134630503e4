"""The explorer of ``serve --db X`` shows X's own labels (issue 24 item 9), kept up to date."""

from __future__ import annotations

from fastapi.testclient import TestClient
from helpers import login
from test_explore import toy_data

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app


def _app(tmp_path, **kw):  # type: ignore[no-untyped-def]
    coll, runs, j = toy_data()
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store(url)
    boss, admin = store.add_annotator("boss", "admin")
    store.close()
    app = create_app(
        WebConfig(db_url=url, collection=coll, runs=runs, judgments=j, extra={"explore_k": 2}, **kw)
    )
    return app, admin, boss


def _unjudged(client: TestClient) -> list[int]:
    page = client.get("/explore?unjudged=1").text
    return [int(part.split('"')[0]) for part in page.split('<tr data-index="')[1:]]


def test_store_labels_are_shown_by_default_and_follow_new_answers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    app, admin, boss = _app(tmp_path)
    with TestClient(app) as client:
        login(client, admin)
        assert _unjudged(client) == [1, 3]  # q3: v2 in both runs' top 2, not labelled yet
        store = app.state.store
        store.add_items([PoolItem("a man plays guitar", ["c3"], "v2", {"A": 2})], "toy")
        (item,) = store.items_table()
        assert _unjudged(client) == [1, 3]  # queued is not labelled
        store.adjudicate(boss.id, int(item["id"]), "irrelevant")
        assert _unjudged(client) == [1]  # the store's label, without -l X
        q3 = client.get("/explore/query/3").text
        assert 'name="pair" value="3:2"' not in q3  # no longer offered for the queue
        assert 'data-state="irrelevant"' in q3


def test_store_labels_can_be_left_out(tmp_path) -> None:  # type: ignore[no-untyped-def]
    app, admin, boss = _app(tmp_path, explore_store_labels=False)
    with TestClient(app) as client:
        login(client, admin)
        store = app.state.store
        store.add_items([PoolItem("a man plays guitar", ["c3"], "v2", {"A": 2})], "toy")
        store.adjudicate(boss.id, int(store.items_table()[0]["id"]), "irrelevant")
        assert _unjudged(client) == [1, 3]
