"""``--min-grade G`` (trec_eval's ``-l``) in evaluate, compare and report, and the incomplete-
judgment measures through the CLI: values equal the library's, bad values exit 2 in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fireval.cli
from fireval import api
from fireval.metrics import evaluate as metrics_evaluate


def run_main(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = 0
    try:
        fireval.cli.main([str(a) for a in argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def graded(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """Two runs and graded TREC qrels (grades 0..3, the ground truth 3) for 300 captions of 1k-A."""
    sims = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    vast = shared_data / "msrvtt" / "sims" / "VAST_msrvtt.npy"
    coll = api.load_collection("msrvtt-1ka")
    s = np.load(sims)
    rng = np.random.default_rng(7)
    lines = []
    for q in range(300):
        top = np.argsort(-s[q])[:8]
        for v in top:
            if int(v) != q:
                lines.append(f"{coll.caption_ids[q]} 0 {coll.video_ids[int(v)]} {int(rng.integers(0, 3))}")
        lines.append(f"{coll.caption_ids[q]} 0 {coll.video_ids[q]} 3")
    path = tmp_path_factory.mktemp("grades") / "graded.qrels"
    path.write_text("\n".join(lines) + "\n")
    return sims, vast, path


def test_evaluate_min_grade_values(capsys, graded, tmp_path: Path) -> None:
    sims, _, qrels = graded
    out = tmp_path / "res.json"
    ms = "C@1,P@5,AP,nDCG@10,bpref,infAP,infNDCG@10"
    code, _, err = run_main(
        capsys, "evaluate", sims, "-c", "msrvtt-1ka", "--no-instance", "-l", qrels, "-d", "t2v",
        "--no-checks", "-q", "--min-grade", "2", "-m", ms, "--json", out,
    )  # fmt: skip
    assert code == 0, err
    got = {r["measure"]: r["value"] for r in json.loads(out.read_text())["results"]}
    coll = api.load_collection("msrvtt-1ka")
    run = api.load_run(sims, coll)
    judg = api.load_labels(str(qrels), coll)
    ev = metrics_evaluate(run, judg, measures=ms, directions="t2v", min_grade=2)
    for m in ms.split(","):
        assert got[m] == pytest.approx(ev.value(m), abs=1e-9), m
    # binary measures see grade >= 2 only; the graded ones keep every grade
    binar = metrics_evaluate(run, judg.binarised(2), measures="C@1,bpref", directions="t2v")
    plain = metrics_evaluate(run, judg, measures="C@1,nDCG@10", directions="t2v")
    assert got["C@1"] == pytest.approx(binar.value("C@1")) and got["C@1"] != plain.value("C@1")
    assert got["bpref"] == pytest.approx(binar.value("bpref"))
    assert got["nDCG@10"] == pytest.approx(plain.value("nDCG@10")) == got["infNDCG@10"]


def test_compare_and_report_take_min_grade(capsys, graded, tmp_path: Path) -> None:
    sims, vast, qrels = graded
    out = tmp_path / "cmp.json"
    code, stdout, err = run_main(
        capsys, "compare", sims, vast, "-c", "msrvtt-1ka", "-l", qrels, "--no-checks",
        "-q", "--min-grade", "2", "-m", "C@1,bpref", "--resamples", "200", "--json", out,
    )  # fmt: skip
    assert code == 0, err
    rows = {r["measure"]: r for r in json.loads(out.read_text())["comparisons"]}
    coll = api.load_collection("msrvtt-1ka")
    judg = api.label_sets(coll, [str(qrels)])["augmented"]  # compare's labels: the most augmented set
    a = metrics_evaluate(api.load_run(sims, coll), judg, measures="bpref", directions="t2v", min_grade=2)
    assert rows["bpref"]["mean_a"] == pytest.approx(a.value("bpref"))
    html = tmp_path / "r.html"
    code, _, err = run_main(
        capsys, "report", sims, vast, "-c", "msrvtt-1ka", "-l", qrels, "--no-checks", "-q",
        "--min-grade", "2", "-m", "C@1,bpref", "--resamples", "200", "-o", html,
    )  # fmt: skip
    assert code == 0, err
    assert "grade ≥ 2 for the binary measures" in html.read_text()


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "-0.5"])
@pytest.mark.parametrize("verb", ["evaluate", "compare", "report", "budget"])
def test_bad_min_grade_exits_2_in_one_line(capsys, verb: str, bad: str, tmp_path: Path) -> None:
    runs = [tmp_path / "a.npy", tmp_path / "b.npy"]  # never read: the option is checked first
    code, out, err = run_main(capsys, verb, *runs, "--min-grade", bad)
    assert code == 2
    assert "--min-grade" in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1, err


def test_measures_shows_bpref(capsys) -> None:
    code, out, _ = run_main(capsys, "measures", "bpref")
    assert code == 0
    assert "Buckley & Voorhees 2004" in out and "min(N, R)" in out and "trec_eval: bpref" in out
    code, out, _ = run_main(capsys, "measures", "infndcg@10")
    assert code == 0 and "Yilmaz, Kanoulas & Aslam 2008" in out
