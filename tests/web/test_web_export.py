"""The web's "Download FIRE JSON" is the CLI's export (issue 24 item 9): the same strict data
model, the same ``--model-name`` mapping and the same provenance sidecar, sent as one zip of
the pair; a store the CLI refuses is refused with the CLI's message."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from fastapi.testclient import TestClient
from helpers import login

from fireval.cli import main
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app


def _cli(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _store(path: Path, run: str) -> tuple[str, str]:
    url = f"sqlite:///{path}"
    st = Store(url)
    st.add_items(
        [PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {run: 1}, i == 0) for i in range(3)], "msrvtt-1k-A"
    )
    a, b = (st.add_annotator(n)[0] for n in ("a", "b"))
    boss, token = st.add_annotator("boss", "admin")
    for u in (a, b):
        while (item := st.next_item(u.id)) is not None:
            st.submit(u.id, item.id, "relevant" if u is a or item.id != 1 else "irrelevant")
    st.flags.flag(a.id, 1, "is that a dog?")  # provenance: the sidecar carries the flag
    st.close()
    return url, token


def _download(app, token: str):  # type: ignore[no-untyped-def]
    with TestClient(app) as c:
        login(c, token)
        return c.get("/admin/export")


def test_web_export_is_the_cli_export_pair(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    url, token = _store(tmp_path / "s.db", "clip4clip-vit")
    cli_dir = tmp_path / "cli"
    cli_dir.mkdir()
    args = ["judgments", "export", "--db", url, "-o", str(cli_dir / "fire_labels.json")]
    assert _cli([*args, "--model-name", "clip4clip-vit=CLIP4CLIP"]) == 0
    app = create_app(WebConfig(db_url=url, model_names={"clip4clip-vit": "CLIP4CLIP"}))
    r = _download(app, token)
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    assert 'filename="fire_labels.zip"' in r.headers["content-disposition"]
    web_dir = tmp_path / "web"
    with zipfile.ZipFile(io.BytesIO(r.content)) as zf:
        assert sorted(zf.namelist()) == ["fire_labels.json", "fire_labels.provenance.json"]
        zf.extractall(web_dir)
    fire = json.loads((web_dir / "fire_labels.json").read_text())
    assert fire == json.loads((cli_dir / "fire_labels.json").read_text())  # same day, same file
    assert {m for rec in fire["annotations"] + fire["disagreements"] for m in rec["models"]} == {"CLIP4CLIP"}
    assert fire["datasets"] == ["MSRVTT"]
    side = json.loads((web_dir / "fire_labels.provenance.json").read_text())
    cli_side = json.loads((cli_dir / "fire_labels.provenance.json").read_text())
    side.pop("created_at"), cli_side.pop("created_at")
    assert side == cli_side
    assert [f["reason"] for f in side["flags"]] == ["is that a dog?"]
    capsys.readouterr()
    assert _cli(["judgments", "verify-export", str(web_dir / "fire_labels.json")]) == 0  # a valid pair


def test_web_export_refuses_what_the_cli_refuses(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    url, token = _store(tmp_path / "s.db", "oracle")
    capsys.readouterr()
    assert _cli(["judgments", "export", "--db", url, "-o", str(tmp_path / "out.json")]) == 2
    cli_error = capsys.readouterr().err.strip()
    assert "oracle" in cli_error and "not written" in cli_error
    problem = cli_error.split("not written: ", 1)[1].split(";")[0]  # the first offending field and value
    r = _download(create_app(WebConfig(db_url=url)), token)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert problem in detail and "--model-name" in detail
    assert str(tmp_path) not in detail and "fireval-export-" not in detail  # no server path
    assert not list(tmp_path.glob("*.json"))


def test_web_export_refusal_is_a_readable_page(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url, token = _store(tmp_path / "s.db", "oracle")
    app = create_app(WebConfig(db_url=url))
    with TestClient(app) as c:
        login(c, token)
        r = c.get("/admin/export", headers={"accept": "text/html"})
    assert r.status_code == 422 and "<html" in r.text and "--model-name" in r.text


def test_extended_download_is_the_cli_extended_export(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    url, token = _store(tmp_path / "s.db", "oracle")
    cli_dir = tmp_path / "cli"
    cli_dir.mkdir()
    assert (
        _cli(["judgments", "export", "--db", url, "-o", str(cli_dir / "fire_labels.json"), "--extended"]) == 0
    )
    with TestClient(create_app(WebConfig(db_url=url))) as c:
        login(c, token)
        r = c.get("/admin/export?extended=1")
    assert r.status_code == 200 and 'filename="fire_labels_extended.zip"' in r.headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(r.content)) as zf:
        fire = json.loads(zf.read("fire_labels.json"))
    assert fire == json.loads((cli_dir / "fire_labels.json").read_text())
    assert {m for rec in fire["annotations"] for m in rec["models"]} == {"oracle"}  # as given: extended
