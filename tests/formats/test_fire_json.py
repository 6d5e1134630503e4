"""FIRE JSON import/export on a hand-built file that exercises every join rule."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fireval.core import InputError
from fireval.formats import judgments_to_fire_records, read_fire_json, read_labels, write_fire_json


def rec(query, video, label=None, ann=(1,), dataset="MSRVTT", models=("CLIP4CLIP",)):
    r = {
        "annotator_ids": list(ann),
        "video_id": video,
        "query": query,
        "annotator_labels": [label or "relevant"] * len(ann),
        "response_ids": [a * 100 for a in ann],
        "queue_ids": [7] * len(ann),
        "models": list(models),
        "dataset": dataset,
    }
    if label is not None:
        r["label"] = label
    return r


ANNOTATIONS = [
    rec("a man is cooking", "v2", "relevant"),  # 0: text of c0 and c3 -> labels both
    rec("A DOG runs!", "v0", "irrelevant"),  # 1: normalised join -> c2
    rec("a dog runs", "v2", "relevant", ann=(3,)),  # 2 + 3: conflict -> unresolved
    rec("a dog runs", "v2", "irrelevant", ann=(4,)),
    rec("a dog runs", "v9", "relevant"),  # 4: unknown video
    rec("a horse jumps", "v0", "relevant"),  # 5: text not in collection
    rec("a dog runs", "v1", "relevant", dataset="MSVD"),  # 6: other dataset
    rec("kids play football", "v1", "relevant", ann=(1,)),  # 7 + 8: agree -> details merged
    rec("Kids play football.", "v1", "relevant", ann=(2,), models=("SSB",)),
    rec("a man cooks pasta", "v2", "relevant", ann=(5,)),  # 9: label beats disagreement record
]
DISAGREEMENTS = [
    rec("a cat sleeps", "v0", ann=(1, 2)),  # stays unjudged
    rec("a man cooks pasta", "v2", ann=(1, 2)),
    rec("a cat sleeps", "v77", ann=(1, 2)),  # unknown video
]


@pytest.fixture
def fire_file(tmp_path):
    p = tmp_path / "fire.json"
    p.write_text(
        json.dumps(
            {"annotations": ANNOTATIONS, "disagreements": DISAGREEMENTS, "source_ds": "x", "license": "CC"}
        )
    )
    return p


def test_every_rule(fire_file, tiny):
    imp = read_fire_json(fire_file, tiny)
    j = imp.judgments
    cid = {c: i for i, c in enumerate(tiny.caption_ids)}
    vid = tiny.video_index
    got = {
        (tiny.caption_ids[r], tiny.video_ids[c]): g for r, c, g in zip(j.rows, j.cols, j.grades, strict=True)
    }
    assert got == {("c0", "v2"): 1, ("c3", "v2"): 1, ("c2", "v0"): 0, ("c5", "v1"): 1, ("c1", "v2"): 1}
    assert j.sources == ("human",)
    assert {tuple(x) for x in j.unresolved.tolist()} == {(cid["c2"], vid["v2"]), (cid["c4"], vid["v0"])}
    assert imp.conflicts == 1 and imp.disagreements == 3 and imp.n_pairs_unresolved == 2
    assert [(u.record, u.reason) for u in imp.unmatched] == [
        ("annotations[4]", "unknown video"),
        ("annotations[5]", "caption text not in collection"),
        ("annotations[6]", "other dataset"),
        ("disagreements[2]", "unknown video"),
    ]
    d = j.details[(cid["c5"], vid["v1"])]
    assert (
        d["annotator_ids"] == [1, 2]
        and d["models"] == ["CLIP4CLIP", "SSB"]
        and d["response_ids"] == [100, 200]
    )
    s = imp.summary()
    assert s["relevant_pairs"] == 4 and s["irrelevant_pairs"] == 1 and s["unmatched_records"] == 4
    assert s["unmatched_by_reason"]["unknown video"] == 2 and s["dataset"] == "MSRVTT"
    assert imp.meta == {"source_ds": "x", "license": "CC"}
    # the generic dispatcher returns the same labels
    assert read_labels(fire_file, tiny).matrix().nnz == j.matrix().nnz


def test_dataset_argument_overrides_inference(fire_file, tiny):
    imp = read_fire_json(fire_file, tiny, dataset="MSVD")
    j = imp.judgments  # only record 6 is MSVD; it joins c2-v1
    assert list(zip(j.rows.tolist(), j.cols.tolist(), j.grades.tolist(), strict=True)) == [(2, 1, 1.0)]
    assert imp.summary()["unmatched_by_reason"] == {"other dataset": 12}


def test_write_read_round_trip(tmp_path, fire_file, tiny):
    imp = read_fire_json(fire_file, tiny)
    anns, dis = judgments_to_fire_records(imp.judgments, tiny, "MSRVTT")
    # c0 and c3 share a text: exported once
    assert sorted((a["query"], a["video_id"]) for a in anns if a["video_id"] == "v2") == [
        ("A man is cooking.", "v2"),
        ("a man  cooks pasta", "v2"),
    ]
    out = tmp_path / "out.json"
    write_fire_json(out, anns, dis, {"creator": "me"})
    raw = json.loads(out.read_text())
    assert list(raw) == [
        "annotations",
        "disagreements",
        "source_ds",
        "source_data_md5",
        "source_annotator_map_md5",
        "created_ds",
        "email",
        "creator",
        "website",
        "license",
        "datasets",
    ]
    assert raw["datasets"] == ["MSRVTT"] and raw["creator"] == "me"
    assert set(raw["annotations"][0]) == {
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
    back = read_fire_json(out, tiny)
    assert np.array_equal(back.judgments.matrix().toarray(), imp.judgments.matrix().toarray())
    assert np.array_equal(
        back.judgments.matrix(judged=True).toarray(), imp.judgments.matrix(judged=True).toarray()
    )
    assert {tuple(x) for x in back.judgments.unresolved.tolist()} == {
        tuple(x) for x in imp.judgments.unresolved.tolist()
    }
    assert back.judgments.details == imp.judgments.details
    assert back.unmatched == []


def test_writer_validates_and_is_atomic(tmp_path):
    out = tmp_path / "o.json"
    with pytest.raises(InputError, match=r"annotations\[1\]: missing key 'label'"):
        write_fire_json(out, [rec("a", "v", "relevant"), rec("b", "v")], [])
    with pytest.raises(InputError, match="unknown FIRE JSON meta key"):
        write_fire_json(out, [], [], {"author": "x"})
    with pytest.raises(InputError, match=r"disagreements\[0\]: a disagreement has no 'label'"):
        write_fire_json(out, [], [rec("a", "v", "relevant")])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ('{"annotations": [', r"bad.json:1: malformed JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"disagreements": []}', "missing key 'annotations'"),
        ('{"annotations": {}}', "'annotations' must be a list"),
        (
            json.dumps({"annotations": [rec("a", "v0", "relevant"), 5]}),
            r"annotations\[1\]: expected an object",
        ),
        (
            json.dumps({"annotations": [{"query": "a", "label": "relevant"}]}),
            r"annotations\[0\]: missing key 'video_id'",
        ),
        (json.dumps({"annotations": [rec("a", "v0", "maybe")]}), r"annotations\[0\]: 'label' must be"),
        (
            json.dumps({"annotations": [], "disagreements": [dict(rec("a", "v0"), annotator_ids=["1"])]}),
            r"disagreements\[0\]: 'annotator_ids' must be a list of int",
        ),
        (
            json.dumps({"annotations": [dict(rec("a", "v0", "relevant"), query=3)]}),
            r"annotations\[0\]: 'query' must be",
        ),
        ("", "file is empty"),
    ],
)
def test_malformed(tmp_path, tiny, payload, message):
    p = tmp_path / "bad.json"
    p.write_text(payload)
    with pytest.raises(InputError, match=message) as info:
        read_fire_json(p, tiny)
    assert "bad.json" in str(info.value)


def test_read_labels_reports_unmatched(fire_file, tiny):
    """Through ``Judgments.warnings`` (what api.label_warnings / the CLI report), not logging."""
    ws = read_labels(fire_file, tiny).warnings
    unjoined = [w for w in ws if "FIRE records could not be joined" in w]
    assert len(unjoined) == 1 and "4 of 13 FIRE records" in unjoined[0] and "2 unknown video" in unjoined[0]


def test_round_trip_keeps_every_disagreement_field(tmp_path, fire_file, tiny):
    """Disagreements come back with their annotator ids, labels, response ids, queue ids and models."""
    imp = read_fire_json(fire_file, tiny)
    _, dis = judgments_to_fire_records(imp.judgments, tiny, "MSRVTT")
    by = {(d["query"], d["video_id"]): d for d in dis}
    cat = by[("a cat sleeps", "v0")]  # a disagreement record of the file
    assert cat["annotator_ids"] == [1, 2] and cat["response_ids"] == [100, 200] and cat["queue_ids"] == [7, 7]
    assert cat["annotator_labels"] == ["relevant", "relevant"] and cat["models"] == ["CLIP4CLIP"]
    dog = by[("a dog runs", "v2")]  # two annotation records with different labels
    assert dog["annotator_ids"] == [3, 4] and dog["annotator_labels"] == ["relevant", "irrelevant"]
    out = tmp_path / "out.json"
    keys = (
        "source_ds",
        "source_data_md5",
        "source_annotator_map_md5",
        "email",
        "website",
        "creator",
        "license",
    )
    meta = dict.fromkeys(keys, "x")
    write_fire_json(out, *judgments_to_fire_records(imp.judgments, tiny, "MSRVTT"), meta, strict=True)
    again = judgments_to_fire_records(read_fire_json(out, tiny).judgments, tiny, "MSRVTT")
    assert again == judgments_to_fire_records(imp.judgments, tiny, "MSRVTT")


def _oracle_errors(doc):
    from fire_schema import validation_errors  # tests/formats/fire_schema.py (test-only oracle)

    return validation_errors(doc)


def _valid_doc():
    return {
        "annotations": [rec("a dog runs", "v1", "relevant")],
        "disagreements": [rec("a cat", "v2", ann=(1, 2))],
        **{
            k: "s"
            for k in (
                "source_ds",
                "source_data_md5",
                "source_annotator_map_md5",
                "created_ds",
                "email",
                "creator",
                "website",
                "license",
            )
        },
        "datasets": ["MSRVTT"],
    }


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d, None),
        (lambda d: d.update(email=None), "email"),
        (lambda d: d["annotations"][0].update(models=["clip4clip"]), "annotations[0].models[0]"),
        (lambda d: d["disagreements"][0].update(dataset="DiDeMo"), "disagreements[0].dataset"),
        (
            lambda d: d["annotations"][0].update(annotator_labels=["maybe"]),
            "annotations[0].annotator_labels[0]",
        ),
        (lambda d: d["annotations"][0].pop("queue_ids"), "annotations[0].queue_ids"),
        (lambda d: d["disagreements"][0].update(label="relevant"), "disagreements[0].label"),
        (lambda d: d.update(datasets=["msrvtt"]), "datasets[0]"),
        (lambda d: d.pop("license"), "license"),
    ],
)
def test_schema_problems_agree_with_the_oracle(edit, field):
    from fireval.formats.fire_json import schema_problems

    doc = _valid_doc()
    edit(doc)
    ours = schema_problems(doc)
    assert bool(ours) == bool(_oracle_errors(doc))
    if field is not None:
        assert ours[0].startswith(f"{field}:")


def test_strict_writer_refuses_and_extended_allows(tmp_path):
    doc = _valid_doc()
    doc["annotations"][0]["models"] = ["GRAM"]
    meta = {k: v for k, v in doc.items() if k not in ("annotations", "disagreements")}
    out = tmp_path / "o.json"
    with pytest.raises(InputError, match=r"annotations\[0\]\.models\[0\]: 'GRAM' is not one of CLIP4CLIP"):
        write_fire_json(out, doc["annotations"], doc["disagreements"], meta, strict=True)
    assert not out.exists()
    write_fire_json(out, doc["annotations"], doc["disagreements"], meta, strict=True, extended=True)
    written = json.loads(out.read_text())
    assert [e for e in _oracle_errors(written) if "GRAM" not in e] == []
    doc["annotations"][0]["models"] = ["CE"]
    write_fire_json(out, doc["annotations"], doc["disagreements"], meta, strict=True)
    assert _oracle_errors(json.loads(out.read_text())) == []
