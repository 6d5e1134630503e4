"""``fireval report``, ``compare`` and ``budget`` through the CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fireval.cli import main

pytestmark = pytest.mark.shared


def _run(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _common(shared: Path) -> list[str]:
    d = shared / "msrvtt"
    return [
        str(d / "sims" / "GRAM_msrvtt.npy"),
        str(d / "sims" / "VAST_msrvtt.npy"),
        "-c",
        str(d / "MSRVTT_JSFUSION_test.csv"),
    ]


def test_report_writes_three_files(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = tmp_path / "train.txt"
    train.write_text("a man is playing a guitar\na woman is cooking in a kitchen\npeople are dancing\n")
    code = _run(
        [
            "report",
            *_common(shared_data),
            "-o",
            str(tmp_path / "r.html"),
            "--markdown",
            str(tmp_path / "r.md"),
            "--latex",
            str(tmp_path / "r.tex"),
            "--resamples",
            "500",
            "--measures",
            "C@1,C@10",
            "--train-captions",
            str(train),
        ]
    )
    assert code == 0, capsys.readouterr()
    md = (tmp_path / "r.md").read_text()
    assert "| GRAM_msrvtt | C@1 | 53.1 |" in md and "| VAST_msrvtt | C@10 | 74.0 |" in md
    assert "Train–test caption overlap" in md
    # 1k-A: one instance positive per query, nothing judged irrelevant
    assert "| original | instance | 1000 | 0 |" in md.split("### Label sources")[1].split("###")[0]
    assert (tmp_path / "r.tex").read_text().count(r"\begin{table}") >= 5
    assert (tmp_path / "r.html").read_text().count("data:image/png;base64,") >= 6


def test_compare_and_budget(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(
        [
            "compare",
            *_common(shared_data),
            "--resamples",
            "2000",
            "-m",
            "C@1",
            "--json",
            str(tmp_path / "c.json"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "C@1\tGRAM_msrvtt\tVAST_msrvtt\t+3.7" in out
    rows = json.loads((tmp_path / "c.json").read_text())
    assert rows[0]["p_randomisation"] < 0.01
    code = _run(["budget", *_common(shared_data), "-m", "C@1", "--delta", "0.05", "--resamples", "300"])
    out = capsys.readouterr().out
    assert code == 0 and "recommended n for delta=0.05" in out


def test_user_errors_exit_2(shared_data: Path, tmp_path: Path) -> None:
    d = shared_data / "msrvtt"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fireval",
            "report",
            str(tmp_path / "missing.npy"),
            "-c",
            str(d / "MSRVTT_JSFUSION_test.csv"),
            "-o",
            str(tmp_path / "r.html"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "missing.npy" in proc.stderr and "Traceback" not in proc.stderr
    assert (
        _run(["compare", str(d / "sims" / "GRAM_msrvtt.npy"), "-c", str(d / "MSRVTT_JSFUSION_test.csv")]) == 2
    )
    bad = tmp_path / "train.csv"
    bad.write_text("video_id\nvideo1\n")
    assert (
        _run(["report", *_common(shared_data), "-o", str(tmp_path / "x.html"), "--train-captions", str(bad)])
        == 2
    )
    assert not (tmp_path / "x.html").exists()
    assert (
        _run(
            ["report", *_common(shared_data), "-o", str(tmp_path / "y.html"), "--pool-models", "nosuchrun=CE"]
        )
        == 2
    )
    assert not (tmp_path / "y.html").exists()


def test_pool_models_changes_pool_bias(
    shared_data: Path, tmp_path: Path, write_fire_json, fire_annotation
) -> None:
    """--pool-models takes pool provenance from the labels' `models` field instead of the runs' top-k.

    Every human label below says only GRAM proposed it, although the pairs come from VAST's top 1;
    leaving VAST out then keeps them (with --pool-models) or drops the ones VAST alone proposed
    (without), so the two pool-bias tables must differ.
    """
    import csv

    import numpy as np

    d = shared_data / "msrvtt"
    rows = list(csv.DictReader((d / "MSRVTT_JSFUSION_test.csv").open()))
    vast = np.load(d / "sims" / "VAST_msrvtt.npy")
    annotations = [
        fire_annotation(rows[q]["sentence"], rows[int(vast[q].argmax())]["video_id"], models=["GRAM"])
        for q in range(300)
        if int(vast[q].argmax()) != q
    ]
    fire_path = write_fire_json(annotations)
    base = ["report", *_common(shared_data), "-l", str(fire_path), "--resamples", "200", "-o"]
    assert _run([*base, str(tmp_path / "a.html"), "--markdown", str(tmp_path / "a.md")]) == 0
    assert (
        _run(
            [
                *base,
                str(tmp_path / "b.html"),
                "--markdown",
                str(tmp_path / "b.md"),
                "--pool-models",
                "GRAM_msrvtt=GRAM,VAST_msrvtt=VAST",
            ]
        )
        == 0
    )
    a, b = (tmp_path / "a.md").read_text(), (tmp_path / "b.md").read_text()

    def pool_bias(md: str) -> str:
        start = md.lower().index("pool bias")
        return md[start : start + 2000]

    assert pool_bias(a) != pool_bias(b)
