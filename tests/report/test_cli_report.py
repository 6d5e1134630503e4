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
    """Paper layout with TVR names, both directions, figures, and FIRE Fig. 8 from MSVD's training captions."""
    msvd = shared_data / "msvd"
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
            "--figures",
            str(tmp_path / "figs"),
            "--names",
            "tvr",
            "-d",
            "both",
            "--resamples",
            "500",
            "--measures",
            "R@1,C@10,MnR",
            "--train-captions",
            str(msvd / "captions_msvd.json"),
            "--train-split",
            str(msvd / "train_list.txt"),
            "-q",
        ]
    )
    assert code == 0, capsys.readouterr()
    md = (tmp_path / "r.md").read_text()
    paper = md.split("### Results")[1].split("###")[0]
    head = next(ln for ln in paper.splitlines() if ln.startswith("| run"))
    assert head == ("| run | t2v R@1 | t2v R@10 | t2v MnR↓ | v2t R@1 | v2t R@10 | v2t MnR↓ |")
    # 1k-A, instance labels: GRAM 53.1 / 82.4 (t2v) is the best R@K, VAST significantly worse
    assert "| GRAM_msrvtt | **53.1** | **82.4** |" in paper
    assert "| VAST_msrvtt | 49.4† | 74.0† |" in paper
    assert "C@1" not in md and "C@10" not in md
    assert "Train–test caption overlap" in md and "train–test caption similarity" in md
    assert "Shortest, median and longest captions" in md
    # 1k-A: one instance positive per query, nothing judged irrelevant
    assert "| original | instance | 1000 | 0 |" in md.split("### Label sources")[1].split("###")[0]
    tex = (tmp_path / "r.tex").read_text()
    assert tex.count(r"\begin{tabular}") >= 8 and r"\multicolumn{3}{c}{v2t}" in tex
    html = (tmp_path / "r.html").read_text()
    assert html.count("data:image/svg+xml;base64,") >= 8 and "image/png" not in html  # vector figures
    assert html.count('<p class="empty">') == 2  # one label set; one positive per caption
    pdfs = sorted(p.name for p in (tmp_path / "figs").glob("*.pdf"))
    assert "fig-train-similarity-1col.pdf" in pdfs and "fig-correctness-chara-2col.pdf" in pdfs
    assert (tmp_path / "figs" / "fig-positives.txt").exists()
    out = capsys.readouterr()
    assert "figure files" in out.out and "\r" not in out.err  # -q: no progress bar


def test_version_and_short_help(capsys: pytest.CaptureFixture[str]) -> None:
    from fireval import __version__

    assert _run(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"fireval {__version__}"
    assert _run(["-h"]) == 0 and "Usage" in capsys.readouterr().out
    assert _run(["report", "-h"]) == 0
    assert "--names" in capsys.readouterr().out


def test_progress_bar_is_silent_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from fireval.cli.common import progress_bar

    with progress_bar("x") as cb:  # pytest captures stderr: not a terminal
        assert cb is None
    with progress_bar("x", disable=True) as cb:
        assert cb is None
    assert capsys.readouterr().err == ""


def test_compare_and_budget(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the tab-separated form (at 80 columns it is split in blocks)
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
    assert "C@1\tGRAM_msrvtt\tVAST_msrvtt\t+3.7" in out and "percentage points" in out
    rows = json.loads((tmp_path / "c.json").read_text())["comparisons"]
    assert rows[0]["p_randomisation"] < 0.01 and rows[0]["unit"] == "fraction"
    assert _run(["compare", *_common(shared_data), "--resamples", "200", "-m", "R@1", "--names", "tvr"]) == 0
    assert "R@1\tGRAM_msrvtt\tVAST_msrvtt\t+3.7" in capsys.readouterr().out
    # -m R@1 is C@1 whatever the output names; --names ir prints C@1
    assert _run(["compare", *_common(shared_data), "--resamples", "200", "-m", "R@1", "--names", "ir"]) == 0
    assert "C@1\tGRAM_msrvtt\tVAST_msrvtt\t+3.7" in capsys.readouterr().out
    assert _run(["compare", *_common(shared_data), "-m", "C@1", "--names", "trec"]) == 2
    code = _run(["budget", *_common(shared_data), "-m", "C@1", "--delta", "0.05", "--resamples", "300"])
    out = capsys.readouterr().out
    assert code == 0 and "recommended n for delta=0.05 (5 points)" in out
    code = _run(
        ["budget", *_common(shared_data), "-m", "R@1,MnR", "--n", "250,500,1000", "--names", "tvr", "-q"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "10000 resamples per n" in out
    got = [ln.split("\t") for ln in out.splitlines() if ln.startswith("GRAM_msrvtt\tR@1\t")]
    assert [g[2] for g in got[:3]] == ["250", "500", "1000"]
    errs = [float(g[3]) for g in got[:3]]
    assert errs[0] > errs[1] > errs[2] > 0
    # C@1 = 0.531 over 1000 queries: the p95 error at n is about 1.96 * sqrt(p (1 - p) / n) points
    for n, e in zip((250, 500, 1000), errs, strict=True):
        assert e == pytest.approx(196 * (0.531 * 0.469 / n) ** 0.5, rel=0.12)
    assert sum(1 for ln in out.splitlines() if ln.startswith("GRAM_msrvtt\tMnR\t")) == 3
    assert _run(["budget", *_common(shared_data), "--n", "500,x"]) == 2


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
