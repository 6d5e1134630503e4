"""Issue 13: gold items (known answers mixed into queues, never votes) and per-annotator agreement."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from fastapi.testclient import TestClient
from helpers import login, raw_id
from test_annotation_ux import db_url, post_json  # noqa: F401  (fixture)

from fireval.core import InputError
from fireval.judging.gold import GOLD_BASE, GoldPair, pair_agreement, read_gold
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

GOLD = [
    GoldPair("gold: a red car drives", "g1", "relevant"),
    GoldPair("gold: a cat swims", "g2", "irrelevant"),
]


def test_read_gold_names_the_bad_line(tmp_path) -> None:
    good = tmp_path / "gold.jsonl"
    good.write_text(
        '{"caption": "a dog", "video_id": "v1", "answer": "relevant"}\n\n'
        '{"caption": " a cat ", "video_id": "v2", "answer": "irrelevant", "why": "no cat"}\n'
    )
    assert read_gold(good) == [GoldPair("a dog", "v1", "relevant"), GoldPair("a cat", "v2", "irrelevant")]
    cases = {
        '{"caption": "a", "video_id": "v", "answer": "relevant"}\n{"caption": "b", "video_id": "v"': ":2: not JSON",
        '{"caption": "a", "video_id": "v", "answer": "maybe"}': ":1: answer must be 'relevant' or 'irrelevant'",
        '{"caption": "", "video_id": "v", "answer": "relevant"}': ":1: 'caption' missing",
        "[1, 2]": ":1: expected a JSON object",
        "\n": "no gold pairs",
    }
    for k, (text, msg) in enumerate(cases.items()):
        bad = tmp_path / f"bad{k}.jsonl"
        bad.write_text(text)
        with pytest.raises(InputError) as e:
            read_gold(bad)
        assert str(bad) in str(e.value) and msg in str(e.value), str(e.value)


def test_cli_load_gold(tmp_path, capsys) -> None:
    from fireval.cli import main

    def cli(*args: str) -> int:
        try:
            main(list(args))
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0

    db = str(tmp_path / "s.db")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "\n".join(
            json.dumps({"caption": p.caption, "video_id": p.video_id, "answer": p.answer}) for p in GOLD
        )
    )
    assert cli("judgments", "init", "--db", db) == 0
    assert cli("judgments", "load", "--db", db, "--gold", str(gold)) == 0
    assert "loaded 2 gold pairs (0 already present)" in capsys.readouterr().out
    assert cli("judgments", "load", "--db", db, "--gold", str(gold)) == 0
    assert "loaded 0 gold pairs (2 already present)" in capsys.readouterr().out
    assert cli("judgments", "load", "--db", db) == 2
    assert "nothing to load" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"caption": "x", "video_id": "v", "answer": "yes"}\n')
    assert cli("judgments", "load", "--db", db, "--gold", str(bad)) == 2
    assert f"{bad}:1: answer must be" in capsys.readouterr().err
    assert cli("judgments", "status", "--db", db) == 0
    assert json.loads(capsys.readouterr().out)["gold"] == {"items": 2, "per_annotator": {}}


def _store(db: str) -> tuple[Store, dict[str, str]]:
    st = Store(db)
    st.add_items([PoolItem(f"pool caption {i}", [f"c{i}"], f"v{i}", {"RUN": 1}) for i in range(6)], "T")
    tokens = {
        n: st.add_annotator(n, r)[1]
        for n, r in (("ann", "annotator"), ("ann2", "annotator"), ("boss", "admin"))
    }
    st.gold.load(GOLD)
    return st, tokens


def test_gold_is_mixed_in_blind_and_never_a_vote(db_url) -> None:  # noqa: F811
    st, tokens = _store(db_url)
    st.close()
    app = create_app(
        WebConfig(db_url=db_url, dataset="T", gold_rate=0.25, video_url_template="/m/{video_id}.mp4")
    )
    shown = []
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        item = c.get("/api/next").json()["item"]
        while item is not None:
            shown.append({**item, "raw": raw_id(c, item["id"])})  # the store's id, for the test only
            if shown[-1]["raw"] > GOLD_BASE:
                # the pending gold item is shown again until answered, like any assignment
                assert c.get("/api/next").json()["item"] == item
                assert f'id="item" data-item-id="{item["id"]}"' in c.get("/annotate").text
                assert set(item) == {"id", "caption", "video_url"}  # like any item
            label = "relevant" if len(shown) % 2 else "irrelevant"
            r = post_json(c, "/api/labels", tok, {"item_id": item["id"], "label": label, "next": True})
            assert r.status_code == 200, r.text
            assert "gold" not in r.text.replace("gold: a", "")  # nothing says "gold" but the toy caption
            item = r.json()["next"]
        hist = [raw_id(c, h["item_id"]) for h in c.get("/api/history").json()["answers"]]
    ids = [i["raw"] for i in shown]
    gold_pos = [k for k, i in enumerate(ids) if i > GOLD_BASE]
    # a quarter of what the annotator sees: one gold item in each stretch of 4, at a drawn position
    # (a fixed spacing would tell them apart; test_security_audit checks the draw)
    assert len(gold_pos) == 2 and 0 <= gold_pos[0] <= 3 and 4 <= gold_pos[1] <= 7, gold_pos
    assert sorted(i["caption"] for i in shown if i["raw"] > GOLD_BASE) == sorted(p.caption for p in GOLD)
    assert len(ids) == 8 and len(set(ids)) == 8
    assert hist == ids[::-1]  # gold answers are listed like votes (blind judging), newest first
    st = app.state.store
    v = st.votes()
    assert v["label_id"].size == 6 and (v["item_id"] < GOLD_BASE).all()
    status = st.status()
    assert status["votes"] == 6 and status["items"] == 6
    # ann answered relevant on odd positions (1-based): gold at positions 4 (irrelevant) and 8 (irrelevant)
    expected_correct = sum(
        1
        for k in gold_pos
        if ("relevant" if (k + 1) % 2 else "irrelevant")
        == next(p.answer for p in GOLD if p.caption == shown[k]["caption"])
    )
    assert status["gold"]["per_annotator"]["ann"] == {
        "answered": 2,
        "correct": expected_correct,
        "accuracy": expected_correct / 2,
    }
    ann, dis = st.fire_records()
    assert all(not r["query"].startswith("gold") for r in ann + dis)
    with TestClient(app) as c:
        login(c, tokens["boss"])
        page = c.get("/admin").text
        assert 'id="quality"' in page and 'id="pair-matrix"' in page
        assert f"{expected_correct} / 2" in page


def test_gold_skip_flag_and_rate_zero(db_url) -> None:  # noqa: F811
    st, tokens = _store(db_url)
    ann = next(a for a in st.annotators() if a.name == "ann")
    st.gold.rate = 0.0
    for _ in range(3):  # rate 0: no gold at all
        it = st.next_item(ann.id)
        assert it.id < GOLD_BASE
        st.submit(ann.id, it.id, "relevant")
    assert st.next_item(ann.id).id < GOLD_BASE  # (left open: ann2 gets the two others)
    ann2 = next(a for a in st.annotators() if a.name == "ann2")
    st.gold.rate = 0.5
    first = st.next_item(ann2.id)
    st.submit(ann2.id, first.id, "relevant")
    gold = st.next_item(ann2.id)
    assert gold.id > GOLD_BASE
    with pytest.raises(Exception) as e:  # another annotator cannot answer it
        st.submit(ann.id, gold.id, "relevant")
    assert getattr(e.value, "status", None) == 403
    flag_id, res = st.flags.flag(ann2.id, gold.id, "unsure")  # skipped, and the flag kept (issue 24)
    assert flag_id is None and res.status == "created"
    assert st.status()["flags"]["open"] == st.status()["flags"]["gold_open"] == 1
    (queued,) = st.flags.review_queue()
    assert queued["gold"] and queued["item_id"] == gold.id and queued["flags"][0]["reason"] == "unsure"
    assert st.status()["gold"]["per_annotator"] == {}  # a skip is not counted
    assert st.submit(ann2.id, gold.id, "skip").status == "duplicate"
    with pytest.raises(Exception) as e:  # another answer after the first: 409, as for a pool item
        st.submit(ann2.id, gold.id, "relevant")
    assert getattr(e.value, "status", None) == 409
    res = st.flags.skip(ann2.id, st.next_item(ann2.id).id, "video failed", claim_next=True)
    assert res.status == "created"
    with pytest.raises(Exception) as e:
        st.submit(ann2.id, GOLD_BASE + 99, "relevant")
    assert getattr(e.value, "status", None) == 404
    st.close()


def _oracle(votes: list[tuple[int, int, str]], names: dict[int, str]) -> dict:
    """Brute force from the definition: for each pair, items both voted on, and how many agree."""
    by: dict[int, dict[int, str]] = {}
    for item, ann, lab in votes:
        if lab in ("relevant", "irrelevant"):
            by.setdefault(ann, {})[item] = lab
    out = {}
    for a, b in itertools.permutations(sorted(names), 2):
        common = set(by.get(a, {})) & set(by.get(b, {}))
        agree = sum(by[a][i] == by[b][i] for i in common)
        out[(names[a], names[b])] = (agree, len(common))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_pair_agreement_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    names = {i: f"a{i}" for i in range(1, 2 + int(rng.integers(1, 6)))}
    votes = []
    for item in range(int(rng.integers(0, 40))):
        for ann in names:
            if rng.random() < 0.6:
                votes.append((item, ann, str(rng.choice(["relevant", "irrelevant", "skip"]))))
    arr = np.asarray(votes, dtype=object).reshape(-1, 3)
    got = pair_agreement(arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2], names)
    want = _oracle(votes, names)
    order = got["annotators"]
    for (x, y), (agree, both) in want.items():
        i, j = order.index(x), order.index(y)
        assert (got["agree"][i][j], got["both"][i][j]) == (agree, both)
        assert got["matrix"][i][j] == (agree / both if both else None)
    for x in order:
        pairs = [v for (a, _), v in want.items() if a == x]
        tot = sum(b for _, b in pairs)
        assert got["with_others"][x] == (sum(a for a, _ in pairs) / tot if tot else None)
