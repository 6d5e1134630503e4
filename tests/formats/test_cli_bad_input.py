"""Bad input through the CLI: exit code 2, a one-line message naming the file, no traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fireval.cli import main
from fireval.formats.example import load_example


def _run(args, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main(args)
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert "Traceback" not in err
    return err


@pytest.fixture(scope="module")
def good_npy(tmp_path_factory):
    p = tmp_path_factory.mktemp("s") / "good.npy"
    np.save(p, np.eye(1000, dtype=np.float32))
    return p


def test_shape_mismatch(tmp_path, capsys):
    p = tmp_path / "small.npy"
    np.save(p, np.zeros((5, 7), np.float32))
    err = _run(["evaluate", str(p)], capsys)
    assert "small.npy" in err and "(5, 7)" in err and "(1000, 1000)" in err


def test_nan_scores(tmp_path, capsys):
    m = np.zeros((1000, 1000), np.float32)
    m[3, 9] = np.nan
    p = tmp_path / "nan.npy"
    np.save(p, m)
    err = _run(["evaluate", str(p)], capsys)
    assert "nan.npy" in err and "NaN" in err and "'ret3'" in err


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("empty.qrels", "", "file is empty"),
        ("bad.json", '{"annotations": [{"query": "x"}]}', "annotations[0]: missing key 'video_id'"),
        ("unknown.qrels", "ret0 0 video1 1\n", "unknown.qrels:1: unknown video (doc) id 'video1'"),
        ("dup.qrels", "ret0 0 video9770 1\nret0 0 video9770 0\n", "lines 1 and 2"),
    ],
)
def test_bad_labels(tmp_path, capsys, good_npy, name, content, needle):
    p = tmp_path / name
    p.write_text(content)
    err = _run(["evaluate", str(good_npy), "--labels", str(p)], capsys)
    assert needle in err and name in err


def test_fire_labels_through_cli(tmp_path, capsys, good_npy):
    coll = load_example().collection
    rec = {
        "annotator_ids": [1],
        "label": "relevant",
        "video_id": coll.video_ids[1],
        "query": coll.captions[0],
        "annotator_labels": ["relevant"],
        "response_ids": [1],
        "queue_ids": [1],
        "models": ["CE"],
        "dataset": "MSRVTT",
    }
    p = tmp_path / "fire.json"
    p.write_text(json.dumps({"annotations": [rec], "disagreements": []}))
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(good_npy), "--labels", str(p), "-m", "C@1"])
    assert info.value.code in (0, None)
    assert "augmented" in capsys.readouterr().out
