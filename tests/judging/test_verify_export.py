"""``fireval judgments verify-export``: a FIRE file and its provenance sidecar checked as a pair.

Every pair here is made by the real export (:func:`fireval.judging.export.export_fire_json`)
on a small SQLite store; the broken pairs are made the ways they happen: a FIRE file edited
after the export, a sidecar from another export, no sidecar, an export killed between its two
renames (the child process of tests/judging/test_export_crash.py), a sidecar edited by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_export_crash import answer_one_more, killed_export, small_store

from fireval.cli import main
from fireval.core.errors import InputError
from fireval.judging import provenance as P
from fireval.judging.export import export_fire_json
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["judgments", "verify-export", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys: pytest.CaptureFixture[str], *args: str, match: str) -> str:
    code, out, err = cli(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("fireval: error: ") and err.count("\n") == 1, err
    assert match in err, err
    return err


@pytest.fixture
def pair(tmp_path: Path) -> tuple[str, int, Path, Path]:
    url, a = small_store(tmp_path / "s.db")
    out, side = tmp_path / "f.json", tmp_path / "f.provenance.json"
    export_fire_json(url, out, provenance=side)
    return url, a, out, side


def test_a_fresh_export_verifies(pair, capsys) -> None:
    _, _, out, side = pair
    sha = P.sha256_of(out)
    code, text, err = cli(capsys, str(out))
    assert (code, err) == (0, "")
    assert text == f"ok: {out} matches {side} (1 annotations, 0 disagreements, sha256 {sha})\n"
    code, text, _ = cli(capsys, str(out), "--provenance", str(side), "--json")
    res = json.loads(text)
    assert code == 0 and res["ok"] is True and res["sha256"] == sha
    assert (res["annotations"], res["disagreements"], res["extended"]) == (1, 0, False)
    assert res["fire_json"] == str(out) and res["sidecar"] == str(side) and res["version"] == P.VERSION


def test_a_tie_and_an_extended_export_in_other_directories(tmp_path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    st = Store(url)
    try:  # a double item on which two annotators disagree: a disagreement record
        st.add_items([PoolItem("caption 0", ["c0"], "v0", {"GRAM": 1}, True)], "MSRVTT")
        a, b = (st.add_annotator(n)[0] for n in ("a", "b"))
        item = st.next_item(a.id).id
        st.submit(a.id, item, "relevant")
        assert st.next_item(b.id).id == item
        st.submit(b.id, item, "irrelevant")
    finally:
        st.close()
    out, side = tmp_path / "out" / "f.json", tmp_path / "prov" / "p.json"
    assert export_fire_json(url, out, extended=True, provenance=side) == {
        "annotations": 0,
        "disagreements": 1,
    }
    code, text, _ = cli(capsys, str(out), "--provenance", str(side), "--json")
    res = json.loads(text)
    assert code == 0 and res["extended"] is True
    assert (res["annotations"], res["disagreements"]) == (0, 1)
    refused(capsys, str(out), match="no provenance sidecar")  # not in its default place


def test_a_fire_file_edited_after_the_export_fails(pair, capsys) -> None:
    _, _, out, side = pair
    data = json.loads(out.read_text())
    data["annotations"][0]["label"] = (
        "irrelevant" if data["annotations"][0]["label"] == "relevant" else "relevant"
    )
    out.write_text(json.dumps(data))
    refused(capsys, str(out), match="does not describe")
    code, text, err = cli(capsys, str(out), "--json")  # --json: a JSON result as well as the error
    res = json.loads(text)
    assert code == 2 and res["ok"] is False and "does not describe" in res["error"] and err


def test_a_sidecar_from_another_export_fails(pair, capsys, tmp_path) -> None:
    url, a, out, side = pair
    answer_one_more(url, a)
    out2, side2 = tmp_path / "g.json", tmp_path / "g.provenance.json"
    export_fire_json(url, out2, provenance=side2)
    assert cli(capsys, str(out2))[0] == 0
    refused(capsys, str(out), "--provenance", str(side2), match="different exports")
    refused(capsys, str(out2), "--provenance", str(side), match="different exports")


def test_a_missing_sidecar_fails_with_a_hint(tmp_path, capsys) -> None:
    url, _ = small_store(tmp_path / "s.db")
    out = tmp_path / "f.json"
    export_fire_json(url, out)  # no sidecar (--no-provenance)
    err = refused(capsys, str(out), match=f"no provenance sidecar at {tmp_path / 'f.provenance.json'}")
    assert "--provenance PATH" in err and "--no-provenance" in err
    refused(capsys, str(out), "--provenance", str(tmp_path / "elsewhere.json"), match="elsewhere.json")
    refused(capsys, str(tmp_path / "none.json"), match="FIRE JSON file not found")


def test_an_interrupted_export_fails(tmp_path, capsys) -> None:
    url, a = small_store(tmp_path / "s.db")
    out, side = tmp_path / "f.json", tmp_path / "f.provenance.json"
    killed_export(url, out, side)  # the first export, killed between its renames: no FIRE file
    refused(capsys, str(out), "--provenance", str(side), match="does not exist")
    export_fire_json(url, out, provenance=side)
    assert cli(capsys, str(out))[0] == 0
    answer_one_more(url, a)
    killed_export(url, out, side)  # the new sidecar beside the old FIRE file
    refused(capsys, str(out), match="does not describe")
    export_fire_json(url, out, provenance=side)  # the next export repairs the pair
    assert cli(capsys, str(out))[0] == 0


def rewrite(side: Path, out: Path, edit) -> None:  # type: ignore[no-untyped-def]
    """Edit the sidecar by hand (its recorded sha256 kept equal to ``out``'s)."""
    doc = json.loads(side.read_text())
    edit(doc)
    doc["fire_json"]["sha256"] = P.sha256_of(out)
    side.write_text(json.dumps(doc))


def test_a_sidecar_edited_by_hand_or_a_file_outside_the_data_model_fails(pair, capsys) -> None:
    _, _, out, side = pair
    good = side.read_text()
    rewrite(side, out, lambda d: d["fire_json"].update(annotations=5))
    refused(capsys, str(out), match="records fire_json.annotations = 5, but")
    side.write_text(good)
    rewrite(side, out, lambda d: d.update(source_data_md5="0" * 32))
    refused(capsys, str(out), match="records source_data_md5")
    side.write_text(good)
    rewrite(side, out, lambda d: d.update(format="other"))
    refused(capsys, str(out), match="not a provenance sidecar")
    side.write_text(good)
    rewrite(side, out, lambda d: d.update(version=99))
    refused(capsys, str(out), match="version 99")
    # a FIRE file outside the (strict) data model, its sha256 recorded: refused by the model check
    data = json.loads(out.read_text())
    data["annotations"][0]["models"] = ["GRAM"]
    out.write_text(json.dumps(data))
    side.write_text(good)
    rewrite(side, out, lambda d: None)
    refused(capsys, str(out), match="does not follow the FIRE data model: annotations[0].models[0]")
    out.write_text("{not json")
    rewrite(side, out, lambda d: None)
    refused(capsys, str(out), match="not FIRE JSON (malformed JSON")
    with pytest.raises(InputError, match="not FIRE JSON"):  # the library function, as the CLI calls it
        P.verify_pair(out, side)


def test_the_entry_point_prints_one_line_and_no_traceback(pair) -> None:
    _, _, out, side = pair
    out.write_text(out.read_text() + " ")
    fireval = Path(sys.executable).parent / "fireval"
    r = subprocess.run([str(fireval), "judgments", "verify-export", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr and "does not describe" in r.stderr


def test_a_replaced_gold_answer_is_in_the_sidecar_and_the_pair_verifies(tmp_path, capsys) -> None:
    """`judgments load --gold F --replace` (audited in gold_item_events) reaches the sidecar
    (version 4: gold.replacements), and verify-export accepts the pair."""
    from fireval.judging.gold import GOLD_BASE

    url, a = small_store(tmp_path / "s.db")
    first, second = tmp_path / "gold.jsonl", tmp_path / "gold-fixed.jsonl"
    pair = {"caption": "a dog runs", "video_id": "gv"}
    first.write_text(json.dumps({**pair, "answer": "irrelevant"}) + "\n")
    second.write_text(json.dumps({**pair, "answer": "relevant"}) + "\n")
    for f, extra in ((first, []), (second, ["--replace"])):
        with pytest.raises(SystemExit) as info:
            main(["judgments", "load", "--gold", str(f), "--db", url, *extra])
        assert info.value.code in (0, None)
    st = Store(url, create=False)
    try:
        st.gold.rate = 1.0
        g = st.gold.due(a)
        assert g is not None and g.id == GOLD_BASE + 1
        st.submit(a, g.id, "relevant")  # right against the replaced answer
    finally:
        st.close()
    out = tmp_path / "f.json"
    with pytest.raises(SystemExit) as info:
        main(["judgments", "export", "--db", url, "-o", str(out)])
    assert info.value.code in (0, None)
    capsys.readouterr()
    code, text, err = cli(capsys, str(out))
    assert (code, err) == (0, ""), err
    assert text.startswith(f"ok: {out} matches ")
    prov = P.read_sidecar(out.with_name("f.provenance.json"))
    assert prov["version"] == P.VERSION == 4
    rep = prov["gold"]["replacements"]
    assert [
        (r["query"], r["video_id"], r["action"], r["previous"], r["answer"], r["source"]) for r in rep
    ] == [("a dog runs", "gv", "replace", "irrelevant", "relevant", "gold-fixed.jsonl")]
    assert rep[0]["gold_id"] == 1 and rep[0]["created_at"].endswith("+00:00")
    assert prov["gold"]["items"] == [
        {"gold_id": 1, "query": "a dog runs", "video_id": "gv", "answer": "relevant"}
    ]
    assert [x["correct"] for x in prov["gold"]["answers"]] == [True]
    assert prov["summary"]["gold_replacements"] == 1
    assert prov["snapshot"]["last_gold_replacement_id"] == rep[0]["event_id"]
