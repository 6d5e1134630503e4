"""MSR-VTT / MSVD readers on the real shared data, plus bad-input cases."""

from __future__ import annotations

import csv
import json
from collections import Counter

import numpy as np
import pytest

from fireval.core import InputError, normalise
from fireval.formats import (
    read_msrvtt_jsfusion,
    read_msrvtt_official,
    read_msvd,
    read_msvd_raw_corpus,
    read_split_list,
)


def test_jsfusion_1ka(shared_data):
    path = shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"
    c = read_msrvtt_jsfusion(path)
    assert c.shape == (1000, 1000)
    assert len(set(c.captions)) == 995
    # independent parse: rows in order, video of row i is video i (diagonal ground truth)
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(c.caption_ids) == [r["key"] for r in rows]
    assert list(c.video_ids) == [r["video_id"] for r in rows]
    assert np.array_equal(c.caption_video, np.arange(1000))
    assert c.captions[0] == rows[0]["sentence"]
    assert Counter(c.captions)["a man playing video games"] == 3


def test_official_test_and_1ka_join(shared_data):
    m = shared_data / "msrvtt"
    off = read_msrvtt_official(m / "official_test" / "test.json", m / "splits_ce" / "test_list_full.txt")
    assert off.shape == (59800, 2990)
    assert off.video_ids[0] == "video7010" and off.video_ids[-1] == "video9999"
    assert np.all(np.bincount(off.caption_video) == 20)
    raw = json.loads((m / "official_test" / "test.json").read_text())
    cid = off.caption_ids[12345]
    assert off.captions[12345] == raw[off.video_ids[off.caption_video[12345]]][cid]
    # every 1k-A sentence matches a caption of its own video after normalisation; 965 verbatim
    ka = read_msrvtt_jsfusion(m / "MSRVTT_JSFUSION_test.csv")
    verbatim = norm = 0
    for sent, vid in zip(ka.captions, np.asarray(ka.video_ids)[ka.caption_video], strict=True):
        caps = list(raw[vid].values())
        verbatim += sent in caps
        norm += normalise(sent) in {normalise(x) for x in caps}
    assert (verbatim, norm) == (965, 1000)


def test_official_without_list_keeps_file_order(shared_data):
    off = read_msrvtt_official(shared_data / "msrvtt" / "official_test" / "test.json")
    assert off.n_videos == 2990 and off.video_ids[0] == "video8831"


def test_msvd(shared_data):
    d = shared_data / "msvd"
    c = read_msvd(d / "captions_msvd.json", d / "test_list.txt")
    assert c.shape == (27763, 670)
    counts = np.bincount(c.caption_video)
    assert counts.min() == 21 and counts.max() == 81
    raw = json.loads((d / "captions_msvd.json").read_text())
    v = c.video_ids[5]
    assert c.caption_ids[int(c.captions_of(5)[3])] == f"{v}#3"
    assert c.captions[int(c.captions_of(5)[3])] == raw[v][3]


def test_msvd_raw_corpus(shared_data):
    d = shared_data / "msvd"
    c = read_msvd_raw_corpus(d / "raw_corpus" / "test.csv", d / "test_list.txt")
    assert c.shape == (27768, 670)
    assert c.caption_ids[0] == "raw0" and c.video_ids[0] == "eyhzdC936uk_15_27"
    assert any("\n" in t for t in c.captions)  # the embedded newline survives
    json_c = read_msvd(d / "captions_msvd.json", d / "test_list.txt")
    diff = np.bincount(c.caption_video, minlength=670) - np.bincount(json_c.caption_video, minlength=670)
    assert sorted(diff.tolist())[-6:] == [0, 1, 1, 1, 1, 1] and diff.min() == 0


def test_split_list_no_trailing_newline(tmp_path, shared_data):
    ids = read_split_list(shared_data / "msrvtt" / "splits_ce" / "test_list_full.txt")
    assert len(ids) == 2990
    p = tmp_path / "l.txt"
    p.write_text("a\nb\n\nc")
    assert read_split_list(p) == ["a", "b", "c"]


@pytest.mark.parametrize("content", ["", "  \n\n"])
def test_empty_files(tmp_path, content):
    for name in ("a.csv", "a.json", "a.txt"):
        p = tmp_path / name
        p.write_text(content)
        reader = {"a.csv": read_msrvtt_jsfusion, "a.json": read_msrvtt_official, "a.txt": read_split_list}[
            name
        ]
        with pytest.raises(InputError, match="file is empty"):
            reader(p)


def test_duplicate_ids(tmp_path):
    p = tmp_path / "l.txt"
    p.write_text("a\nb\na\n")
    with pytest.raises(InputError, match=r"l.txt:3: duplicate id 'a' \(also on line 1\)"):
        read_split_list(p)
    csvp = tmp_path / "k.csv"
    csvp.write_text("key,vid_key,video_id,sentence\nret0,msr1,video1,a b\nret0,msr2,video2,c d\n")
    with pytest.raises(InputError, match=r"k.csv:3: duplicate caption id 'ret0'"):
        read_msrvtt_jsfusion(csvp)
    j = tmp_path / "t.json"
    j.write_text(json.dumps({"v1": {"1": "a"}, "v2": {"1": "b"}}))
    with pytest.raises(InputError, match="duplicate caption id '1'"):
        read_msrvtt_official(j)
    j.write_text('{"v1": ["a b"], "v2": ["c"], "v1": ["d e"]}')
    with pytest.raises(InputError, match="t.json: duplicate id 'v1'"):
        read_msvd(j, ["v1", "v2"])


def test_jsfusion_bad_header_and_semicolon(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("id,video,text\n1,2,3\n")
    with pytest.raises(InputError, match="lacks column"):
        read_msrvtt_jsfusion(p)
    p.write_text("key;vid_key;video_id;sentence\r\nret0;msr1;video1;a man, cooking\r\n")
    c = read_msrvtt_jsfusion(p)
    assert c.captions == ("a man, cooking",) and c.video_ids == ("video1",)


def test_unknown_video_in_split(tmp_path):
    j = tmp_path / "t.json"
    j.write_text(json.dumps({"v1": ["a b"]}))
    lst = tmp_path / "l.txt"
    lst.write_text("v1\nv9\n")
    with pytest.raises(InputError, match=r"video 'v9' \(entry 2 of .*l.txt\) is not in"):
        read_msvd(j, lst)


def test_malformed_json(tmp_path):
    j = tmp_path / "t.json"
    j.write_text('{"v1": {"1": "a"},')
    with pytest.raises(InputError, match=r"t.json:1: malformed JSON"):
        read_msrvtt_official(j)
