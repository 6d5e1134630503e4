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


def test_read_labels_logs_unmatched(fire_file, tiny, caplog):
    with caplog.at_level("WARNING", logger="fireval.formats.labels"):
        read_labels(fire_file, tiny)
    assert "4 FIRE records could not be joined" in caplog.text and "unknown video" in caplog.text
