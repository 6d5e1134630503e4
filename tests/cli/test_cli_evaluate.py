"""`fireval evaluate` end to end through the real entry point (subprocess): values, outputs, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

FIREVAL = [sys.executable, "-m", "fireval"]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [*FIREVAL, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def jsfusion(shared_data: Path) -> Path:
    return shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"


def test_clip4clip_reproduces_published_recall(shared_data: Path, jsfusion: Path, tmp_path: Path):
    out = tmp_path / "res.json"
    pq = tmp_path / "pq.tsv"
    sims = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    r = run_cli(
        "evaluate",
        sims,
        "-c",
        jsfusion,
        "--direction",
        "t2v",
        "--json",
        out,
        "--per-query",
        pq,
        "-m",
        "C@1,C@5,C@10,MdR",
    )
    assert r.returncode == 0, r.stderr
    assert "C@1" in r.stdout and "R@K" in r.stdout
    res = json.loads(out.read_text())
    vals = {row["measure"]: row["value"] for row in res["results"] if row["direction"] == "t2v"}
    assert round(100 * vals["C@1"], 1) == 34.4
    assert round(100 * vals["C@5"], 1) == 55.1
    assert round(100 * vals["C@10"], 1) == 65.0
    lines = pq.read_text().splitlines()
    assert len(lines) == 1 + 4 * 1000  # header + 4 measures x 1000 queries


def test_fire_labels_raise_scores_and_show_delta(
    shared_data: Path, jsfusion: Path, tmp_path: Path, write_fire_json, fire_annotation
):
    """Human labels marking extra positives can only raise C@K; the table shows a delta row."""
    import csv

    rows = list(csv.DictReader(jsfusion.open()))
    sims = np.load(shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy")
    top1 = sims.argmax(axis=1)
    annotations = [
        fire_annotation(rows[q]["sentence"], rows[int(top1[q])]["video_id"])
        for q in range(0, 1000, 3)
        if int(top1[q]) != q
    ]
    fire_path = write_fire_json(annotations)
    out = tmp_path / "res.json"
    r = run_cli(
        "evaluate",
        shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy",
        "-c",
        jsfusion,
        "-l",
        fire_path,
        "--json",
        out,
        "-m",
        "C@1,C@5",
    )
    assert r.returncode == 0, r.stderr
    assert "Δ: each label set minus original" in r.stdout
    res = json.loads(out.read_text())["results"]
    val = {(x["labels"], x["direction"], x["measure"]): x["value"] for x in res}
    assert val[("augmented", "t2v", "C@1")] > val[("original", "t2v", "C@1")] + 0.2


def write_csv(path: Path, rows: list[tuple[str, str]]) -> None:
    lines = ["key,vid_key,video_id,sentence"]
    lines += [f"ret{i},msr{i},{v},{s}" for i, (v, s) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture()
def toy(tmp_path: Path) -> tuple[Path, Path]:
    csv = tmp_path / "toy.csv"
    write_csv(csv, [("video1", "a man sings"), ("video2", "a dog runs"), ("video3", "a cat sleeps")])
    sims = tmp_path / "sims.npy"
    np.save(sims, np.eye(3, dtype=np.float32))
    return csv, sims


def assert_user_error(r: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    for f in fragments:
        assert f in r.stderr, (f, r.stderr)


def test_toy_ok(toy):
    csv, sims = toy
    r = run_cli("evaluate", sims, "-c", csv, "-q")
    assert r.returncode == 0, r.stderr


def test_shape_mismatch(toy, tmp_path):
    csv, _ = toy
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((3, 4), np.float32))
    out = tmp_path / "out.json"
    assert_user_error(run_cli("evaluate", bad, "-c", csv, "--json", out), "bad.npy")
    assert not out.exists()


def test_nan_scores(toy, tmp_path):
    csv, _ = toy
    bad = tmp_path / "nan.npy"
    m = np.eye(3, dtype=np.float32)
    m[1, 2] = np.nan
    np.save(bad, m)
    out = tmp_path / "out.json"
    assert_user_error(run_cli("evaluate", bad, "-c", csv, "--json", out), "nan.npy", "NaN")
    assert not out.exists()


def test_neg_inf_is_allowed(toy, tmp_path):
    csv, _ = toy
    m = np.eye(3, dtype=np.float32)
    m[0, 1] = -np.inf
    p = tmp_path / "inf.npy"
    np.save(p, m)
    assert run_cli("evaluate", p, "-c", csv, "-q").returncode == 0


def test_duplicate_ids(tmp_path, toy):
    _, sims = toy
    csv = tmp_path / "dup.csv"
    csv.write_text("key,vid_key,video_id,sentence\nret0,m,video1,a\nret0,m,video2,b\nret2,m,video3,c\n")
    assert_user_error(run_cli("evaluate", sims, "-c", csv), "dup.csv", "ret0")


def test_unknown_ids_in_labels(toy, tmp_path):
    csv, sims = toy
    q = tmp_path / "labels.qrels"
    q.write_text("ret0 0 video1 1\nret1 0 video99 1\n")
    assert_user_error(run_cli("evaluate", sims, "-c", csv, "-l", q), "labels.qrels", "video99")


def test_empty_files(toy, tmp_path):
    csv, sims = toy
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert_user_error(run_cli("evaluate", sims, "-c", empty), "empty.csv")
    e2 = tmp_path / "empty.qrels"
    e2.write_text("")
    assert_user_error(run_cli("evaluate", sims, "-c", csv, "-l", e2), "empty.qrels")


def test_malformed_fire_json(toy, tmp_path):
    csv, sims = toy
    f = tmp_path / "fire.json"
    f.write_text('{"annotations": [{"label": "relevant"}], "disagreements": []}')
    assert_user_error(run_cli("evaluate", sims, "-c", csv, "-l", f), "fire.json")
    f.write_text("{not json")
    assert_user_error(run_cli("evaluate", sims, "-c", csv, "-l", f), "fire.json")


def test_unknown_measure_and_missing_file(toy):
    csv, sims = toy
    assert_user_error(run_cli("evaluate", sims, "-c", csv, "-m", "Bogus@3"), "Bogus")
    assert_user_error(run_cli("evaluate", "/nonexistent/x.npy", "-c", csv), "x.npy")
