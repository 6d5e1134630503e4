"""`fireval plan` → `fireval judgments load` → (fake) judging → `fireval estimate`, on a toy collection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from fireval.cli import main

N = 40  # captions = videos


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


_CAP: list[pytest.CaptureFixture[str]] = []


@pytest.fixture(autouse=True)
def _capture(capsys: pytest.CaptureFixture[str]):
    _CAP.append(capsys)
    yield
    _CAP.pop()


def run_cli(*args: object) -> Result:
    """``fireval ARGS`` in this process (as the console script: fireval.cli.main, exit codes and
    one-line errors included), so that the many rounds stay fast."""
    cap = _CAP[-1]
    cap.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = cap.readouterr()
    return Result(code, out.out, out.err)


def test_console_script_exit_code(tmp_path: Path) -> None:
    """One real process: the exit status and the one-line error of the installed command."""
    r = subprocess.run(
        [sys.executable, "-m", "fireval", "plan", "x.npy", "--budget", "0", "-o", tmp_path / "p.jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, COLUMNS="200"),
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "--budget" in r.stderr


@pytest.fixture()
def toy(tmp_path: Path):
    rng = np.random.default_rng(11)
    csv = tmp_path / "toy.csv"
    lines = ["key,vid_key,video_id,sentence"] + [
        f"ret{i},msr{i},video{i},caption number {i}" for i in range(N)
    ]
    csv.write_text("\n".join(lines) + "\n")
    truth = rng.random((N, N)) < 0.08
    np.fill_diagonal(truth, True)
    scores = np.round(rng.normal(size=(N, N)) + 1.5 * truth, 1).astype(np.float32)  # rounded: ties
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, scores)
    np.save(b, np.round(scores + rng.normal(0, 0.5, size=scores.shape), 1).astype(np.float32))
    return tmp_path, csv, truth, a, b


def judge(plan: Path, truth: np.ndarray, out: Path, known: list[str]) -> None:
    """Fake annotators: the truth for every pair of the plan, appended to qrels ``out``."""
    lines = list(known)
    for line in plan.read_text().splitlines()[1:]:
        it = json.loads(line)
        v = int(it["video_id"][5:])
        for cid in it["caption_ids"]:
            c = int(cid[3:])
            lines.append(f"{cid} 0 {it['video_id']} {int(truth[c, v])}")
    known[:] = lines
    out.write_text("\n".join(lines) + "\n")


def test_plan_load_judge_estimate_loop(toy) -> None:
    tmp, csv, truth, a, b = toy
    plan = tmp / "plan.jsonl"
    r = run_cli("plan", a, b, "-c", csv, "-m", "R@1,R@5", "--budget", "30", "--seed", "4", "-o", plan)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    items = [json.loads(x) for x in plan.read_text().splitlines()]
    head, body = items[0], items[1:]
    assert head["format"] == "fireval-pool" and head["design"]["mode"] == "budget"
    assert 0 < len(body) <= 30
    for it in body:
        assert {"caption", "caption_ids", "video_id", "runs", "stratum", "inclusion"} <= set(it)
        assert 0 < it["inclusion"] <= 1
    pairs = [(it["caption"], it["video_id"]) for it in body]
    assert len(pairs) == len(set(pairs))  # a pair shared by the runs is judged once
    db = tmp / "store.db"
    assert run_cli("judgments", "init", "--db", f"sqlite:///{db}").returncode == 0
    r = run_cli("judgments", "load", "--db", f"sqlite:///{db}", plan)
    assert r.returncode == 0, r.stderr
    assert f"loaded {len(body)} items" in r.stdout
    qrels = tmp / "qrels.txt"
    known: list[str] = []
    judge(plan, truth, qrels, known)
    out = tmp / "est.json"
    r = run_cli("estimate", a, b, "-c", csv, "-l", qrels, "--plan", plan, "-m", "R@1,R@5", "--json", out)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert "units" in doc and "fraction" in doc["units"]["value"]
    recs = doc["results"]
    assert {(x["run"], x["measure"]) for x in recs} == {(r_, m) for r_ in "ab" for m in ("C@1", "C@5")}
    for x in recs:
        assert {"run", "direction", "measure", "estimate", "ci_low", "ci_high", "lower", "upper", "n"} <= set(
            x
        )
        assert x["lower"] - 1e-12 <= x["ci_low"] <= x["ci_high"] <= x["upper"] + 1e-12, json.dumps(x)
        assert x["n"] == N and x["judged"] == x["sampled"]
    assert doc["differences"] and doc["differences"][0]["run_a"] == "a"
    # exact rounds until nothing is left; then the estimate is evaluate's value
    for _ in range(N + 2):
        r = run_cli("plan", a, b, "-c", csv, "-l", qrels, "-m", "R@1,R@5", "--exact", "-o", plan)
        assert r.returncode == 0, r.stderr
        if plan.stat().st_size == 0:
            assert "nothing left to judge" in r.stdout
            # the loop's last round loads as nothing (exit 0), so a script can run load every round
            r = run_cli("judgments", "load", "--db", f"sqlite:///{db}", plan)
            assert r.returncode == 0 and "no items loaded" in r.stdout, r.stderr
            break
        judge(plan, truth, qrels, known)
    else:
        pytest.fail("the exact walk did not end")
    r = run_cli("estimate", a, "-c", csv, "-l", qrels, "--plan", plan, "-m", "R@1,R@5", "--json", out)
    assert r.returncode == 0, r.stderr
    assert "empty plan" in r.stderr
    ev = tmp / "ev.json"
    assert (
        run_cli(
            "evaluate", a, "-c", csv, "-l", qrels, "-m", "C@1,C@5", "-d", "t2v", "-q", "--json", ev
        ).returncode
        == 0
    )
    want = {
        x["measure"]: x["value"] for x in json.loads(ev.read_text())["results"] if x["labels"] == "augmented"
    }
    for x in json.loads(out.read_text())["results"]:
        assert x["method"] == "exact" and x["ci_low"] == x["ci_high"]
        assert x["estimate"] == pytest.approx(want[x["measure"]], abs=1e-12)


def test_bad_inputs_exit_2_with_one_line(toy) -> None:
    tmp, csv, truth, a, b = toy
    plan = tmp / "p.jsonl"
    for args, frag in [
        (("--budget", "0"), "--budget"),
        (("--budget", "5", "--exact"), "exactly one"),
        (("--target", "-1"), "--target"),
        (("--budget", "5", "-m", "AP"), "cannot be planned"),
    ]:
        r = run_cli("plan", a, "-c", csv, *args, "-o", plan)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and frag in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert run_cli("plan", a, "-c", csv, "--budget", "10", "-o", plan).returncode == 0
    # a plan made for another run is refused
    r = run_cli("estimate", f"a={b}", "-c", csv, "--plan", plan)
    assert r.returncode == 2 and "differs from the run the plan was made for" in r.stderr
    both = tmp / "ab.jsonl"
    assert run_cli("plan", a, b, "-c", csv, "--budget", "10", "-o", both).returncode == 0
    assert run_cli("estimate", f"b={b}", "-c", csv, "--plan", both).returncode == 0  # one of its runs
    r = run_cli("estimate", f"c={b}", "-c", csv, "--plan", both)
    assert r.returncode == 2 and "none of which is given" in r.stderr
    other = tmp / "other.csv"
    other.write_text(
        csv.read_text().replace("caption number 3,", "caption number 3b,").replace("ret39", "ret99")
    )
    r = run_cli("estimate", a, "-c", other, "--plan", plan)
    assert r.returncode == 2 and "another collection" in r.stderr
    r = run_cli("estimate", a, "-c", csv, "--plan", csv)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_estimate_list_shows_every_estimator() -> None:
    r = run_cli("estimate", "--list")
    assert r.returncode == 0
    for name in ("exact", "stratified-ht", "bounds", "paired-difference", "sequential-exact"):
        assert f"{name}:" in r.stdout
    assert "Horvitz" in r.stdout


def test_both_directions_share_items(toy) -> None:
    tmp, csv, truth, a, b = toy
    plan = tmp / "both.jsonl"
    r = run_cli("plan", a, "-c", csv, "-d", "both", "-m", "R@1", "--budget", "40", "-o", plan)
    assert r.returncode == 0, r.stderr
    items = [json.loads(x) for x in plan.read_text().splitlines()[1:]]
    strata = {it["stratum"].split("/")[1] for it in items}
    assert strata == {"t2v", "v2t"}
    assert len({(it["caption"], it["video_id"]) for it in items}) == len(items)
    known: list[str] = []
    qrels = tmp / "q.txt"
    judge(plan, truth, qrels, known)
    out = tmp / "e.json"
    r = run_cli(
        "estimate", a, "-c", csv, "-d", "both", "-m", "R@1", "-l", qrels, "--plan", plan, "--json", out
    )
    assert r.returncode == 0, r.stderr
    recs = json.loads(out.read_text())["results"]
    assert {x["direction"] for x in recs} == {"t2v", "v2t"}
    for x in recs:
        assert x["method"] in ("stratified-ht", "exact") and x["judged"] == x["sampled"] > 0


def test_report_gains_the_estimates_section(toy) -> None:
    tmp, csv, truth, a, b = toy
    plan = tmp / "p.jsonl"
    assert run_cli("plan", a, b, "-c", csv, "--budget", "20", "-o", plan).returncode == 0
    html, md = tmp / "r.html", tmp / "r.md"
    r = run_cli(
        "report", a, b, "-c", csv, "--plan", plan, "-o", html, "--markdown", md, "--resamples", "50",
        "-m", "R@1,R@5,nDCG@10", "-q", "--no-checks",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    text = md.read_text()
    assert "## Estimated corrected scores" in text and "| a | t2v | C@5 |" in text
    assert "nDCG" not in text.split("## Estimated corrected scores")[1]  # not estimable: left out
    assert "estimated-corrected-scores" in html.read_text()
    r = run_cli("report", a, "-c", csv, "--plan", plan, "-o", plan, "--resamples", "50", "-q", "--no-checks")
    assert r.returncode == 2  # a plan is an input: never overwritten


def test_target_and_min_grade(toy) -> None:
    tmp, csv, truth, a, b = toy
    loose, tight = tmp / "loose.jsonl", tmp / "tight.jsonl"
    assert run_cli("plan", a, "-c", csv, "-m", "R@5", "--target", "30", "-o", loose).returncode == 0
    assert run_cli("plan", a, "-c", csv, "-m", "R@5", "--target", "3", "-o", tight).returncode == 0
    d_loose = json.loads(loose.read_text().splitlines()[0])["design"]
    d_tight = json.loads(tight.read_text().splitlines()[0])["design"]
    assert all(v <= 30 for v in d_loose["predicted_half_width"].values())
    assert all(v <= 3 for v in d_tight["predicted_half_width"].values())
    assert len(d_tight["parts"][0]["pairs"]) > len(d_loose["parts"][0]["pairs"])
    # graded labels: grade 1 is relevant, unless --min-grade 2
    qrels = tmp / "graded.txt"
    rows = [
        f"ret{i} 0 video{j} {2 if i == j else 1 + (i + j) % 2}"
        for i in range(N)
        for j in range(N)
        if truth[i, j]
    ]
    rows += [f"ret{i} 0 video{j} 0" for i in range(N) for j in range(N) if not truth[i, j]]
    qrels.write_text("\n".join(rows) + "\n")
    out1, out2 = tmp / "g1.json", tmp / "g2.json"
    assert run_cli("estimate", a, "-c", csv, "-l", qrels, "--no-instance", "--json", out1).returncode == 0
    assert (
        run_cli(
            "estimate", a, "-c", csv, "-l", qrels, "--no-instance", "--min-grade", "2", "--json", out2
        ).returncode
        == 0
    )
    v1 = {x["measure"]: x for x in json.loads(out1.read_text())["results"]}
    v2 = {x["measure"]: x for x in json.loads(out2.read_text())["results"]}
    assert v1["C@5"]["method"] == "exact" and v2["C@5"]["method"] == "exact"
    assert v2["C@5"]["n"] < v1["C@5"]["n"] or v2["C@5"]["estimate"] < v1["C@5"]["estimate"]
    r = run_cli("estimate", a, "-c", csv, "-l", qrels, "--min-grade", "0")
    assert r.returncode == 2 and "--min-grade" in r.stderr


def test_walk_rounds_until_empty_within_budget_and_one_shot(toy) -> None:
    tmp, csv, truth, a, b = toy
    qrels = tmp / "q.txt"
    known: list[str] = []
    plans, total = [], 0
    prev = None
    for i in range(N + 2):
        plan = tmp / f"round{i + 1}.jsonl"
        args = ("--plan", prev, "-l", qrels) if prev is not None else ("--budget", "25", "--seed", "3")
        r = run_cli("plan", a, b, "-c", csv, "-m", "R@1,R@5", *args, "-o", plan)
        assert r.returncode == 0, r.stderr
        if plan.stat().st_size == 0:
            assert "empty plan" in r.stdout and ("budget" in r.stdout or "complete" in r.stdout)
            break
        plans.append(plan)
        head = json.loads(plan.read_text().splitlines()[0])["design"]
        assert {p["mode"] for p in head["parts"]} == {"walk"}
        assert {p["walk_round"] for p in head["parts"]} == {i + 1}
        assert f"walk round {i + 1}" in r.stdout and "--plan" in r.stdout
        total += len(plan.read_text().splitlines()) - 1
        judge(plan, truth, qrels, known)
        prev = plan
    else:
        pytest.fail("the walk did not end")
    assert 0 < total <= 25 and len(plans) >= 2
    out = tmp / "est.json"
    r = run_cli("estimate", a, b, "-c", csv, "-l", qrels, *[x for p in plans for x in ("--plan", p)],
                "-m", "R@1,R@5", "--json", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    for x in json.loads(out.read_text())["results"]:
        assert x["plan_mode"] == "walk" and x["method"] in ("stratified-ht", "exact")
        assert x["lower"] - 1e-12 <= x["ci_low"] <= x["estimate"] <= x["ci_high"] <= x["upper"] + 1e-12
        assert x["judged"] == x["sampled"] > 0
    # the one-shot design: one sample per measure, every candidate at once
    one = tmp / "one.jsonl"
    assert (
        run_cli("plan", a, "-c", csv, "-m", "R@1,R@5", "--budget", "20", "--one-shot", "-o", one).returncode
        == 0
    )
    parts = json.loads(one.read_text().splitlines()[0])["design"]["parts"]
    assert {p["measure"] for p in parts} == {"C@1", "C@5"} and {p["mode"] for p in parts} == {"budget"}
    # a round planned before the last one is judged is refused (its pairs would be planned again)
    r = run_cli(
        "plan", a, b, "-c", csv, "-m", "R@1,R@5", "--budget", "25", "--seed", "3", "-o", tmp / "r1.jsonl"
    )
    assert r.returncode == 0
    r = run_cli("plan", a, b, "-c", csv, "--plan", tmp / "r1.jsonl", "-o", tmp / "r2.jsonl")
    assert r.returncode == 2 and "not judged yet" in r.stderr and not (tmp / "r2.jsonl").exists()
    for args, frag in [
        (("--plan", plans[0], "--budget", "5"), "--plan continues"),
        (("--exact", "--one-shot"), "--one-shot"),
    ]:
        r = run_cli("plan", a, b, "-c", csv, *args, "-o", tmp / "x.jsonl")
        assert r.returncode == 2 and frag in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_walk_second_phase_through_the_cli(toy) -> None:
    """A budget too small for the walks: the CLI draws the second phase, says so, records it in the
    design (rate, per stratum the undecided queries, the subsample, its rate), `judgments load`
    takes the plan, the later rounds walk only the subsample, and estimate reads it back."""
    tmp, csv, truth, a, _ = toy
    db = tmp / "store.db"
    assert run_cli("judgments", "init", "--db", f"sqlite:///{db}").returncode == 0
    for seed, budget in ((1, 33), (2, 15), (2, 42)):  # (found by search) budgets that draw it
        qrels, known, plans, prev, seen = tmp / f"q{budget}.txt", [], [], None, None
        for i in range(N + 2):
            plan = tmp / f"b{budget}r{i + 1}.jsonl"
            args = ("--plan", prev, "-l", qrels) if prev else ("--budget", str(budget), "--seed", str(seed))
            r = run_cli("plan", a, "-c", csv, "-m", "R@1,R@5,R@10", *args, "-o", plan)
            assert r.returncode == 0, r.stderr
            if plan.stat().st_size == 0:
                break
            plans.append(plan)
            head = json.loads(plan.read_text().splitlines()[0])["design"]
            part = head["parts"][0]
            if part["second_phase_round"] and seen is None:
                seen = part
                assert "second phase" in r.stdout and 0 < head["second_phase_rate"] < 1
                for s in part["strata"]:
                    assert (
                        set(s["second_phase_sampled"])
                        <= set(s["second_phase_undecided"])
                        <= set(s["sampled"])
                    )
                    assert (
                        s["second_phase_rate"]
                        == pytest.approx(
                            len(s["second_phase_sampled"]) / max(len(s["second_phase_undecided"]), 1)
                        )
                        or not s["second_phase_undecided"]
                    )
                assert run_cli("judgments", "load", "--db", f"sqlite:///{db}", plan).returncode == 0
            if seen is not None:  # only the subsample (and no query the second phase left out) is walked
                out = {q for s in seen["strata"] for q in s["second_phase_undecided"]} - {
                    q for s in seen["strata"] for q in s["second_phase_sampled"]
                }
                assert not out & {p[0] for p in part["pairs"]}
            judge(plan, truth, qrels, known)
            prev = plan
        if seen is not None:
            break
    else:
        pytest.fail("no budget drew a second phase")
    res = tmp / "est.json"
    r = run_cli("estimate", a, "-c", csv, "-l", qrels, *[x for p in plans for x in ("--plan", p)],
                "-m", "R@1,R@5,R@10", "--json", res)  # fmt: skip
    assert r.returncode == 0, r.stderr
    for x in json.loads(res.read_text())["results"]:
        assert x["plan_mode"] == "walk" and x["method"] in ("stratified-ht", "exact")
        assert x["lower"] - 1e-12 <= x["ci_low"] <= x["estimate"] <= x["ci_high"] <= x["upper"] + 1e-12


def test_paired_walk_through_the_cli(toy) -> None:
    """``plan --paired``: the runs share one sample (every round); ``estimate``'s difference is then
    the paired estimator, inside the difference's bounds; --paired without a walk is refused."""
    tmp, csv, truth, a, b = toy
    qrels = tmp / "q.txt"
    known: list[str] = []
    prev, plans = None, []
    for i in range(N + 2):
        plan = tmp / f"p{i + 1}.jsonl"
        args = ("--plan", prev, "-l", qrels) if prev is not None else ("--budget", "40", "--paired")
        r = run_cli("plan", a, b, "-c", csv, "-m", "R@1,R@5", *args, "-o", plan)
        assert r.returncode == 0, r.stderr
        if plan.stat().st_size == 0:
            break
        parts = json.loads(plan.read_text().splitlines()[0])["design"]["parts"]
        assert [p["sample_group"] for p in parts] == ["a+b", "a+b"]
        assert parts[0]["strata"] == parts[1]["strata"]
        plans.append(plan)
        judge(plan, truth, qrels, known)
        prev = plan
    else:
        pytest.fail("the walk did not end")
    out = tmp / "est.json"
    r = run_cli("estimate", a, b, "-c", csv, "-l", qrels, *[x for p in plans for x in ("--plan", p)],
                "-m", "R@1,R@5", "--json", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    diffs = json.loads(out.read_text())["differences"]
    assert diffs and {d["method"] for d in diffs} <= {"paired-stratified", "exact"}
    for d in diffs:
        assert d["lower"] - 1e-12 <= d["ci_low"] <= d["estimate"] <= d["ci_high"] <= d["upper"] + 1e-12
        assert d["variance"] >= 0.0
    for args in (("--exact", "--paired"), ("--budget", "9", "--one-shot", "--paired")):
        r = run_cli("plan", a, b, "-c", csv, *args, "-o", tmp / "x.jsonl")
        assert r.returncode == 2 and "--paired" in r.stderr and len(r.stderr.strip().splitlines()) == 1
