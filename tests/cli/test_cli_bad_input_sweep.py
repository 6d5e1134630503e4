"""Regressions of the adversarial bad-input sweep over every ``fireval`` command.

The founders' standard: bad input gets one line naming the file, line, id or option and what
was expected; exit code 2; no traceback; no output left behind; every input read (and refused)
before a command writes or serves anything. Each case below failed it before its fix (a
traceback, "Aborted!", exit 0 on a nonsensical option, a message without the option's name,
or ``serve`` starting on a bad input); the sweep script and its full table are in the report.

In process (``fireval.cli.main``) for speed; ``serve``'s server is replaced by a function that
fails the test, so a bad input that reaches it fails instead of serving.
"""

from __future__ import annotations

import gzip
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from fireval.cli import main

GARBAGE = bytes((i * 37 + 11) % 256 for i in range(1500))  # not UTF-8 (0x9f at byte 4), not gzip


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    """A 6 x 6 slice of MSR-VTT 1k-A (the JSFusion CSV's first rows), two runs, video captions,
    a proxy relevance file and an empty annotation store."""
    d = tmp_path_factory.mktemp("sweep")
    lines = (shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv").read_text().splitlines(keepends=True)
    (d / "coll.csv").write_text("".join(lines[:7]))
    rng = np.random.default_rng(0)
    for name in ("sims", "sims2"):
        np.save(d / f"{name}.npy", (rng.random((6, 6)) + np.eye(6)).astype(np.float32))
    np.save(d / "emb.npy", rng.random((6, 4)).astype(np.float32))
    import csv
    import json

    rows = list(csv.DictReader(lines[:7]))
    with (d / "vc.jsonl").open("w") as fh:
        for i, r in enumerate(rows):
            for j, text in enumerate((r["sentence"], f"{r['sentence']} again", "a thing")):
                fh.write(
                    json.dumps({"caption_id": f"c{i}.{j}", "video_id": r["video_id"], "text": text}) + "\n"
                )
    (d / "train.txt").write_text("a man is walking\na woman sings\n")
    (d / "vids.txt").write_text(f"{rows[0]['video_id']}\n")
    _ok(["proxies", "build", "-c", str(d / "coll.csv"), "--video-captions", str(d / "vc.jsonl"),
         "-o", str(d / "bow.npz"), "--no-cache"])  # fmt: skip
    _ok(["judgments", "init", "--db", str(d / "store.db")])
    return d


def _ok(args: list[str]) -> None:
    try:
        main(args)
    except SystemExit as exc:
        assert exc.code in (0, None), args


@pytest.fixture
def work(base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "w"
    shutil.copytree(base, d)
    monkeypatch.chdir(d)

    def no_serving(*args: object, **kwargs: object) -> None:
        raise AssertionError("serve started the server on a bad input")

    monkeypatch.setattr("fireval.web.workers.serve", no_serving)
    return d


def _listing(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


R = ["--resamples", "20", "-q"]
EMB = ["evaluate", "-c", "coll.csv", "--text-emb", "emb.npy", "--video-emb", "emb.npy", "-q"]
REPORT = ["report", "sims.npy", "sims2.npy", "-c", "coll.csv", *R, "-o", "r.html"]
BUILD = ["proxies", "build", "-c", "coll.csv", "--video-captions", "vc.jsonl", "-o", "o.npz", "--no-cache"]
AUTO = ["labels", "auto", "-c", "coll.csv", "--video-captions", "vc.jsonl", "-o", "o.npz"]
SERVE = ["serve", "--db", "store.db", "--port", "0"]

# (id, argv, files to create {name: bytes}, what the one error line must contain)
CASES: list[tuple[str, list[str], dict[str, bytes], list[str]]] = [
    # readers: binary, truncated gzip or empty files gave a traceback (or Click's "Aborted!", exit 1)
    ("text-ids binary", [*EMB, "--text-ids", "ids.txt"], {"ids.txt": GARBAGE}, ["ids.txt", "UTF-8"]),
    ("text-emb empty file", [*EMB[:4], "e.npy", *EMB[5:]], {"e.npy": b""}, ["e.npy"]),
    ("train-captions binary", [*REPORT, "--train-captions", "t.txt"], {"t.txt": GARBAGE}, ["t.txt", "UTF-8"]),
    (
        "train-captions truncated gzip",
        [*REPORT, "--train-captions", "t.json.gz"],
        {"t.json.gz": gzip.compress(b'["a man", "a woman"]')[:20]},
        ["t.json.gz"],
    ),
    (
        "train-split binary",
        [*REPORT, "--train-captions", "vc.jsonl", "--train-split", "s.txt"],
        {"s.txt": GARBAGE},
        ["s.txt"],
    ),
    # a split list that selects nothing, or cannot select (plain text names no video), was ignored
    (
        "train-split empty",
        [*REPORT, "--train-captions", "vc.jsonl", "--train-split", "s.txt"],
        {"s.txt": b"\n"},
        ["s.txt", "empty"],
    ),
    (
        "train-split on plain text",
        [*REPORT, "--train-captions", "train.txt", "--train-split", "vids.txt"],
        {},
        ["--train-split"],
    ),
    (
        "train-split unknown videos",
        [*REPORT, "--train-captions", "vc.jsonl", "--train-split", "s.txt"],
        {"s.txt": b"videoZZZ\n"},
        ["s.txt", "none of"],
    ),
    (
        "train-captions JSON of numbers",
        [*REPORT, "--train-captions", "t.json"],
        {"t.json": b"[1, 2]"},
        ["t.json", "item 0"],
    ),
    (
        "verb classes binary",
        [*BUILD, "-p", "syn", "--verb-classes", "v.csv"],
        {"v.csv": GARBAGE},
        ["v.csv", "UTF-8"],
    ),
    ("secret key file binary", [*SERVE, "--secret-key-file", "k.bin"], {"k.bin": GARBAGE}, ["k.bin"]),
    # options out of range: a traceback, or accepted and computed with
    ("budget --n huge", ["budget", "sims.npy", "-c", "coll.csv", *R, "--n", "100000000000"], {}, ["--n"]),
    (
        "release --older-than-minutes huge",
        ["judgments", "release", "--db", "store.db", "--older-than-minutes", "1e300"],
        {},
        ["--older-than-minutes"],
    ),
    ("report --pool-depth 0", [*REPORT, "--pool-depth", "0"], {}, ["--pool-depth"]),
    ("report --pool-depth negative", [*REPORT, "--pool-depth", "-3"], {}, ["--pool-depth"]),
    ("stats --seed negative", ["judgments", "stats", "--db", "store.db", "--seed", "-1"], {}, ["--seed"]),
    ("build --presence 2", [*BUILD, "--presence", "2"], {}, ["--presence"]),
    ("build --presence nan", [*BUILD, "--presence", "nan"], {}, ["--presence"]),
    ("build --jobs 0", [*BUILD, "-j", "0"], {}, ["--jobs"]),
    (
        "ivr --threshold nan",
        ["proxies", "ivr", "sims.npy", "-c", "coll.csv", "-l", "bow.npz", "--threshold", "nan"],
        {},
        ["--threshold"],
    ),
    (
        "ivr --threshold negative",
        ["proxies", "ivr", "sims.npy", "-c", "coll.csv", "-l", "bow.npz", "--threshold", "-1"],
        {},
        ["--threshold"],
    ),
    ("serve --max-body-bytes 0", [*SERVE, "--max-body-bytes", "0"], {}, ["--max-body-bytes"]),
    ("serve --log-level bogus", [*SERVE, "--log-level", "bogus"], {}, ["--log-level", "bogus"]),
    (
        "serve template without {video_id}",
        [*SERVE, "--video-url-template", "http://x/v.mp4"],
        {},
        ["--video-url-template"],
    ),
    ("serve --labels without -c", [*SERVE, "-l", "x.json"], {}, ["--labels", "--collection"]),
    (
        "serve empty secret key file",
        [*SERVE, "--secret-key-file", "k.txt"],
        {"k.txt": b"\n"},
        ["k.txt", "empty"],
    ),
    ("serve missing store", ["serve", "--db", "nosuch.db", "--port", "0"], {}, ["nosuch.db"]),
    # conflicting options: one silently won
    (
        "serve --video-dir and template",
        [*SERVE, "--video-dir", ".", "--video-url-template", "http://x/{video_id}"],
        {},
        ["--video-dir", "--video-url-template"],
    ),
    # the message did not name the option the user gave
    ("report --k 0", [*REPORT, "--k", "0"], {}, ["--k"]),
    ("report --alpha nan", [*REPORT, "--alpha", "nan"], {}, ["--alpha"]),
    ("report --rbo-p 1", [*REPORT, "--rbo-p", "1"], {}, ["--rbo-p"]),
    ("report --level 1", [*REPORT, "--level", "1"], {}, ["--level"]),
    ("report --resamples 0", [*REPORT[:-5], "-q", "-o", "r.html", "--resamples", "0"], {}, ["--resamples"]),
    (
        "compare --resamples 0",
        ["compare", "sims.npy", "sims2.npy", "-c", "coll.csv", "--resamples", "0"],
        {},
        ["--resamples"],
    ),
    (
        "budget --resamples -5",
        ["budget", "sims.npy", "-c", "coll.csv", "--resamples", "-5"],
        {},
        ["--resamples"],
    ),
    ("budget -d both", ["budget", "sims.npy", "-c", "coll.csv", *R, "-d", "both"], {}, ["--direction"]),
    (
        "compare -d both",
        ["compare", "sims.npy", "sims2.npy", "-c", "coll.csv", *R, "-d", "both"],
        {},
        ["--direction"],
    ),
    (
        "pool --double-fraction 1.5",
        ["pool", "sims.npy", "-c", "coll.csv", "-o", "p.jsonl", "--double-fraction", "1.5"],
        {},
        ["--double-fraction"],
    ),
    (
        "pool --budget 0",
        ["pool", "sims.npy", "-c", "coll.csv", "-o", "p.jsonl", "--budget", "0"],
        {},
        ["--budget"],
    ),
    ("auto --percentile 101", [*AUTO, "--percentile", "101"], {}, ["--percentile"]),
    (
        "evaluate --unjudged ,",
        ["evaluate", "sims.npy", "-c", "coll.csv", "-q", "--unjudged", ","],
        {},
        ["--unjudged"],
    ),
    ("evaluate -m ,", ["evaluate", "sims.npy", "-c", "coll.csv", "-q", "-m", ","], {}, ["-m"]),
    # the output, not the exporter's temporary file
    (
        "export into /proc",
        ["judgments", "export", "--db", "store.db", "-o", "/proc/o.json"],
        {},
        ["/proc/o.json"],
    ),
]


@pytest.mark.parametrize(("argv", "files", "needles"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    files: dict[str, bytes],
    needles: list[str],
) -> None:
    for name, content in files.items():
        (work / name).write_bytes(content)
    before = _listing(work)
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    assert info.value.code == 2, err
    assert "Traceback" not in err and "Aborted" not in err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("note:", "warning:"))]
    assert len(lines) == 1 and lines[0].startswith("fireval: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert ".tmp" not in lines[0]
    assert "serving" not in err  # serve: every input is refused before it says it serves
    assert _listing(work) == before  # nothing written, nothing changed


def test_constant_overlap_gives_nan_correlation_without_a_warning() -> None:
    """No training caption overlaps: the rank correlation is undefined. It used to leak scipy's
    ConstantInputWarning (two raw lines) onto the report's stderr."""
    from fireval.analysis.breakdowns import overlap_length_correlation

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = overlap_length_correlation(np.zeros(5), np.arange(5))
    assert np.isnan(res["spearman"]) and np.isnan(res["kendall"]) and res["mean_overlap"] == 0.0
    varied = overlap_length_correlation(np.array([0.0, 0.1, 0.2, 0.4]), np.array([1, 2, 3, 4]))
    assert varied["spearman"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("t.jsonl", b'{"video_id": "v1", "text": "a man"}\n{"video_id": "v2", "text": "a dog"}\n', ["a man"]),
        ("t.csv", b"video_id,sentence\nv1,a man\nv2,a dog\n", ["a man"]),
    ],
)
def test_train_split_selects_videos_in_every_layout_that_names_them(
    tmp_path: Path, name: str, content: bytes, expected: list[str]
) -> None:
    from fireval.report.inputs import read_train_captions

    (tmp_path / name).write_bytes(content)
    (tmp_path / "split.txt").write_text("v1\n")
    assert read_train_captions(tmp_path / name, tmp_path / "split.txt") == expected
    assert len(read_train_captions(tmp_path / name)) == 2


def _h4_exit(args: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(args)
    return int(exc.value.code or 0)


_H4_CSV = "key,vid_key,video_id,sentence\nr0,m0,v0,a man\nr1,m1,v1,a dog\nr2,m2,v2,a cat\n"


def test_split_list_error_names_the_split_file_and_its_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "c.csv").write_text(_H4_CSV)
    (tmp_path / "x.txt").write_text("v0\n\nvideoX\n")
    np.save(tmp_path / "s.npy", np.eye(3))
    rc = _h4_exit(
        [
            "evaluate",
            str(tmp_path / "s.npy"),
            "-c",
            str(tmp_path / "c.csv"),
            "--split",
            str(tmp_path / "x.txt"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert f"{tmp_path / 'x.txt'}:3:" in err and "'videoX'" in err


@pytest.mark.parametrize(
    "tail", ['r3,m3,v0,"a quote\n', 'r3,m3,v0,"a quote\nr4,m4,v1,a bird\nr5,m5,v2,a fish\n']
)
def test_unclosed_quote_in_a_collection_csv_is_named_at_its_line(tmp_path: Path, capsys, tail: str) -> None:
    from fireval.core.errors import InputError
    from fireval.formats.datasets import read_collection

    (tmp_path / "c.csv").write_text(_H4_CSV + tail)
    with pytest.raises(InputError, match="not closed") as exc:
        read_collection(tmp_path / "c.csv")
    assert f"{tmp_path / 'c.csv'}:5" in str(exc.value)


@pytest.mark.parametrize(
    "verb",
    [["status"], ["annotators"], ["release"], ["add-annotator", "bob"], ["stats"]],
)
def test_empty_file_is_not_turned_into_a_store(tmp_path: Path, capsys, verb: list[str]) -> None:
    db = tmp_path / "e.db"
    db.write_bytes(b"")
    rc = _h4_exit(["judgments", *verb, "--db", str(db)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "not an annotation store (empty file)" in err and len(err.splitlines()) == 1
    assert db.stat().st_size == 0
    db.write_bytes(b"junk\n")
    assert _h4_exit(["judgments", *verb, "--db", str(db)]) == 2
    assert db.read_bytes() == b"junk\n"
