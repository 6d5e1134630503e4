"""FIRE JSON export round trip through fireval.formats, and the pool/judgments CLI verbs."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from fireval.cli import main
from fireval.core.errors import InputError
from fireval.formats import read_fire_json
from fireval.judging.export import export_fire_json
from fireval.judging.pool import read_pool
from fireval.judging.store import Store, store_judgments


def schema_errors(doc: dict) -> list[str]:
    """The test-only oracle tests/formats/fire_schema.py (jsonschema, from the authors' field list)."""
    path = Path(__file__).parents[1] / "formats" / "fire_schema.py"
    spec = importlib.util.spec_from_file_location("fire_schema_oracle", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.validation_errors(doc)


def cli(args: list[str]) -> int:
    """Run the CLI in-process; return its exit code."""
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def label_all(st: Store, rule) -> None:
    """Two annotators answer every item they are given with ``rule(annotator_name, item)``."""
    users = [st.add_annotator(n)[0] for n in ("a", "b")]
    for u in users:
        while (it := st.next_item(u.id)) is not None:
            st.submit(u.id, it.id, rule(u.name, it))


def test_export_roundtrip_matches_store(msrvtt, tmp_path) -> None:
    from fireval.judging.pool import build_pool

    coll, runs = msrvtt
    pool = build_pool(
        coll,
        runs,
        depth=2,
        queries=range(15),
        judged=[coll.instance_judgments()],
        double_fraction=0.3,
        seed=2,
        dataset="MSRVTT",
    )
    db = f"sqlite:///{tmp_path / 's.db'}"
    st = Store(db)
    st.add_items(pool.items, "MSRVTT")
    # a relevant when the item's id is even; b always irrelevant -> disagreements on some doubles
    label_all(st, lambda name, it: "relevant" if (name == "a" and it.id % 2 == 0) else "irrelevant")
    ann, dis = st.fire_records()
    assert dis, "the rule must create at least one disagreement"
    out = tmp_path / "fire.json"
    # strict (default): GRAM and VAST are not models of the FIRE data model; nothing is written
    with pytest.raises(InputError, match=r"models\[\d\]: '(GRAM|VAST)' is not one of CLIP4CLIP, SSB, CE"):
        export_fire_json(st, out, "MSRVTT")
    assert not out.exists()
    ext = tmp_path / "extended.json"
    export_fire_json(st, ext, "MSRVTT", extended=True)  # fireval's extension keeps the run names
    assert any("GRAM" in e for e in schema_errors(json.loads(ext.read_text())))
    pool_file = tmp_path / "pool.jsonl"
    pool_file.write_text("any bytes\n")
    counts = export_fire_json(
        st,
        out,
        "MSRVTT",
        model_names={"GRAM": "SSB", "VAST": "CE"},
        pool_files=[pool_file],
        meta={"email": "a@b.c"},
    )
    st.close()
    assert counts == {"annotations": len(ann), "disagreements": len(dis)}
    doc = json.loads(out.read_text())
    assert schema_errors(doc) == []
    assert doc["source_data_md5"] == hashlib.md5(b"any bytes\n").hexdigest()
    assert doc["email"] == "a@b.c" and doc["creator"] == "fireval" and doc["datasets"] == ["MSRVTT"]
    assert len(doc["source_annotator_map_md5"]) == 32 and len(doc["source_ds"]) == 10
    # disagreements keep every field
    for r in doc["disagreements"]:
        assert len(r["annotator_ids"]) == len(r["annotator_labels"]) == len(r["response_ids"]) >= 2
        assert r["queue_ids"] and r["models"]
    rec = doc["annotations"][0]
    assert set(rec) == {
        "annotator_ids",
        "label",
        "video_id",
        "query",
        "annotator_labels",
        "response_ids",
        "queue_ids",
        "models",
        "dataset",
    }
    imp = read_fire_json(out, coll)
    assert imp.unmatched == []
    direct = store_judgments(db, coll)
    a = {
        (int(r), int(c), float(g))
        for r, c, g in zip(imp.judgments.rows, imp.judgments.cols, imp.judgments.grades)
    }
    b = {(int(r), int(c), float(g)) for r, c, g in zip(direct.rows, direct.cols, direct.grades)}
    assert a == b and len(a) >= len(ann)
    assert {tuple(x) for x in imp.judgments.unresolved.tolist()} == {
        tuple(x) for x in direct.unresolved.tolist()
    }
    # every exported label is a real majority: check against the raw votes
    for r in doc["annotations"]:
        votes = r["annotator_labels"]
        assert votes.count(r["label"]) * 2 > len(votes)
        assert set(r["models"]) <= {"CLIP4CLIP", "SSB", "CE"}


def test_cli_pool_load_export(shared_data, tmp_path, capsys) -> None:
    d = shared_data / "msrvtt"
    pool = tmp_path / "pool.jsonl"
    assert (
        cli(
            [
                "pool",
                f"CLIP4CLIP={d / 'sims' / 'clip4clip_msrvtt.npy'}",
                f"GRAM={d / 'sims' / 'GRAM_msrvtt.npy'}",
                "-c",
                str(d / "MSRVTT_JSFUSION_test.csv"),
                "-o",
                str(pool),
                "--max-queries",
                "20",
                "--dataset",
                "MSRVTT",
                "--allow-misaligned",  # GRAM fails the alignment check (issue 24)
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "CLIP4CLIP" in out and "contributed" in out
    p = read_pool(pool)
    assert p.header["depth"] == 10 and p.header["runs"] == ["CLIP4CLIP", "GRAM"]
    n = len(p.items)
    assert 180 <= n <= 400  # 2 runs x 10 per query for 20 queries, minus overlap and instance pairs
    db = f"sqlite:///{tmp_path / 's.db'}"
    assert cli(["judgments", "init", "--db", db]) == 0
    assert cli(["judgments", "load", str(pool), "--db", db]) == 0
    assert f"loaded {n} items" in capsys.readouterr().out
    assert cli(["judgments", "load", str(pool), "--db", db]) == 0
    assert f"loaded 0 items ({n} already present)" in capsys.readouterr().out
    assert cli(["judgments", "add-annotator", "zoe", "--db", db, "--role", "admin"]) == 0
    name, role, token = capsys.readouterr().out.strip().split("\t")
    assert (name, role) == ("zoe", "admin") and len(token) >= 40
    st = Store(db)
    assert st.authenticate(token).name == "zoe"
    it = st.next_item(st.authenticate(token).id)
    st.submit(1, it.id, "relevant")
    st.close()
    assert cli(["judgments", "status", "--db", db]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["items"] == n and status["votes"] == 1
    assert (
        cli(["judgments", "export", "--db", db, "-o", str(tmp_path / "f.json"), "--dataset", "MSRVTT"]) == 0
    )
    doc = json.loads((tmp_path / "f.json").read_text())
    assert len(doc["annotations"]) == 1 and doc["annotations"][0]["query"] == it.caption


def test_cli_errors_exit_2(tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert cli(["judgments", "load", str(bad), "--db", f"sqlite:///{tmp_path / 's.db'}"]) == 2
    assert (
        cli(["judgments", "add-annotator", "x", "--db", f"sqlite:///{tmp_path / 's.db'}", "--role", "king"])
        == 2
    )


def test_depth_zero_rejected(shared_data, tmp_path) -> None:
    d = shared_data / "msrvtt"
    code = cli(
        [
            "pool",
            str(d / "sims" / "GRAM_msrvtt.npy"),
            "-c",
            str(d / "MSRVTT_JSFUSION_test.csv"),
            "-o",
            str(tmp_path / "p.jsonl"),
            "--depth",
            "0",
        ]
    )
    assert code == 2 and not (tmp_path / "p.jsonl").exists()


def test_store_url_is_a_label_source(tmp_path) -> None:
    from fireval import api
    from fireval.core import Collection
    from fireval.judging.pool import PoolItem

    coll = Collection.from_pairs("msrvtt-toy", [("q0", "v0", "a dog"), ("q1", "v1", "a cat")])
    db = f"sqlite:///{tmp_path / 's.db'}"
    st = Store(db)
    st.add_items([PoolItem("a dog", ["q0"], "v1", {"A": 1})], "MSRVTT")
    a, _ = st.add_annotator("a")
    st.submit(a.id, st.next_item(a.id).id, "relevant")
    st.close()
    j = api.load_labels(db, coll)
    assert j.sources == ("human",) and list(zip(j.rows.tolist(), j.cols.tolist(), j.grades.tolist())) == [
        (0, 1, 1.0)
    ]
    sets = api.label_sets(coll, [db])
    assert len(sets["augmented"]) == len(sets["original"]) + 1
