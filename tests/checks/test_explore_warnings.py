"""The explorer (`fireval serve --run`) shows the input checks' warnings, escaped."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from helpers import login  # noqa: E402


def test_explore_page_lists_check_warnings(real, tmp_path):
    from fireval.cli.check import input_checks

    _, coll, runs = real
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = Store(url)
    _, admin = store.add_annotator("boss", "admin")
    store.close()
    chosen = {"clip4clip": runs["clip4clip"], "<i>GRAM</i>": runs["GRAM"]}
    checks = input_checks(coll, chosen)
    cfg = WebConfig(
        db_url=url,
        collection=coll,
        runs=chosen,
        judgments=coll.instance_judgments(),
        extra={"explore_k": 5, "check_warnings": checks.warnings()},
    )
    with TestClient(create_app(cfg)) as client:
        login(client, admin)
        page = client.get("/explore").text
    box = re.search(r'<div class="check-warnings".*?</div>', page, re.S)
    assert box is not None
    assert "alignment check fail" in box.group(0) and "agreement check fail" in box.group(0)
    assert "&lt;i&gt;GRAM&lt;/i&gt;" in box.group(0) and "<i>GRAM" not in page
