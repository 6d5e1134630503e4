"""``fireval explore``: the explorer with no store and no login, on this machine only (issue 24 item 9)."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from test_explore import toy_data

from fireval.cli import main
from fireval.core import InputError
from fireval.web.app import WebConfig
from fireval.web.local import check_local_host, create_local_app


def _client(tmp_path) -> TestClient:  # type: ignore[no-untyped-def]
    coll, runs, j = toy_data()
    cfg = WebConfig(db_url="", collection=coll, runs=runs, judgments=j, explore_store_labels=False)
    cfg.extra["explore_k"] = 2
    return TestClient(create_local_app(cfg), base_url="http://127.0.0.1:8000")


def test_browses_without_store_or_login(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    with _client(tmp_path) as c:
        assert c.get("/", follow_redirects=False).headers["location"] == "/explore"
        page = c.get("/explore?unjudged=1")
        assert page.status_code == 200 and page.text.count("<tr data-index=") == 2
        assert "local explorer" in page.text and "Log out" not in page.text and "/admin" not in page.text
        q = c.get("/explore/query/3")
        assert q.status_code == 200 and 'data-state="unjudged"' in q.text
        assert 'name="pair"' not in q.text  # nothing to queue into
        tok = q.text.split('name="csrf-token" content="')[1].split('"')[0]
        r = c.post("/explore/queue", data={"pair": "3:2", "csrf_token": tok})
        assert r.status_code == 403 and "fireval serve" in r.json()["detail"]
        assert c.get("/admin").status_code == 404 and c.get("/annotate").status_code == 404
        assert r.headers["x-frame-options"] == "DENY" and "content-security-policy" in r.headers
    assert list(tmp_path.iterdir()) == []  # no store, no file


def test_answers_only_requests_for_this_machine(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with _client(tmp_path) as c:
        for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000"):
            assert c.get("/explore", headers={"host": host}).status_code == 200, host
        # a page elsewhere pointing its own name at 127.0.0.1 (DNS rebinding) is refused
        assert c.get("/explore", headers={"host": "evil.example:8000"}).status_code == 400


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts_are_accepted(host: str) -> None:
    assert check_local_host(host) == host


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.org", ""])
def test_other_hosts_are_refused(host: str) -> None:
    with pytest.raises(InputError, match="this machine only"):
        check_local_host(host)


def test_cli_refuses_other_hosts_before_loading_anything(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "run.npy"
    np.save(run, np.zeros((2, 2)))
    with pytest.raises(SystemExit) as e:
        main(["explore", str(run), "-c", str(tmp_path / "missing.csv"), "--host", "0.0.0.0"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--host '0.0.0.0'" in err and "127.0.0.1" in err and "Traceback" not in err


def test_videos_from_the_video_dir_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    coll, runs, j = toy_data()
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "v3.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    (tmp_path / "secret.txt").write_text("top secret")
    cfg = WebConfig(db_url="", collection=coll, runs=runs, judgments=j, video_dir=videos)
    with TestClient(create_local_app(cfg), base_url="http://127.0.0.1:8000") as c:
        assert 'src="/videos/v3.mp4#t=0.1"' in c.get("/explore/query/3").text  # the players' posters
        assert c.get("/videos/v3.mp4").content.startswith(b"\x00\x00\x00\x18ftyp")
        for bad in ("../secret.txt", "%2e%2e/secret.txt", "nope.mp4", ""):
            r = c.get(f"/videos/{bad}")
            assert r.status_code == 404 and b"top secret" not in r.content, bad
