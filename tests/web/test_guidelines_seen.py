"""Guidelines acknowledged per annotator in the store: first login ever, and once again after a change."""

from __future__ import annotations

import os

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from helpers import csrf_from, login

from fireval.judging.pool import PoolItem
from fireval.judging.seen import digest
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

PANEL = 'id="guidelines-panel"'


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    url = os.environ.get("FIREVAL_PG_URL")
    if not url:
        pytest.skip("FIREVAL_PG_URL not set")
    from benchmarks.loadgen import reset_postgres

    reset_postgres(url)
    return url


def app_for(db: str, guide) -> object:  # type: ignore[no-untyped-def]
    return create_app(
        WebConfig(db_url=db, dataset="T", video_url_template="/media/{video_id}.mp4", guidelines=guide)
    )


def stored(db: str, name: str) -> str | None:
    st = Store(db)
    try:
        with st.engine.connect() as conn:
            return conn.execute(
                sa.text("SELECT guidelines_seen FROM annotators WHERE name = :n"), {"n": name}
            ).scalar()
    finally:
        st.close()


def test_guidelines_show_once_per_annotator_and_again_after_a_change(db_url, tmp_path) -> None:
    st = Store(db_url)
    st.add_items([PoolItem("a man plays guitar", ["c0"], "v0", {"A": 1})], "T")
    tokens = {n: st.add_annotator(n)[1] for n in ("ann", "ann2")}
    st.close()
    guide = tmp_path / "guide.md"
    guide.write_text("# Campaign\n\nJudge every element.\n")
    app = app_for(db_url, guide)
    with TestClient(app) as c:  # first login ever: the panel, until dismissed
        login(c, tokens["ann"])
        page = c.get("/annotate").text
        assert PANEL in page
        assert stored(db_url, "ann") is None
        assert c.post("/guidelines/seen", data={"csrf_token": csrf_from(page)}).status_code == 200
        assert PANEL not in c.get("/annotate").text
        assert 'id="btn-guidelines-seen"' not in c.get("/guidelines").text  # acknowledged
    assert stored(db_url, "ann") == digest(guide.read_text())
    with TestClient(app) as c:  # a new session (another device): not shown again
        login(c, tokens["ann"])
        assert PANEL not in c.get("/annotate").text
    with TestClient(app) as c:  # another annotator has not seen them
        login(c, tokens["ann2"])
        assert PANEL in c.get("/annotate").text
    # the campaign edits its guideline
    guide.write_text("# Campaign\n\nJudge every element; numbers count too.\n")
    app2 = app_for(db_url, guide)
    with TestClient(app2) as c:
        login(c, tokens["ann"])
        page = c.get("/annotate").text
        assert PANEL in page and "numbers count too" in page  # shown again once
        c.post("/guidelines/seen", data={"csrf_token": csrf_from(page)})
        assert PANEL not in c.get("/annotate").text
    with TestClient(app2) as c:
        login(c, tokens["ann"])
        assert PANEL not in c.get("/annotate").text
    assert stored(db_url, "ann") == digest(guide.read_text()) != stored(db_url, "ann2")
