"""Explorer: view data, filters, and the queue endpoint (TestClient; the browser test is separate)."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from helpers import csrf_from, login

from fireval.core import Collection, Judgments, Run, merge
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app
from fireval.web.explore import build_data, filter_queries, query_view, search


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
    np.testing.assert_array_equal(d.n_unjudged["A"], [0, 1, 0, 1])
    np.testing.assert_array_equal(d.n_unjudged["B"], [0, 1, 0, 1])
    # the instance video's rank per run (B ranks v0 second for c0, v2 second for c2)
    np.testing.assert_array_equal(d.inst_rank["A"], [1, 2, 1, 1])
    np.testing.assert_array_equal(d.inst_rank["B"], [2, 1, 2, 1])
    np.testing.assert_array_equal(d.n_disagree, [0, 1, 0, 0])
    assert list(filter_queries(d, unjudged=True)) == [1, 3]
    assert list(filter_queries(d, disagreement=True)) == [1]
    assert list(filter_queries(d, differ=True, min_len=5)) == [1, 2]
    assert list(filter_queries(d, max_len=4)) == [0, 3]
    assert list(filter_queries(d, text="PLAYS guitar")) == [0, 3]


def test_unjudged_is_per_run_not_the_union() -> None:
    # one caption; A shows v0 (instance) and v1, B shows v0 and v2: each run has ONE unjudged
    # video in its top 2, while the union of both top 2s holds two
    coll = Collection.from_pairs("one", [("c0", "v0", "a cat")], video_ids=["v0", "v1", "v2", "v3"])
    runs = {
        "A": Run("A", scores=np.array([[0.9, 0.8, 0.1, 0.0]])),
        "B": Run("B", scores=np.array([[0.9, 0.1, 0.8, 0.0]])),
    }
    d = build_data(coll, runs, None, k=2)
    assert int(d.n_unjudged["A"][0]) == 1 and int(d.n_unjudged["B"][0]) == 1
    assert list(filter_queries(d, unjudged=True)) == [0]


def _display_order(row: np.ndarray) -> list[int]:
    """Oracle: the order the page shows, written from its definition (score desc, then video index)."""
    return sorted((int(v) for v in np.flatnonzero(~np.isneginf(row))), key=lambda v: (-row[v], v))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_instance_rank_matches_display_order_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nq, nv, k = 30, 7, 3
    cv = rng.integers(0, nv, size=nq)
    pairs = [(f"c{i}", f"v{cv[i]}", f"caption {i}") for i in range(nq)]
    coll = Collection.from_pairs("ties", pairs, video_ids=[f"v{i}" for i in range(nv)])
    s = rng.integers(0, 3, size=(nq, nv)).astype(float)  # many ties
    s[rng.random((nq, nv)) < 0.15] = -np.inf  # some videos not retrieved
    d = build_data(coll, {"R": Run("R", scores=s)}, None, k=k)
    for q in range(nq):
        order = _display_order(s[q])
        g = int(coll.caption_video[q])
        want = order.index(g) + 1 if g in order else 0
        assert int(d.inst_rank["R"][q]) == want, q
        assert [int(v) for v in d.tops["R"][q] if v >= 0] == order[:k]
        if want:
            assert int(d.inst_ties["R"][q]) == int((s[q] == s[q, g]).sum()) - 1


def test_query_view_shows_instance_outside_top_k() -> None:
    coll = Collection.from_pairs(
        "out", [("c0", "v0", "x"), ("c1", "v1", "y"), ("c2", "v2", "z")], video_ids=["v0", "v1", "v2", "v3"]
    )
    s = np.array([[0.1, 0.9, 0.8, 0.5], [0.5, 0.5, 0.5, 0.9], [0.3, 0.2, -np.inf, 0.1]])
    d = build_data(coll, {"R": Run("R", scores=s)}, None, k=2)
    v0 = query_view(d, 0, lambda vid: f"/media/{vid}.mp4")
    col = v0["columns"][0]
    assert col["instance_rank"] == 4 and col["outside"]["video_id"] == "v0"
    assert col["outside"]["state"] == "relevant" and col["outside"]["rank"] == 4
    assert col["outside"]["player_url"] == "/media/v0.mp4#t=0.1"
    col1 = query_view(d, 1, lambda vid: None)["columns"][0]
    assert col1["instance_rank"] == 3 and col1["instance_ties"] == 2 and col1["outside"]["url"] is None
    col2 = query_view(d, 2, lambda vid: None)["columns"][0]
    assert col2["instance_rank"] == 0 and col2["outside"] is None  # -inf: not retrieved


def test_search_matches_whole_words() -> None:
    pairs = [
        ("c0", "v0", "A man plays guitar."),
        ("c1", "v0", "a woman sings"),
        ("c2", "v1", "many men run"),
        ("c3", "v1", "the man-made lake"),
        ("c4", "v1", "Man"),
    ]
    coll = Collection.from_pairs("words", pairs)
    d = build_data(coll, {"R": Run("R", scores=np.zeros((5, 2)))}, None, k=1)
    assert list(np.flatnonzero(search(d, "man"))) == [0, 3, 4]
    assert list(np.flatnonzero(search(d, "woman"))) == [1]
    assert list(np.flatnonzero(search(d, "MAN plays"))) == [0]
    assert list(np.flatnonzero(search(d, "plays man"))) == []
    assert list(np.flatnonzero(search(d, "a"))) == [0, 1]
    assert list(np.flatnonzero(search(d, "ma"))) == []
    assert list(filter_queries(d, text="man")) == [0, 3, 4]
    assert search(d, "  ").all()  # nothing to search for: no filter


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
            open_explore=True,  # these tests look at the explorer as an annotator
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
    assert 'data-state="unjudged"' in q.text and 'src="/media/v3.mp4#t=0.1"' in q.text
    assert 'preload="metadata"' in q.text and 'preload="none"' not in q.text
    assert 'class="outside-list"' not in q.text  # both runs rank v3 first
    q0 = client.get("/explore/query/0")  # B ranks the instance video v0 second: inside K = 2
    assert 'class="outside-list"' not in q0.text
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


def test_pages_show_per_run_columns_and_outside_rank(tmp_path) -> None:  # type: ignore[no-untyped-def]
    coll, runs, j = toy_data()
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store(url)
    _, ann = store.add_annotator("ann", "annotator")
    store.close()
    app = create_app(
        WebConfig(
            db_url=url, collection=coll, runs=runs, judgments=j, extra={"explore_k": 1}, open_explore=True
        )
    )
    with TestClient(app) as client:
        login(client, ann)
        page = client.get("/explore").text
        assert "<th>A unjudged@1</th>" in page and "<th>B unjudged@1</th>" in page
        # row 0: A ranks the instance video first, B second
        row0 = page.split('<tr data-index="0">')[1].split("</tr>")[0]
        assert 'data-rank="1"' in row0 and 'data-rank="2"' in row0 and "#2" in row0
        man = client.get("/explore?q=man").text
        assert man.count("<tr data-index=") == 2  # "a man plays guitar" twice; no "woman" here
        q0 = client.get("/explore/query/0").text
        b_col = q0.split('data-run="B"')[1]
        assert 'class="outside-list"' in b_col and 'data-rank="2"' in b_col
        assert 'class="outside-list"' not in q0.split('data-run="B"')[0]  # A has it at rank 1
        assert 'instance video at rank <span class="instance-rank">2</span>' in b_col


def test_no_import_cycle_between_app_and_explore() -> None:
    """The explorer router and the shared deps never import the app module (arrows point one way)."""
    import subprocess
    import sys

    code = "import sys, fireval.web.explore, fireval.web.deps; print('fireval.web.app' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    import ast
    from pathlib import Path

    import fireval.web

    web = Path(fireval.web.__file__).parent
    for name in ("explore.py", "deps.py", "security.py"):
        tree = ast.parse((web / name).read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
        }
        assert "fireval.web.app" not in imported, name
