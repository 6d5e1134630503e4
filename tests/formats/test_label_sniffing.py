"""Label files are recognised by content, the name only breaking ties (fireval.formats.textio,
fireval.formats.labels.read_labels).

Before: ``.qrels``/``.txt``/``.tsv`` were always read as TREC qrels, so a FIRE JSON (plain or
gzipped) or a label ``.npz`` saved as ``labels.txt`` gave "expected 4 fields in a qrels line" (or
worse); qrels saved as ``.json`` gave "malformed JSON"; a ``.npy`` saved as ``labels.txt`` gave
"not UTF-8 text". Expected results here come from reading the same labels under their own name.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from fireval import api
from fireval.cli import main
from fireval.core import InputError, Judgments
from fireval.formats import read_fire_json, read_labels, read_trec_qrels, write_graded_labels
from fireval.formats.labels import read_labels as read_label_file
from fireval.formats.textio import label_format


def _fire_doc() -> bytes:
    recs = [
        {"label": "relevant", "video_id": "v1", "query": "a dog runs", "dataset": "MSRVTT"},
        {"label": "irrelevant", "video_id": "v2", "query": "a cat sleeps", "dataset": "MSRVTT"},
        {"label": "relevant", "video_id": "v0", "query": "kids play football", "dataset": "MSRVTT"},
    ]
    return json.dumps({"annotations": recs, "disagreements": []}, indent=1).encode()


QRELS = b"c2 0 v1 1\nc4 0 v2 0\nc5 0 v0 1\n"


def _pairs(j: Judgments) -> list[tuple[int, int, float]]:
    return sorted(zip(j.rows.tolist(), j.cols.tolist(), j.grades.tolist(), strict=True))


@pytest.fixture
def expected(tmp_path, tiny):  # type: ignore[no-untyped-def]
    """What each format gives under its own name."""
    (tmp_path / "ref").mkdir()
    fire, qrels, npz = tmp_path / "ref/l.json", tmp_path / "ref/l.qrels", tmp_path / "ref/l.npz"
    fire.write_bytes(_fire_doc())
    qrels.write_bytes(QRELS)
    write_graded_labels(npz, read_labels(qrels, tiny), tiny)
    return {"fire": read_labels(fire, tiny), "qrels": read_labels(qrels, tiny), "npz": read_labels(npz, tiny)}


def _content(kind: str, tmp_path) -> bytes:  # type: ignore[no-untyped-def]
    if kind == "fire":
        return _fire_doc()
    if kind == "fire-gz":
        return gzip.compress(_fire_doc())
    if kind == "fire-bom":
        return b"\xef\xbb\xbf \n\t" + _fire_doc()
    if kind == "qrels":
        return QRELS
    if kind == "qrels-gz":
        return gzip.compress(QRELS)
    return (tmp_path / "ref/l.npz").read_bytes()


CASES = [
    ("fire", "labels.txt"),
    ("fire", "labels.qrels"),
    ("fire", "labels.tsv"),
    ("fire-gz", "labels.txt"),
    ("fire-gz", "labels.qrels.gz"),
    ("fire-bom", "labels.qrels"),
    ("npz", "labels.txt"),
    ("npz", "labels.tsv"),
    ("npz", "labels.json"),
    ("qrels", "labels.json"),
    ("qrels-gz", "labels.json.gz"),
    ("qrels", "labels.npz"),
    ("fire", "labels.npz"),
]


def _kind(content: str) -> str:
    return content.split("-")[0]


@pytest.mark.parametrize(("content", "name"), CASES)
def test_content_wins_over_the_name(tmp_path, tiny, expected, content, name) -> None:
    p = tmp_path / name
    p.write_bytes(_content(content, tmp_path))
    want = _pairs(expected[_kind(content)])
    assert label_format(p) == _kind(content)
    assert _pairs(read_label_file(p, tiny)) == want
    assert _pairs(api.load_labels(p, tiny)) == want  # evaluate/report/pool/serve --labels, labels=
    assert read_label_file(p, tiny).sources == expected[_kind(content)].sources


# formats.read_labels (formats/labels.py) still picks its reader by name for .json and .npz names;
# for every other name it now reads by content, through read_trec_qrels
_QRELS_NAMES = [c for c in CASES if not c[1].startswith(("labels.json", "labels.npz"))]


@pytest.mark.parametrize(("content", "name"), _QRELS_NAMES)
def test_formats_read_labels_and_read_trec_qrels_follow_content(
    tmp_path, tiny, expected, content, name
) -> None:
    """The public readers: a qrels name no longer forces the qrels parser."""
    p = tmp_path / name
    p.write_bytes(_content(content, tmp_path))
    want = _pairs(expected[_kind(content)])
    assert _pairs(read_labels(p, tiny)) == want
    assert _pairs(read_trec_qrels(p, tiny)) == want


def test_fire_warnings_survive_a_qrels_name(tmp_path, tiny) -> None:
    """Read by content, a FIRE file keeps its import warnings (text shared by c0 and c3)."""
    doc = {"annotations": [{"label": "relevant", "video_id": "v2", "query": "a man is cooking"}]}
    p = tmp_path / "labels.txt"
    p.write_text(json.dumps(doc))
    j = api.load_labels(p, tiny)
    assert _pairs(j) == [(0, 2, 1.0), (3, 2, 1.0)]
    assert len(j.warnings) == 1 and "several captions" in j.warnings[0] and str(p) in j.warnings[0]


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"\x93NUMPY\x01\x00v\x00{'descr': '<f8'", "NumPy .npy array"),
        (b"SQLite format 3\x00" + bytes(84), "SQLite database"),
        (b"\x80\x04\x95\x00", "pickle"),
        (b"ab\x00\x01\x02cdefghijklmnop", "binary data"),
        (gzip.compress(b"PK\x03\x04" + bytes(40)), "gzip-compressed zip archive"),
    ],
    ids=["npy", "sqlite", "pickle", "binary", "gz-zip"],
)
def test_other_content_is_a_one_line_error(tmp_path, tiny, data, what) -> None:
    p = tmp_path / "labels.txt"
    p.write_bytes(data)
    readers = [read_label_file, read_trec_qrels]
    if what != "SQLite database":  # api.load_labels opens an SQLite file as an annotation store
        readers.append(api.load_labels)
    for read in readers:
        with pytest.raises(InputError) as info:
            read(p, tiny)
        msg = str(info.value)
        assert "\n" not in msg and str(p) in msg and what in msg, msg
        assert "expected FIRE JSON, TREC qrels text" in msg


@pytest.mark.parametrize("name", ["labels.txt", "labels.json", "labels.qrels.gz", "labels"])
def test_empty_content_falls_back_to_the_name_and_says_empty(tmp_path, tiny, name) -> None:
    p = tmp_path / name
    p.write_bytes(gzip.compress(b"  \n") if name.endswith(".gz") else b" \n\n")
    assert label_format(p) == ("fire" if name == "labels.json" else "qrels")
    with pytest.raises(InputError, match="file is empty"):
        read_label_file(p, tiny)


def test_read_fire_json_names_what_the_content_is(tmp_path, tiny) -> None:
    p = tmp_path / "labels.json"
    p.write_bytes(QRELS)
    with pytest.raises(InputError, match="content is TREC qrels text, not FIRE JSON") as info:
        read_fire_json(p, tiny)
    assert str(p) in str(info.value)


def test_cli_evaluate_reads_fire_json_saved_as_txt(tmp_path, capsys) -> None:
    """`fireval evaluate --labels labels.txt` (FIRE JSON inside) prints what `--labels fire.json` prints."""
    texts = [f"caption number {i} x{i}" for i in range(8)]
    csv = tmp_path / "coll.csv"
    csv.write_text(
        "key,vid_key,video_id,sentence\n" + "".join(f"k{i},v{i},v{i},{t}\n" for i, t in enumerate(texts))
    )
    recs = [{"label": "relevant", "video_id": f"v{(i + 1) % 8}", "query": t} for i, t in enumerate(texts)]
    doc = json.dumps({"annotations": recs})
    scores = np.random.default_rng(3).normal(size=(8, 8))
    run = tmp_path / "run.npy"
    np.save(run, scores)
    outs = []
    for name in ("fire.json", "labels.txt", "labels.qrels"):
        p = tmp_path / name
        p.write_text(doc)
        with pytest.raises(SystemExit) as info:
            main(
                [
                    "evaluate",
                    str(run),
                    "-c",
                    str(csv),
                    "-l",
                    str(p),
                    "--no-checks",
                    "--json",
                    str(tmp_path / f"{name}.out"),
                ]
            )
        cap = capsys.readouterr()
        assert info.value.code in (0, None), cap.err
        out = json.loads((tmp_path / f"{name}.out").read_text())
        outs.append(json.dumps(out, sort_keys=True).replace(name, "LABELS"))
    assert outs[0] == outs[1] == outs[2]


def test_cli_evaluate_refuses_a_npy_given_as_labels_in_one_line(tmp_path, capsys) -> None:
    run = tmp_path / "run.npy"
    np.save(run, np.eye(1000, dtype=np.float32))
    bad = tmp_path / "labels.txt"
    np.save(tmp_path / "x.npy", np.eye(3))
    bad.write_bytes((tmp_path / "x.npy").read_bytes())
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(run), "--labels", str(bad), "-q", "--no-checks"])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2
    assert "Traceback" not in err and str(bad) in err and "NumPy .npy array" in err, err


def test_cli_judgments_stats_goes_by_content(tmp_path, capsys) -> None:
    """`fireval judgments stats`: qrels saved as .json get a one-line error saying what they are;
    a gzipped FIRE JSON saved as .txt is read."""
    bad = tmp_path / "votes.json"
    bad.write_bytes(QRELS)
    with pytest.raises(SystemExit) as info:
        main(["judgments", "stats", str(bad)])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and "\n" not in err
    assert str(bad) in err and "TREC qrels text, not FIRE JSON" in err, err
    recs = [
        {"label": "relevant", "video_id": f"v{i}", "query": f"q{i}", "annotator_ids": [1, 2],
         "annotator_labels": ["relevant", "relevant" if i % 3 else "irrelevant"]}
        for i in range(40)
    ]  # fmt: skip
    good = tmp_path / "votes.txt"
    good.write_bytes(gzip.compress(json.dumps({"annotations": recs}).encode()))
    out = tmp_path / "stats.json"
    with pytest.raises(SystemExit) as info:
        main(["judgments", "stats", str(good), "--json", str(out), "--resamples", "50"])
    assert info.value.code in (0, None), capsys.readouterr().err
    assert json.loads(out.read_text())


@pytest.mark.parametrize("verb", [["proxies", "stats"], ["proxies", "random"]])
def test_cli_proxies_name_what_a_non_npz_label_file_is(tmp_path, capsys, verb) -> None:
    """Before: "cannot read proxy relevance .npz: This file contains pickled (object) data..."."""
    p = tmp_path / "proxy.npz"
    p.write_bytes(_fire_doc())
    with pytest.raises(SystemExit) as info:
        main([*verb, "-l", str(p)])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and "\n" not in err
    assert "content is FIRE JSON, not a proxy relevance .npz" in err and str(p) in err, err
