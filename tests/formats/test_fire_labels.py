"""FIRE JSON through :func:`read_labels` (what ``--labels`` / ``labels=`` use).

- no record of the file joins the collection: :class:`InputError` naming the file (was a silent Δ 0);
- a partly joined file: one warning line with the counts by reason;
- gzip data is sniffed by content whatever its name (``labels.gz`` was read as qrels);
- the import's warnings reach ``Judgments.warnings``, ``Evaluation.warnings`` and the CLI's
  stderr, each once.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from fireval import api
from fireval.cli import main
from fireval.core import Collection, InputError
from fireval.formats.example import load_example
from fireval.formats.labels import read_labels


def _fire(path, records, disagreements=()):
    path.write_text(json.dumps({"annotations": list(records), "disagreements": list(disagreements)}))
    return path


def _rec(query, video, label="relevant", dataset="MSRVTT"):
    return {"label": label, "video_id": video, "query": query, "dataset": dataset, "annotator_ids": [1]}


# ------------------------------------------------------------------ nothing joined
def test_fire_file_with_no_joinable_record_is_an_error(tmp_path) -> None:
    coll = Collection.from_pairs("descs_ret_test_didemo", [("c0", "v0", "a dog runs"), ("c1", "v1", "a cat")])
    recs = [_rec("a man is singing", f"video{7000 + i}") for i in range(5)]
    path = _fire(tmp_path / "fire.json", recs)
    with pytest.raises(InputError) as info:
        read_labels(path, coll)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}: ")
    assert "none of its 5 FIRE record(s)" in msg and "'descs_ret_test_didemo'" in msg
    assert "5 unknown video" in msg and "another collection" in msg


def test_other_dataset_and_disagreements_only_count_as_records(tmp_path, tiny) -> None:
    """MSVD labels on an MSR-VTT collection: every record is 'other dataset' -> error."""
    path = _fire(
        tmp_path / "fire.json", [_rec("a dog runs", "v1", dataset="MSVD")], [_rec("a cat sleeps", "v9")]
    )
    with pytest.raises(InputError, match=r"none of its 2 FIRE record\(s\).*1 other dataset, 1 unknown video"):
        read_labels(path, tiny)


def test_one_joined_disagreement_is_enough(tmp_path, tiny) -> None:
    """A joined disagreement record is a joined record: warning, not error (threshold: zero joined)."""
    dis = {k: v for k, v in _rec("a cat sleeps", "v2").items() if k != "label"}
    path = _fire(tmp_path / "fire.json", [_rec("a horse", "v0")], [dis])
    j = read_labels(path, tiny)
    assert len(j) == 0 and j.unresolved.tolist() == [[4, 2]]
    assert j.warnings == (
        f"{path}: 1 of 2 FIRE records could not be joined to collection 'msrvtt-tiny' "
        "(1 caption text not in collection); they are not used",
    )


def test_cli_exit_2_when_nothing_joins(tmp_path, capsys) -> None:
    scores = tmp_path / "s.npy"
    np.save(scores, np.eye(1000, dtype=np.float32))
    path = _fire(tmp_path / "msrvtt_fire.json", [_rec("a man is singing", "other_video")])
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(scores), "--labels", str(path), "-q"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err
    assert "msrvtt_fire.json" in err and "none of its 1 FIRE record(s)" in err


# ------------------------------------------------------------------ gzip sniffing
@pytest.mark.parametrize("name", ["fire.json.gz", "labels.gz", "fire.data.gz", "fire.data"])
def test_fire_json_is_sniffed_by_content(tmp_path, tiny, name) -> None:
    plain = _fire(
        tmp_path / "plain.json", [_rec("a dog runs", "v1"), _rec("a cat sleeps", "v0", "irrelevant")]
    )
    ref = read_labels(plain, tiny)
    p = tmp_path / name
    data = b"\xef\xbb\xbf\n  " + plain.read_bytes()  # BOM and blanks before the object
    p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    j = read_labels(p, tiny)
    assert j.rows.tolist() == ref.rows.tolist() == [2, 4]
    assert j.cols.tolist() == ref.cols.tolist() and j.grades.tolist() == ref.grades.tolist() == [1.0, 0.0]


def test_gzipped_json_array_goes_to_the_fire_reader(tmp_path, tiny) -> None:
    p = tmp_path / "labels.gz"
    p.write_bytes(gzip.compress(b"[1, 2]"))
    with pytest.raises(InputError, match="expected a JSON object with 'annotations', found list"):
        read_labels(p, tiny)


def test_gzipped_qrels_with_any_name_stay_qrels(tmp_path, tiny) -> None:
    p = tmp_path / "labels.gz"
    p.write_bytes(gzip.compress(b"c2 0 v1 1\nc4 0 v0 0\n"))
    j = read_labels(p, tiny)
    assert j.rows.tolist() == [2, 4] and j.grades.tolist() == [1.0, 0.0]


def test_large_gzip_head_is_read_in_pieces(tmp_path, tiny) -> None:
    """Leading blanks beyond the first read: the sniffer inflates until it has content."""
    body = b" " * 100_000 + json.dumps({"annotations": [_rec("a dog runs", "v1")]}).encode()
    p = tmp_path / "labels.gz"
    p.write_bytes(gzip.compress(body))
    assert read_labels(p, tiny).rows.tolist() == [2]


# ------------------------------------------------------------------ warnings reach the API / CLI
def test_import_warnings_reach_evaluation_warnings(tmp_path, tiny, caplog) -> None:
    recs = [
        _rec("a man is cooking", "v2"),  # text of c0 and c3: labels both
        _rec("a dog runs", "v2", "relevant"),  # conflict -> unjudged
        _rec("a dog runs", "v2", "irrelevant"),
        _rec("a dog runs", "v9"),  # unknown video
    ]
    path = _fire(tmp_path / "fire.json", recs)
    scores = np.arange(18, dtype=np.float64).reshape(6, 3)
    with caplog.at_level("WARNING"):
        ev = api.evaluate(scores, collection=tiny, labels=str(path), direction="t2v")
    lines = [w for w in ev.warnings if str(path) in w]
    assert len(lines) == 3, ev.warnings
    assert "1 FIRE record(s) name a query text that several captions" in lines[0]
    assert "1 of 4 FIRE records could not be joined" in lines[1] and "1 unknown video" in lines[1]
    assert "1 caption-video pair(s) have FIRE annotation records with different labels" in lines[2]
    assert ev.warnings[:3] == lines  # label lines first
    assert not caplog.records  # reported through the result, not logged as well


def test_cli_prints_each_import_warning_once(tmp_path, capsys) -> None:
    coll = load_example().collection
    shared = next(rows for rows in coll.normalised_index.values() if len(rows) > 1)
    text = coll.captions[shared[0]]
    recs = [_rec(text, coll.video_ids[0]), _rec("a man is cooking", "no_such_video")]
    path = _fire(tmp_path / "fire.json", recs)
    scores = tmp_path / "s.npy"
    np.save(scores, np.eye(1000, dtype=np.float32))
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(scores), "--labels", str(path), "-q"])
    err = capsys.readouterr().err
    assert info.value.code in (0, None), err
    assert err.count("name a query text that several captions") == 1, err
    assert err.count("1 of 2 FIRE records could not be joined") == 1, err
    assert f"warning: {path}: 1 FIRE record(s)" in err
