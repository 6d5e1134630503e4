"""Issue 13, in-process: blind judging, campaign guidelines, history (audited changes), flags, skip reasons."""

from __future__ import annotations

import json
import os

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from helpers import csrf_from, handle, login, raw_id

from fireval.core import InputError
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web import guidelines as G
from fireval.web.app import WebConfig, create_app

SECRET_RUN = "SECRETRUN42"  # a run name that must never reach an annotator
JSON = {"accept": "application/json"}

GUIDE = """# Our campaign <script>alert('h1')</script>

Judge **every** element. <img src=x onerror=alert(1)>

- item *one*
- see [the paper](https://example.org/fire) and [bad](javascript:alert(2)) and [data](data:text/html,hi)

`<b>code</b>`

```example
caption: a dog <script>alert(3)</script> runs
video: a dog running
answer: relevant
why: all there
```

```example
caption: a cat
answer: irrelevant
```
"""


def store_urls() -> list:
    params: list = ["sqlite"]
    params.append(pytest.param("postgres", marks=pytest.mark.postgres))
    return params


@pytest.fixture(params=store_urls())
def db_url(request, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    url = os.environ.get("FIREVAL_PG_URL")
    if not url:
        pytest.skip("FIREVAL_PG_URL not set")
    from benchmarks.loadgen import reset_postgres

    reset_postgres(url)
    return url


def make_env(db: str, tmp_path, **cfg):  # type: ignore[no-untyped-def]
    st = Store(db)
    st.add_items(
        [
            PoolItem("a man plays guitar", ["c0"], "v0", {SECRET_RUN: 1}),
            PoolItem("a dog runs", ["c1"], "v1", {SECRET_RUN: 2}, double=True),
            PoolItem("a cat sleeps", ["c2"], "v2", {SECRET_RUN: 3}),
        ],
        "T",
    )
    tokens = {
        n: st.add_annotator(n, r)[1]
        for n, r in (("ann", "annotator"), ("ann2", "annotator"), ("boss", "admin"))
    }
    st.close()
    app = create_app(WebConfig(db_url=db, dataset="T", video_url_template="/media/{video_id}.mp4", **cfg))
    return app, tokens


@pytest.fixture
def env(db_url, tmp_path):  # type: ignore[no-untyped-def]
    return make_env(db_url, tmp_path)


def post_json(c: TestClient, url: str, tok: str, body: dict):  # type: ignore[no-untyped-def]
    return c.post(url, json=body, headers={"X-CSRF-Token": tok})


def current_item(html: str) -> str:
    """The handle of the item the page shows (never the store's id: web.handles)."""
    return html.split('id="item" data-item-id="')[1].split('"')[0]


def events(app) -> list[dict]:  # type: ignore[no-untyped-def]
    return app.state.store.history.events()


# ---------------------------------------------------------------------- blind judging
def test_explore_is_admin_only_by_default(tmp_path) -> None:
    app, tokens = make_env(f"sqlite:///{tmp_path / 'b.db'}", tmp_path)
    with TestClient(app) as c:
        login(c, tokens["ann"])
        assert c.get("/explore", headers=JSON).status_code == 403
        assert c.get("/explore", headers={"accept": "text/html"}).status_code == 403
        assert c.get("/explore/query/0", headers=JSON).status_code == 403
        assert 'href="/explore"' not in c.get("/annotate").text  # no link either
    with TestClient(app) as c:
        login(c, tokens["boss"])
        r = c.get("/explore", headers=JSON)
        assert r.status_code != 403  # admins pass the gate (no collection loaded here: 404)
        assert 'href="/explore"' in c.get("/admin").text
    opened = create_app(WebConfig(db_url=app.state.config.db_url, open_explore=True))
    with TestClient(opened) as c:
        login(c, tokens["ann"])
        assert c.get("/explore", headers=JSON).status_code != 403
        assert 'href="/explore"' in c.get("/annotate").text


def test_annotator_pages_and_api_show_no_runs_scores_or_others(env) -> None:
    app, tokens = env
    with TestClient(app) as c:  # ann2 answers first: ann must not learn it
        tok2 = login(c, tokens["ann2"])
        nxt = c.get("/api/next").json()["item"]
        post_json(c, "/api/labels", tok2, {"item_id": nxt["id"], "label": "irrelevant"})
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        bodies = [c.get("/annotate").text, c.get("/guidelines").text, c.get("/api/session").text]
        nxt = c.get("/api/next")
        bodies.append(nxt.text)
        assert set(nxt.json()["item"]) == {"id", "caption", "video_url"}  # no video id (blind)
        r = post_json(
            c, "/api/labels", tok, {"item_id": nxt.json()["item"]["id"], "label": "relevant", "next": True}
        )
        bodies.append(r.text)
        bodies += [c.get("/api/history").text, c.get("/api/progress").text, c.get("/annotate").text]
        item = r.json()["next"]["id"]
        bodies.append(post_json(c, "/api/flags", tok, {"item_id": item, "reason": "hm", "next": True}).text)
        for body in bodies:
            for secret in (SECRET_RUN, "ann2", '"runs"', '"models"', "score", "rank"):
                assert secret not in body, (secret, body[:300])
        assert c.get("/admin/review", headers=JSON).status_code == 403
        assert c.get("/api/admin/review").status_code == 403
        assert c.get("/admin/status.json").status_code == 403


# ---------------------------------------------------------------------- guidelines
def test_guideline_markdown_is_rendered_safely(tmp_path) -> None:
    out = G.render_markdown(GUIDE)
    assert (
        "<script" not in out
        and "<img" not in out
        and "onerror=alert" not in out.replace("&lt;img src=x onerror=alert(1)&gt;", "")
    )
    assert (
        "&lt;script&gt;alert(&#x27;h1&#x27;)&lt;/script&gt;" in out
        or "&lt;script&gt;alert('h1')&lt;/script&gt;" in out
    )
    assert '<a href="https://example.org/fire" rel="noopener noreferrer" target="_blank">the paper</a>' in out
    assert "javascript:" not in out.split("[bad]")[0] or 'href="javascript' not in out
    assert 'href="javascript' not in out and 'href="data' not in out
    assert "<code>&lt;b&gt;code&lt;/b&gt;</code>" in out
    assert "<strong>every</strong>" in out and "<em>one</em>" in out and "<h1>" in out and "<li>" in out
    assert out.count('<figure class="example') == 2
    assert '<figure class="example example-relevant">' in out and "example-irrelevant" in out
    assert "a dog &lt;script&gt;alert(3)&lt;/script&gt; runs" in out
    guide = tmp_path / "guide.md"
    guide.write_text(GUIDE)
    g = G.load(guide)
    assert g.rule.startswith("Judge every element.") and g.source == str(guide)
    assert G.load(None).rule == G.FIRE_RULE
    (tmp_path / "empty.md").write_text("  \n")
    for bad in (tmp_path / "missing.md", tmp_path / "empty.md"):
        with pytest.raises(InputError) as e:
            G.load(bad)
        assert str(bad) in str(e.value)


def test_guidelines_first_visit_then_one_click_away(tmp_path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text(GUIDE)
    app, tokens = make_env(f"sqlite:///{tmp_path / 'g.db'}", tmp_path, guidelines=guide)
    with TestClient(app) as c:
        login(c, tokens["ann"])
        page = c.get("/annotate").text
        assert 'id="guidelines-panel"' in page and "<script>alert" not in page and "example-relevant" in page
        assert "Judge every element." in page  # the campaign's rule line
        assert 'href="/guidelines"' in page
        r = c.post("/guidelines/seen", data={"csrf_token": csrf_from(page)}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/annotate"
        page = c.get("/annotate").text
        assert 'id="guidelines-panel"' not in page and 'href="/guidelines"' in page
        full = c.get("/guidelines").text
        assert "Our campaign" in full and "<script>alert" not in full and 'id="back-to-annotate"' in full
        assert c.post("/guidelines/seen", data={"csrf_token": "wrong"}).status_code == 403
    with TestClient(app) as c:  # a new session: acknowledged once per annotator, not per session
        login(c, tokens["ann"])
        assert 'id="guidelines-panel"' not in c.get("/annotate").text
    with TestClient(app) as c:  # another annotator's first login still shows them
        login(c, tokens["ann2"])
        assert 'id="guidelines-panel"' in c.get("/annotate").text
    default = create_app(WebConfig(db_url=app.state.config.db_url))
    with TestClient(default) as c:
        login(c, tokens["ann"])
        assert "every element of the caption is present in the video" in c.get("/guidelines").text


# ---------------------------------------------------------------------- history
def test_history_change_is_audited_and_nothing_is_lost(env) -> None:
    app, tokens = env
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        first = c.get("/api/next").json()["item"]["id"]
        r = post_json(c, "/api/labels", tok, {"item_id": first, "label": "relevant", "next": True}).json()
        second = r["next"]["id"]
        answer = r["answer"]
        post_json(c, "/api/labels", tok, {"item_id": second, "label": "irrelevant"})
        hist = c.get("/api/history").json()["answers"]
        assert [h["item_id"] for h in hist] == [second, first]
        assert [h["label"] for h in hist] == ["irrelevant", "relevant"]
        ch = post_json(c, "/api/history/change", tok, {"item_id": first, "label": "irrelevant"}).json()
        assert ch == {"status": "changed", "item_id": first, "label": "irrelevant", "previous": "relevant"}
        again = post_json(c, "/api/history/change", tok, {"item_id": first, "label": "irrelevant"}).json()
        assert again["status"] == "unchanged"
        hist = c.get("/api/history").json()["answers"]
        assert hist[0]["item_id"] == first and hist[0]["label"] == "irrelevant" and hist[0]["changes"] == 1
        assert hist[0]["answer"] == answer  # the answer keeps its id (export response_ids)
        first_id, second_id = raw_id(c, first), raw_id(c, second)
        # refused changes
        assert (
            post_json(c, "/api/history/change", tok, {"item_id": first, "label": "maybe"}).status_code == 422
        )
        assert (
            post_json(c, "/api/history/change", tok, {"item_id": handle(c, 3), "label": "skip"}).status_code
            == 403
        )
        assert (
            post_json(c, "/api/history/change", tok, {"item_id": handle(c, 999), "label": "skip"}).status_code
            == 404
        )
        # the store's ids are refused as unknown items: a JSON integer is not a handle, nor are its digits
        assert (
            post_json(c, "/api/history/change", tok, {"item_id": first_id, "label": "skip"}).status_code
            == 404
        )
        assert (
            post_json(c, "/api/history/change", tok, {"item_id": str(first_id), "label": "skip"}).status_code
            == 404
        )
        assert (
            c.post("/api/history/change", json={"item_id": first, "label": "skip"}).status_code == 403
        )  # CSRF
        # the form: a visible, announced status line
        page = c.get("/annotate").text
        assert 'aria-live="polite"' in page and f'id="hist-{first}"' in page
        r = c.post(
            "/annotate/change",
            data={"csrf_token": csrf_from(page), "item_id": first, "label": "relevant"},
        )
        assert "Changed your answer: irrelevant → relevant." in r.text
        assert "Changed your answer" not in c.get("/annotate").text  # shown once
        r = c.post("/annotate/undo", data={"csrf_token": csrf_from(page)})
        assert "Undone: your last answer is withdrawn." in r.text
    ev = events(app)
    mine = [(e["item_id"], e["action"], e["label"], e["previous"]) for e in ev]
    assert mine == [
        (first_id, "answer", "relevant", None),
        (second_id, "answer", "irrelevant", None),
        (first_id, "change", "irrelevant", "relevant"),
        (first_id, "change", "relevant", "irrelevant"),
        (second_id, "withdraw", None, "irrelevant"),  # undo withdraws the newest answer row
    ]
    # every answer ever given is still readable from the audit log
    assert [e["label"] for e in ev if e["action"] != "withdraw"] == [
        "relevant",
        "irrelevant",
        "irrelevant",
        "relevant",
    ]


def test_history_is_own_answers_only(env) -> None:
    app, tokens = env
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        item = c.get("/api/next").json()["item"]["id"]
        post_json(c, "/api/labels", tok, {"item_id": item, "label": "relevant"})
        item_id = raw_id(c, item)
    with TestClient(app) as c:
        tok = login(c, tokens["ann2"])
        assert c.get("/api/history").json() == {"answers": []}
        assert "No answers yet." in c.get("/annotate").text
        # ann's handle is not ann2's: refused as an unknown item
        assert post_json(c, "/api/history/change", tok, {"item_id": item, "label": "skip"}).status_code == 404
        mine = handle(c, item_id)  # ann2's own handle of the item: not their answer
        assert post_json(c, "/api/history/change", tok, {"item_id": mine, "label": "skip"}).status_code == 403


def test_change_that_makes_a_tie_asks_for_a_third_vote(db_url, tmp_path) -> None:
    st = Store(db_url)
    st.add_items([PoolItem("a dog", ["c"], "v", {"A": 1}, double=True)], "T")
    a, _ = st.add_annotator("a")
    b, _ = st.add_annotator("b")
    for who in (a, b):
        st.submit(who.id, st.next_item(who.id).id, "relevant")
    needed = lambda: st.items_table()[0]["needed"]  # noqa: E731
    assert needed() == 2 and st.status()["complete"] == 1
    st.history.change(b.id, 1, "irrelevant")
    assert needed() == 3 and st.status()["complete"] == 0  # a tie: a third annotator is needed
    st.history.change(b.id, 1, "relevant")
    assert needed() == 2 and st.status()["complete"] == 1
    with st.engine.connect() as conn:
        n_events = conn.execute(sa.text("SELECT count(*) FROM label_events")).scalar_one()
        n_labels = conn.execute(sa.text("SELECT count(*) FROM labels")).scalar_one()
    assert (n_events, n_labels) == (4, 2)
    st.close()


# ---------------------------------------------------------------------- flags and skip reasons
def test_flag_review_queue_resolution_and_status(env, tmp_path) -> None:
    app, tokens = env
    with TestClient(app) as c:
        login(c, tokens["ann"])
        page = c.get("/annotate").text
        item_h = current_item(page)
        item = raw_id(c, item_h)
        r = c.post(
            "/annotate/flag",
            data={"csrf_token": csrf_from(page), "item_id": item_h, "reason": "<b>cartoon</b> dog?\x00"},
        )
        assert "Flagged for review" in r.text
        assert current_item(r.text) != item_h  # moved on
        hist = c.get("/api/history").json()["answers"]
        assert hist[0]["item_id"] == item_h and hist[0]["label"] == "skip"
        # a skip that records why
        nxt = current_item(r.text)
        r = c.post(
            "/annotate/skip",
            data={
                "csrf_token": csrf_from(r.text),
                "item_id": nxt,
                "time_spent_ms": "10",
                "skip_reason": "video failed",
            },
        )
        assert "Skipped (video failed)." in r.text
        assert (
            c.post(
                "/admin/review/resolve",
                data={"csrf_token": csrf_from(r.text), "item_id": str(item), "resolution": "discard"},
            ).status_code
            == 403
        )
    st = app.state.store
    summary = st.status()["flags"]
    assert (
        summary["open"] == 1
        and summary["skip_reasons"] == {"video failed": 1}
        and summary["per_annotator"] == {"ann": 1}
    )
    with TestClient(app) as c:
        login(c, tokens["boss"])
        page = c.get("/admin/review").text
        assert (
            f'id="flag-item-{item}"' in page
            and "&lt;b&gt;cartoon&lt;/b&gt; dog?" in page
            and "<b>cartoon" not in page
        )
        assert c.get("/api/admin/review").json()["queue"][0]["flags"][0]["reason"] == "<b>cartoon</b> dog?"
        r = c.post(
            "/admin/review/resolve",
            data={"csrf_token": csrf_from(page), "item_id": str(item), "resolution": "maybe"},
        )
        assert r.status_code == 422
        r = c.post(
            "/admin/review/resolve",
            data={"csrf_token": csrf_from(page), "item_id": str(item), "resolution": "relevant"},
        )
        assert "1 flag(s) resolved (relevant)" in r.text and "No open flags." in r.text
    summary = st.status()["flags"]
    assert summary["open"] == 0 and summary["resolved"] == {"relevant": 1}
    v = st.votes()
    boss = next(a.id for a in st.annotators() if a.name == "boss")
    assert [
        str(lab) for i, a, lab in zip(v["item_id"], v["annotator_id"], v["label"]) if i == item and a == boss
    ] == ["relevant"]
    ann, _ = st.fire_records()
    assert item == 1 and [(r["query"], r["label"]) for r in ann] == [("a man plays guitar", "relevant")]


def test_flag_api_and_discard(env) -> None:
    app, tokens = env
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        item_h = c.get("/api/next").json()["item"]["id"]
        item = raw_id(c, item_h)
        assert post_json(c, "/api/flags", tok, {"item_id": handle(c, 999), "reason": ""}).status_code == 404
        r = post_json(c, "/api/flags", tok, {"item_id": item_h, "reason": "x" * 900, "next": True}).json()
        assert r["next"]["id"] != item_h and r["item_id"] == item_h
        other = handle(c, item + 10)
        assert post_json(c, "/api/flags", tok, {"item_id": other, "reason": ""}).status_code in (403, 404)
    with TestClient(app) as c:
        login(c, tokens["boss"])
        q = c.get("/api/admin/review").json()["queue"]
        assert len(q[0]["flags"][0]["reason"]) == 500  # clipped
        page = c.get("/admin/review").text
        c.post(
            "/admin/review/resolve",
            data={"csrf_token": csrf_from(page), "item_id": str(item), "resolution": "discard"},
        )
    st = app.state.store
    assert st.status()["flags"]["resolved"] == {"discard": 1}
    assert st.votes()["label"].tolist() == ["skip"]  # discard adds no label


def test_status_cli_reports_flags(tmp_path, capsys) -> None:
    from fireval.cli import main

    db = f"sqlite:///{tmp_path / 'c.db'}"
    app, tokens = make_env(db, tmp_path)
    st = app.state.store
    ann = next(a for a in st.annotators() if a.name == "ann")
    st.flags.flag(ann.id, st.next_item(ann.id).id, "unsure")
    st.close()
    capsys.readouterr()
    try:
        main(["judgments", "status", "--db", db])
    except SystemExit as e:
        assert e.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["flags"]["open"] == 1 and out["flags"]["per_annotator"] == {"ann": 1}


def test_ids_no_row_can_have_are_404_on_the_new_endpoints(env) -> None:
    app, tokens = env
    with (
        TestClient(app, raise_server_exceptions=False) as c,
        TestClient(app, raise_server_exceptions=False) as a,
    ):
        tok = login(c, tokens["ann"])
        admin_tok = login(a, tokens["boss"])
        for bad in (0, -1, 2**31, 2**63, 2**64 + 5):
            # the session's handle of such an id (where one exists) and the raw id's digits: 404
            sent = [str(bad)] + ([handle(c, bad)] if 0 <= bad < 2**64 else [])
            for h in sent:
                for url, body in (
                    ("/api/history/change", {"item_id": h, "label": "skip"}),
                    ("/api/flags", {"item_id": h, "reason": "x"}),
                    ("/api/skip", {"item_id": h, "reason": "video failed"}),
                ):
                    r = post_json(c, url, tok, body)
                    assert r.status_code == 404 and "unknown item" in r.json()["detail"], (url, bad, r.text)
                for url in ("/annotate/change", "/annotate/flag", "/annotate/skip"):
                    form = {"item_id": h, "label": "skip", "csrf_token": tok}
                    assert c.post(url, data=form).status_code == 404, (url, bad)
            form = {"item_id": str(bad), "resolution": "discard", "csrf_token": admin_tok}
            assert a.post("/admin/review/resolve", data=form).status_code == 404
        assert c.get("/api/next").status_code == 200
    assert app.state.store.votes()["label_id"].size == 0


def test_migration_0005_keeps_old_labels_in_the_audit_and_downgrades(db_url) -> None:
    from alembic import command
    from alembic.config import Config

    from fireval.judging.engine import MIGRATIONS, current_revision, make_engine, migrate

    eng = make_engine(db_url)
    assert migrate(eng, "0004") == "0004"
    with eng.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO items (id, dataset, caption, norm_caption, caption_ids, video_id, runs, models, "
                "is_double, needed, open_slots, created_at) VALUES (1, 'T', 'A b', 'a b', '[]', 'v', '{}', '[]', "
                ":f, 1, 0, CURRENT_TIMESTAMP)"
            ),
            {"f": False},
        )
        conn.execute(
            sa.text(
                "INSERT INTO annotators (id, name, token_hash, role, active, created_at) "
                "VALUES (1, 'old', 'h', 'annotator', :t, CURRENT_TIMESTAMP)"
            ),
            {"t": True},
        )
        conn.execute(
            sa.text(
                "INSERT INTO assignments (id, item_id, annotator_id, done, created_at, updated_at) "
                "VALUES (1, 1, 1, :t, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            ),
            {"t": True},
        )
        conn.execute(
            sa.text(
                "INSERT INTO labels (id, item_id, annotator_id, assignment_id, label, created_at) "
                "VALUES (1, 1, 1, 1, 'relevant', CURRENT_TIMESTAMP)"
            )
        )
    eng.dispose()
    st = Store(db_url)  # upgrades to 0005
    assert [(e["action"], e["label"]) for e in st.history.events()] == [("answer", "relevant")]
    st.history.change(1, 1, "irrelevant")
    assert [h.label for h in st.history.recent(1)] == ["irrelevant"]
    st.close()
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    eng = make_engine(db_url)
    with eng.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0004")
    assert current_revision(eng) == "0004"
    names = set(sa.inspect(eng).get_table_names())
    assert not names & {"label_events", "flags", "gold_items", "gold_answers"}
    with eng.begin() as conn:  # the triggers went with the table: labels still writable
        conn.execute(sa.text("DELETE FROM labels"))
    eng.dispose()
