"""`fireval check` and the checks inside evaluate/compare/pool/report, through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIREVAL = [sys.executable, "-m", "fireval"]


def run_cli(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [*FIREVAL, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def msrvtt(shared_data: Path) -> dict[str, Path]:
    d = shared_data / "msrvtt"
    return {
        "csv": d / "MSRVTT_JSFUSION_test.csv",
        "clip4clip": d / "sims" / "clip4clip_msrvtt.npy",
        "GRAM": d / "sims" / "GRAM_msrvtt.npy",
        "VAST": d / "sims" / "VAST_msrvtt.npy",
    }


def test_check_exit_codes_and_json_schema(msrvtt, tmp_path):
    out = tmp_path / "checks.json"
    r = run_cli(
        "check",
        msrvtt["clip4clip"],
        msrvtt["GRAM"],
        f"V={msrvtt['VAST']}",
        "-c",
        msrvtt["csv"],
        "--json",
        out,
    )
    assert r.returncode == 1, r.stderr
    data = json.loads(out.read_text())
    assert set(data) == {"runs", "pairs", "units"}  # every JSON says its units (issue 24)
    assert list(data["runs"]) == ["clip4clip_msrvtt", "GRAM_msrvtt", "V"]  # stems, NAME=path as in pool
    for name, want in (("clip4clip_msrvtt", "pass"), ("GRAM_msrvtt", "fail"), ("V", "fail")):
        run = data["runs"][name]
        assert set(run) >= {"alignment", "truncation", "orientation"}
        assert run["alignment"]["status"] == want
        assert run["alignment"]["status"] in ("pass", "fail", "inconclusive")
        assert {"t2v", "v2t"} <= set(run["alignment"]["directions"])
    assert data["runs"]["GRAM_msrvtt"]["truncation"]["directions"]["t2v"]["k"] == 50
    assert data["runs"]["clip4clip_msrvtt"]["truncation"]["directions"]["t2v"]["truncated"] is False
    pairs = {(p["a"], p["b"]): p["status"] for p in data["pairs"]}
    assert pairs == {
        ("clip4clip_msrvtt", "GRAM_msrvtt"): "fail",
        ("clip4clip_msrvtt", "V"): "fail",
        ("GRAM_msrvtt", "V"): "pass",
    }
    assert "GRAM_msrvtt\talignment\tfail" in r.stdout


def test_check_passes_clip4clip_with_exit_0(msrvtt):
    r = run_cli("check", msrvtt["clip4clip"], "-c", msrvtt["csv"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "alignment\tpass" in r.stdout


def test_check_list_and_user_errors(msrvtt, tmp_path):
    r = run_cli("check", "--list")
    assert r.returncode == 0
    for name in ("alignment", "agreement", "truncation", "orientation"):
        assert name in r.stdout
    for args, needle in (
        ((msrvtt["clip4clip"],), "--collection"),
        ((tmp_path / "missing.npy", "-c", msrvtt["csv"]), "missing.npy"),
        ((), "at least one run"),
        ((msrvtt["clip4clip"], "-c", msrvtt["csv"], "--k", "0"), "--k"),
    ):
        r = run_cli("check", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert needle in r.stderr and "Traceback" not in r.stderr


def test_evaluate_warns_and_marks_truncated_values(msrvtt, tmp_path):
    out = tmp_path / "ev.json"
    r = run_cli(
        "evaluate", msrvtt["GRAM"], "-c", msrvtt["csv"], "-d", "t2v", "-m", "C@1,C@100,MnR", "--json", out
    )
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: GRAM_msrvtt")]
    assert any("alignment check fail" in ln for ln in lines)
    assert any("truncation check warn" in ln and "top 50" in ln for ln in lines)
    assert "†" in r.stdout  # C@100 and MnR of a run cut at 50
    assert json.loads(out.read_text())["checks"]["runs"]["GRAM_msrvtt"]["alignment"]["status"] == "fail"
    quiet = run_cli("evaluate", msrvtt["GRAM"], "-c", msrvtt["csv"], "-d", "t2v", "-q", "--no-checks")
    assert quiet.returncode == 0 and "check" not in quiet.stderr


def _row_cells(stdout: str, title: str, run: str) -> list[str]:
    """The cells of ``run``'s first row in the table titled ``title`` (a rich table on stdout)."""
    lines = stdout.split(title, 1)[1].splitlines()
    header = next(ln for ln in lines if ln.split()[:2] == ["run", "labels"])
    row = next(ln for ln in lines if ln.split() and ln.split()[0] == run)
    return dict(zip(header.split(), row.split(), strict=True))


def test_evaluate_marks_each_direction_by_its_own_cut(msrvtt, tmp_path):
    # GRAM keeps the top 50 of each row: t2v is cut at 50 documents, v2t (its columns) at fewer,
    # so C@50 is an expectation over the tail in v2t only. Before, both tables used the t2v cut.
    out = tmp_path / "ev.json"
    r = run_cli("evaluate", msrvtt["GRAM"], "-c", msrvtt["csv"], "-m", "C@1,C@50,C@100,MnR", "--json", out)
    assert r.returncode == 0, r.stderr
    cut = json.loads(out.read_text())["checks"]["runs"]["GRAM_msrvtt"]["truncation"]["directions"]
    assert cut["t2v"]["k"] == 50 and cut["v2t"]["truncated"] and cut["v2t"]["k"] < 50
    t2v = _row_cells(r.stdout, "t2v: ", "GRAM_msrvtt")
    v2t = _row_cells(r.stdout, "v2t: ", "GRAM_msrvtt")
    assert not t2v["C@50"].endswith("†") and v2t["C@50"].endswith("†")
    for cells in (t2v, v2t):
        assert not cells["C@1"].endswith("†")
        assert cells["C@100"].endswith("†") and cells["MnR"].endswith("†")


def test_clean_run_gets_no_warning(msrvtt):
    r = run_cli("evaluate", msrvtt["clip4clip"], "-c", msrvtt["csv"], "-d", "t2v", "-q")
    assert r.returncode == 0 and "warning:" not in r.stderr


def test_compare_marks_misaligned_pairs(msrvtt, tmp_path):
    out = tmp_path / "cmp.json"
    r = run_cli(
        "compare",
        msrvtt["clip4clip"],
        msrvtt["GRAM"],
        "-c",
        msrvtt["csv"],
        "--resamples",
        "200",
        "--json",
        out,
    )
    assert r.returncode == 0, r.stderr
    assert "warning: clip4clip_msrvtt vs GRAM_msrvtt: agreement check fail" in r.stderr
    assert "! clip4clip_msrvtt vs GRAM_msrvtt: not comparable per query" in r.stdout
    assert all(row["misaligned"] for row in json.loads(out.read_text())["comparisons"])
    ok = run_cli(
        "compare", msrvtt["GRAM"], msrvtt["VAST"], "-c", msrvtt["csv"], "--resamples", "200", "-m", "C@1"
    )
    assert ok.returncode == 0 and "not comparable" not in ok.stdout  # same order: comparable


def test_pool_refuses_misaligned_runs_unless_allowed(msrvtt, tmp_path):
    """Issue 24 item 2: a run failing the alignment check would send wrong pairs to annotators."""
    args = [
        "pool",
        msrvtt["clip4clip"],
        f"G={msrvtt['GRAM']}",
        "-c",
        msrvtt["csv"],
        "-o",
        tmp_path / "p.jsonl",
    ]
    refused = run_cli(*args, "--max-queries", "50")
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert "Traceback" not in refused.stderr and not (tmp_path / "p.jsonl").exists()
    errors = [ln for ln in refused.stderr.splitlines() if "error" in ln]
    assert (
        len(errors) == 1 and "G fails the alignment check" in errors[0] and "--allow-misaligned" in errors[0]
    )
    assert "clip4clip_msrvtt fail" not in errors[0]  # only the misaligned run is named
    r = run_cli(*args, "--max-queries", "50", "--allow-misaligned")
    assert r.returncode == 0, r.stderr
    assert "warning: G: alignment check fail" in r.stderr
    assert "! G: its items pair captions with the wrong videos" in r.stdout
    assert "! clip4clip_msrvtt vs G" in r.stdout
    assert (tmp_path / "p.jsonl").exists()


def test_report_opens_with_input_checks(msrvtt, tmp_path):
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    r = run_cli(
        "report",
        msrvtt["clip4clip"],
        msrvtt["GRAM"],
        "-c",
        msrvtt["csv"],
        "--resamples",
        "100",
        "-o",
        html,
        "--markdown",
        md,
    )
    assert r.returncode == 0, r.stderr
    text = md.read_text()
    first = text.index("## Input checks")
    assert first < text.index("### ")  # before every table of the report
    assert "| GRAM_msrvtt | alignment | **fail** |" in text
    assert "Not comparable per query" in text and "clip4clip_msrvtt vs GRAM_msrvtt" in text
    page = html.read_text()
    assert page.index('id="input-checks"') < page.index("<h2>Tables</h2>")
    off = run_cli(
        "report", msrvtt["clip4clip"], "-c", msrvtt["csv"], "--resamples", "100", "-o", html, "--no-checks"
    )
    assert off.returncode == 0 and 'id="input-checks"' not in html.read_text()
