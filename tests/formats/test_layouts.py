"""Collections of every standard TVR benchmark through one detector (``read_collection``, ``-c``).

Real files from ../shared/data (DiDeMo, ActivityNet, VATEX, MSR-VTT, MSVD), small files written
here in the public layouts of YouCook2, EPIC-Kitchens-100, LSMDC and the generic JSONL, and the
gzip-compressed form of each.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from fireval import api
from fireval.cli import main
from fireval.core import InputError
from fireval.formats import LAYOUTS, detect_layout, read_collection
from fireval.formats.textio import read_text


def _gz(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# ---------------------------------------------------------------------------- real benchmark files


@pytest.mark.parametrize(
    ("rel", "n_videos"),
    [("didemo/descs_ret_test_didemo.csv", 1003), ("activitynet/descs_ret_test_activitynet.csv", 4917)],
)
def test_paragraph_csv_one_caption_per_video(shared_data, rel, n_videos):
    path = shared_data / rel
    assert detect_layout(read_text(path)) == "caption-csv"
    c = api.load_collection(path)
    rows = _csv_rows(path)
    assert c.shape == (n_videos, n_videos)
    assert list(c.video_ids) == [r["video_id"] for r in rows]
    assert list(c.captions) == [r["sentence"] for r in rows]  # verbatim, no cut at commas
    assert c.caption_ids[0] == f"{rows[0]['video_id']}#0"
    assert np.array_equal(c.caption_video, np.arange(n_videos))  # the diagonal


def test_vatex_ten_captions_per_video(shared_data):
    path = shared_data / "vatex" / "descs_ret_test_vatex.csv"
    c = api.load_collection(path)
    rows = _csv_rows(path)
    assert c.shape == (12520, 1252)
    assert set(np.bincount(c.caption_video).tolist()) == {10}
    assert list(c.video_ids) == list(dict.fromkeys(r["video_id"] for r in rows))
    i = 12345
    assert c.captions[i] == rows[i]["sentence"]
    assert c.video_ids[c.caption_video[i]] == rows[i]["video_id"]
    assert c.caption_ids[i] == f"{rows[i]['video_id']}#{i % 10}"  # rows of a video are consecutive here


def test_msrvtt_and_msvd_through_the_detector(shared_data):
    m, d = shared_data / "msrvtt", shared_data / "msvd"
    assert api.load_collection(m / "MSRVTT_JSFUSION_test.csv").shape == (1000, 1000)
    off = api.load_collection(m / "official_test" / "test.json", split=m / "splits_ce" / "test_list_full.txt")
    assert off.shape == (59800, 2990)
    assert api.load_collection(d / "captions_msvd.json", split=d / "test_list.txt").shape == (27763, 670)
    assert api.load_collection(d / "raw_corpus" / "test.csv", split=d / "test_list.txt").shape == (27768, 670)
    with pytest.raises(InputError, match="needs --split"):
        api.load_collection(d / "captions_msvd.json")


@pytest.mark.parametrize(
    "rel",
    [
        "didemo/descs_ret_test_didemo.csv",
        "vatex/descs_ret_test_vatex.csv",
        "msrvtt/MSRVTT_JSFUSION_test.csv",
        "msrvtt/official_test/test.json",
    ],
)
def test_gzip_reads_the_same(shared_data, tmp_path, rel):
    src = shared_data / rel
    plain = tmp_path / src.name
    plain.write_bytes(src.read_bytes())
    a, b = api.load_collection(plain), api.load_collection(_gz(plain))
    assert (a.caption_ids, a.video_ids, a.captions) == (b.caption_ids, b.video_ids, b.captions)
    assert np.array_equal(a.caption_video, b.caption_video)


def test_clip4clip_on_didemo_via_cli(shared_data, tmp_path, capsys):
    """t2v C@1 = 27.2 (SOURCES.md), checked against a tie-aware count on the diagonal."""
    run = shared_data / "didemo" / "sims" / "clip4clip_didemo.npy"
    out = tmp_path / "r.json"
    main_args = ["evaluate", str(run), "-c", str(shared_data / "didemo" / "descs_ret_test_didemo.csv")]
    with pytest.raises(SystemExit) as info:
        main([*main_args, "-m", "C@1", "-d", "t2v", "-q", "--json", str(out)])
    assert info.value.code in (0, None), capsys.readouterr().err
    res = json.loads(out.read_text())["results"]
    value = next(r["value"] for r in res if r["measure"] == "C@1" and r["direction"] == "t2v")
    s = np.load(run).astype(np.float64)
    diag = np.diag(s)[:, None]
    above, tied = (s > diag).sum(1), (s == diag).sum(1)
    oracle = np.where(above == 0, 1.0 / tied, 0.0).mean()
    assert value == pytest.approx(oracle, abs=1e-9)  # the JSON keeps 10 digits
    assert round(100 * value, 1) == 27.2


# ------------------------------------------------------------------------------- small public layouts

YOUCOOK2 = {
    "database": {
        "GLd3aX16zBg": {
            "duration": 241.62,
            "subset": "training",
            "recipe_type": "113",
            "annotations": [
                {"segment": [90, 102], "id": 0, "sentence": "spread margarine on two slices of white bread"},
                {"segment": [114, 127], "id": 1, "sentence": "place a slice of cheese on the bread"},
            ],
            "video_url": "https://www.youtube.com/watch?v=GLd3aX16zBg",
        },
        "xHr8X2Wpmno": {
            "duration": 300.0,
            "subset": "validation",
            "recipe_type": "101",
            "annotations": [
                {"segment": [10, 20], "id": 0, "sentence": "cut the onions, finely"},
                {"segment": [25, 40], "id": 1, "sentence": "fry the onions in oil"},
                {"segment": [45, 60], "id": 2, "sentence": "add the rice"},
            ],
            "video_url": "https://www.youtube.com/watch?v=xHr8X2Wpmno",
        },
        "V53XmPeyjIU": {
            "duration": 120.0,
            "subset": "validation",
            "recipe_type": "101",
            "annotations": [{"segment": [5, 15], "id": 0, "sentence": "boil water"}],
            "video_url": "https://www.youtube.com/watch?v=V53XmPeyjIU",
        },
    }
}


def test_youcook2_one_clip_per_segment(tmp_path):
    p = tmp_path / "youcookii_annotations_trainval.json"
    p.write_text(json.dumps(YOUCOOK2))
    c = api.load_collection(p)  # default: the validation subset
    assert c.name == "youcook2-validation"
    assert c.video_ids == ("xHr8X2Wpmno_0", "xHr8X2Wpmno_1", "xHr8X2Wpmno_2", "V53XmPeyjIU_0")
    assert c.caption_ids == c.video_ids and c.captions[0] == "cut the onions, finely"
    assert np.array_equal(c.caption_video, np.arange(4))
    train = api.load_collection(_gz(p), split="training")
    assert train.video_ids == ("GLd3aX16zBg_0", "GLd3aX16zBg_1")
    lst = tmp_path / "list.txt"
    lst.write_text("V53XmPeyjIU\nGLd3aX16zBg\n")
    assert api.load_collection(p, split=lst).video_ids == ("V53XmPeyjIU_0", "GLd3aX16zBg_0", "GLd3aX16zBg_1")
    with pytest.raises(InputError, match="no video of subset 'testing'"):
        api.load_collection(p, split="testing")
    bad = json.loads(json.dumps(YOUCOOK2))
    del bad["database"]["V53XmPeyjIU"]["annotations"][0]["segment"]
    p.write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"database\['V53XmPeyjIU'\].annotations\[0\]: 'segment'"):
        api.load_collection(p)


EPIC_HEADER = (
    "narration_id,participant_id,video_id,narration_timestamp,start_timestamp,stop_timestamp,"
    "start_frame,stop_frame,narration,verb,verb_class,noun,noun_class,all_nouns,all_noun_classes"
)
EPIC_ROWS = [
    "P01_11_0,P01,P01_11,00:00:00.560,00:00:00.14,00:00:03.37,8,202,take plate,take,0,plate,2,['plate'],[2]",
    'P01_11_1,P01,P01_11,00:00:04.12,00:00:04.00,00:00:06.10,240,366,"put plate, cup",put,1,plate,2,'
    "\"['plate', 'cup']\",\"[2, 13]\"",
    "P02_03_7,P02,P02_03,00:01:00.00,00:01:00.00,00:01:02.00,3600,3720,take plate,take,0,plate,2,['plate'],[2]",
]


def test_epic_kitchens_clips_csv(tmp_path):
    p = tmp_path / "EPIC_100_retrieval_test.csv"
    p.write_text("\n".join([EPIC_HEADER, *EPIC_ROWS]) + "\n")
    c = api.load_collection(_gz(p))
    assert c.name == "epic-kitchens-100"
    assert c.video_ids == c.caption_ids == ("P01_11_0", "P01_11_1", "P02_03_7")
    assert c.captions == ("take plate", "put plate, cup", "take plate")
    sentences = tmp_path / "EPIC_100_retrieval_test_sentence.csv"
    sentences.write_text("narration_id,narration\nP01_11_0,take plate\nP01_11_1,put plate\n")
    with pytest.raises(InputError, match="sentence file .* give the clips file"):
        api.load_collection(sentences)


LSMDC_LINES = [
    "1004_Juno_00.00.32.849-00.00.35.458\t00.00.32.849\t00.00.35.458\t00.00.32.849\t00.00.35.458\t"
    "SOMEONE stands in the snow, staring at a recliner.",
    "1004_Juno_00.00.35.750-00.00.39.020\t00.00.35.750\t00.00.39.020\t00.00.35.750\t00.00.39.020\t"
    "She drinks from a large jug.",
]


def test_lsmdc_tab_separated(tmp_path):
    p = tmp_path / "LSMDC16_challenge_1000_publictect.csv"
    p.write_text("\n".join(LSMDC_LINES) + "\n")
    assert detect_layout(read_text(p)) == "lsmdc"
    c = api.load_collection(_gz(p))
    assert (
        c.video_ids
        == c.caption_ids
        == ("1004_Juno_00.00.32.849-00.00.35.458", "1004_Juno_00.00.35.750-00.00.39.020")
    )
    assert c.captions[0] == "SOMEONE stands in the snow, staring at a recliner."
    p.write_text(LSMDC_LINES[0] + "\n" + LSMDC_LINES[1].rsplit("\t", 1)[0] + "\n")
    with pytest.raises(InputError, match=r"publictect.csv:2: expected 6 tab-separated fields .* found 5"):
        api.load_collection(p)


def test_generic_jsonl(tmp_path):
    recs = [
        {"caption_id": "q1", "video_id": "vB", "text": "a dog, running"},
        {"caption_id": "q2", "video_id": "vA", "text": "a cat"},
        {"caption_id": "q3", "video_id": "vB", "text": "a dog plays", "extra": 1},
    ]
    p = tmp_path / "coll.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    c = api.load_collection(_gz(p))
    assert c.caption_ids == ("q1", "q2", "q3") and c.video_ids == ("vB", "vA")
    assert c.captions[0] == "a dog, running" and list(c.caption_video) == [0, 1, 0]
    p.write_text(json.dumps(recs[0]) + "\n" + json.dumps({"caption_id": "q9", "video_id": "v"}) + "\n")
    with pytest.raises(InputError, match=r"coll.jsonl:2: 'text' must be a non-empty string"):
        api.load_collection(p)
    p.write_text(json.dumps(recs[0]) + "\n" + json.dumps(recs[0]) + "\n")
    with pytest.raises(InputError, match=r"coll.jsonl:2: duplicate caption id 'q1' \(also on line 1\)"):
        api.load_collection(p)


def test_msrvtt_videodatainfo(tmp_path):
    doc = {
        "videos": [{"video_id": "video7010"}, {"video_id": "video7011"}],
        "sentences": [
            {"caption": "a man talks", "video_id": "video7010", "sen_id": 1},
            {"caption": "a cartoon", "video_id": "video7011", "sen_id": 2},
            {"caption": "a man speaks", "video_id": "video7010", "sen_id": 3},
        ],
    }
    p = tmp_path / "test_videodatainfo.json"
    p.write_text(json.dumps(doc))
    c = api.load_collection(p)
    assert c.caption_ids == ("1", "2", "3") and c.video_ids == ("video7010", "video7011")


def test_caption_csv_any_rows_per_video_and_split(tmp_path):
    p = tmp_path / "new_benchmark.csv"
    p.write_text('video_id,sentence\nv2,"first, quoted"\nv1,b\nv2,c\n')
    c = api.load_collection(p)
    assert c.name == "new_benchmark"
    assert c.caption_ids == ("v2#0", "v1#0", "v2#1") and c.video_ids == ("v2", "v1")
    assert c.captions[0] == "first, quoted"
    split = tmp_path / "split.txt"
    split.write_text("v1\nv2\n")
    s = api.load_collection(p, split=split)
    assert s.video_ids == ("v1", "v2") and Counter(s.caption_video.tolist()) == {1: 2, 0: 1}


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (
            "video_id,sentence\nv1,a man, a dog\n",
            r"x.csv:2: expected 2 fields as in the header, found 3 \(a field",
        ),
        ("key,vid_key,video_id,sentence\nret0,msr0,v0,a dog, a cat\n", r"x.csv:2: expected 4 fields"),
        ("video_id,sentence\nv1,\n", r"x.csv:2: empty video_id or sentence"),
        ("key,vid_key,video_id,sentence\nr0,m,v0,a\nr0,m,v1,b\n", r"x.csv:3: duplicate caption id 'r0'"),
    ],
)
def test_bad_caption_csv(tmp_path, content, needle):
    p = tmp_path / "x.csv"
    p.write_text(content)
    with pytest.raises(InputError, match=needle):
        api.load_collection(p)


@pytest.mark.parametrize(
    ("name", "content"),
    [("x.csv", "a,b\n1,2\n"), ("x.json", "[1, 2]"), ("x.txt", "just some words\n"), ("x.json", '{"a": 3}')],
)
def test_unknown_layout_lists_the_known_ones(tmp_path, name, content):
    p = tmp_path / name
    p.write_text(content)
    with pytest.raises(InputError) as info:
        read_collection(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}: unknown collection layout")
    for desc in LAYOUTS.values():
        assert desc in msg


def test_gz_named_file_that_is_not_gzip(tmp_path):
    p = tmp_path / "coll.csv.gz"
    p.write_text("video_id,sentence\nv,a\n")
    with pytest.raises(InputError, match="named .gz but not gzip data"):
        api.load_collection(p)
