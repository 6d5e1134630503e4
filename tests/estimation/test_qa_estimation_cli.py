"""QA of `fireval plan` / `fireval estimate` as an outside evaluator uses them: notes, checks and
refusals that keep a user from a silently wrong or misleading number."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fireval.cli import main

N = 30


def run_cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture()
def toy(tmp_path: Path):
    rng = np.random.default_rng(3)
    csv = tmp_path / "toy.csv"
    csv.write_text(
        "key,vid_key,video_id,sentence\n"
        + "".join(f"ret{i},msr{i},video{i},caption number {i}\n" for i in range(N))
    )
    truth = rng.random((N, N)) < 0.1
    np.fill_diagonal(truth, True)
    scores = (rng.normal(size=(N, N)) + 1.5 * truth).astype(np.float32)
    run = tmp_path / "a.npy"
    np.save(run, scores)
    trec = tmp_path / "a.run"
    order = np.argsort(-scores, axis=1)
    trec.write_text(
        "".join(
            f"ret{i} Q0 video{j} {r + 1} {scores[i, j]:.6f} a\n"
            for i in range(N)
            for r, j in enumerate(order[i, :10])
        )
    )
    qrels = tmp_path / "q.txt"  # a pool: the truth on the run's top 3
    qrels.write_text(
        "".join(f"ret{i} 0 video{j} {int(truth[i, j])}\n" for i in range(N) for j in order[i, :3])
    )
    return tmp_path, csv, truth, run, trec, qrels


def test_trec_run_both_directions_says_v2t_is_left_out(toy, capsys) -> None:
    """-d both with a TREC run (one direction only): evaluate says so; plan and estimate did not."""
    tmp, csv, _, _, trec, qrels = toy
    code, out, err = run_cli(capsys, "estimate", trec, "-c", csv, "-l", qrels, "-d", "both", "--no-checks")
    assert code == 0, err
    assert "note: a: no v2t results" in err
    code, out, err = run_cli(
        capsys,
        "plan",
        trec,
        "-c",
        csv,
        "-l",
        qrels,
        "-d",
        "both",
        "--exact",
        "--no-checks",
        "-o",
        tmp / "p.jsonl",
    )
    assert code == 0, err
    assert "note: a: no v2t results" in err


def test_plan_and_estimate_run_the_input_checks(shared_data: Path, tmp_path: Path, capsys) -> None:
    """A run whose rows are in another order than the collection (GRAM on MSR-VTT 1k-A): evaluate
    warns; plan (which spends the annotators' budget on it) and estimate must warn too."""
    csv = shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"
    gram = shared_data / "msrvtt" / "sims" / "GRAM_msrvtt.npy"
    code, out, err = run_cli(capsys, "estimate", gram, "-c", csv, "-m", "C@1")
    assert code == 0, err
    assert "alignment check fail" in err
    code, out, err = run_cli(
        capsys, "plan", gram, "-c", csv, "-m", "C@1", "--budget", "20", "-o", tmp_path / "p.jsonl"
    )
    assert code == 0, err
    assert "alignment check fail" in err
    code, out, err = run_cli(capsys, "estimate", gram, "-c", csv, "-m", "C@1", "--no-checks")
    assert code == 0 and "alignment" not in err


def test_plan_part_with_nothing_undecided_says_so(toy, capsys) -> None:
    """A direction the labels already decide got '0 pairs for 0 sampled of 0 undecided queries in
    0 strata; predicted 95% half-width <= 0.00'."""
    tmp, csv, truth, run, _, qrels = toy
    full = tmp / "v2t_full.txt"  # every pair judged: every query decided in both directions
    full.write_text("".join(f"ret{i} 0 video{j} {int(truth[i, j])}\n" for i in range(N) for j in range(N)))
    plan = tmp / "p.jsonl"
    code, out, err = run_cli(
        capsys, "plan", run, "-c", csv, "-l", qrels, "-l", full, "--budget", "20", "-d", "both",
        "--no-checks", "-o", plan,
    )  # fmt: skip
    assert code == 0, err
    assert plan.stat().st_size == 0 and "nothing left to judge" in out
    # v2t decided (each video's top caption judged relevant), t2v not: the v2t part says so
    scores = np.load(run)
    v2t = tmp / "v2t_top.txt"
    v2t.write_text("".join(f"ret{int(np.argmax(scores[:, j]))} 0 video{j} 1\n" for j in range(N)))
    code, out, err = run_cli(
        capsys, "plan", run, "-c", csv, "-l", v2t, "-m", "C@1", "--budget", "20", "-d", "both",
        "--no-checks", "-o", plan,
    )  # fmt: skip
    assert code == 0, err
    assert "a/t2v: walk round 1" in out
    assert "a/v2t: the labels decide every requested measure" in out
    for line in out.splitlines():
        assert "0 sampled of 0 undecided" not in line and "in 0 strata" not in line, line


def _walk(tmp: Path, csv: Path, run: Path, qrels: Path, truth: np.ndarray) -> tuple[list[Path], Path]:
    """A --budget walk judged from ``truth`` until its empty plan: the rounds' plans and the labels."""
    labels = tmp / "walk.txt"
    lines = qrels.read_text().splitlines()
    labels.write_text("\n".join(lines) + "\n")
    plans: list[Path] = []
    for i in range(N + 2):
        plan = tmp / f"r{i + 1}.jsonl"
        args = ("--plan", plans[-1]) if plans else ("--budget", "40", "--seed", "2")
        assert main_ok(
            "plan", run, "-c", csv, "-l", labels, "-m", "C@1,C@5", *args, "--no-checks", "-o", plan
        )
        if plan.stat().st_size == 0:
            break
        plans.append(plan)
        for line in plan.read_text().splitlines()[1:]:
            it = json.loads(line)
            v = int(it["video_id"][5:])
            lines += [f"{c} 0 {it['video_id']} {int(truth[int(c[3:]), v])}" for c in it["caption_ids"]]
        labels.write_text("\n".join(lines) + "\n")
    assert len(plans) >= 2
    return plans, labels


def main_ok(*args: object) -> bool:
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code in (0, None)
    return True


def test_estimate_refuses_walk_rounds_out_of_order(toy, capsys) -> None:
    """`--plan r_last --plan r1` used round 1's sample with the later rounds' labels (a biased
    estimate, silently different from the right one); now one line, exit 2."""
    tmp, csv, truth, run, _, qrels = toy
    plans, labels = _walk(tmp, csv, run, qrels, truth)
    ok = run_cli(capsys, "estimate", run, "-c", csv, "-l", labels, "--plan", plans[0], "--plan", plans[-1],
                 "-m", "C@1,C@5", "--no-checks")  # fmt: skip
    assert ok[0] == 0, ok[2]
    code, out, err = run_cli(capsys, "estimate", run, "-c", csv, "-l", labels, "--plan", plans[-1],
                             "--plan", plans[0], "-m", "C@1,C@5", "--no-checks")  # fmt: skip
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and plans[0].name in err and "order" in err


def test_estimate_says_when_the_plans_pairs_have_no_label(toy, capsys) -> None:
    """A plan given without the labels that answer it (the store forgotten): the 'estimate' is the
    middle of the bounds under method stratified-ht; it must say that the pairs are unjudged."""
    tmp, csv, truth, run, _, qrels = toy
    plans, labels = _walk(tmp, csv, run, qrels, truth)
    code, out, err = run_cli(capsys, "estimate", run, "-c", csv, "-l", labels, "--plan", plans[-1],
                             "-m", "C@1,C@5", "--no-checks")  # fmt: skip
    assert code == 0 and "no label" not in err
    code, out, err = run_cli(capsys, "estimate", run, "-c", csv, "-l", qrels, "--plan", plans[-1],
                             "-m", "C@1,C@5", "--no-checks")  # fmt: skip
    assert code == 0, err
    assert "note: a t2v C@1,C@5:" in err and "have no label" in err


def _graded_qrels(tmp, truth, run, name: str, ranks: slice | None):
    """Qrels of grades 1-3 on the truth's relevant pairs (0 elsewhere), seeded: for the docs at
    ``ranks`` of ``run``'s ranking of each caption (every doc with ``None``)."""
    rng = np.random.default_rng(5)
    grade = np.where(truth, rng.integers(1, 4, truth.shape), 0)
    order = np.argsort(-np.load(run), axis=1)
    docs = [order[i, ranks] if ranks is not None else range(N) for i in range(N)]
    path = tmp / name
    path.write_text("".join(f"ret{i} 0 video{j} {grade[i, j]}\n" for i in range(N) for j in docs[i]))
    return path


def test_bounds_equal_evaluate_worst_best_at_min_grade(toy, capsys) -> None:
    """Graded labels on the run's top 3; at --min-grade 2 some queries have no known relevant doc
    (instance positives are grade 1). Without a plan, estimate's lower/upper must be evaluate's
    exact worst/best: it averaged those queries in over all queries, so its upper bound was below
    a value that a labelling reaches (the interval did not hold the final value)."""
    tmp, csv, truth, run, _, _ = toy
    lab = _graded_qrels(tmp, truth, run, "graded_top3.txt", slice(0, 3))
    est, ev = tmp / "est.json", tmp / "ev.json"
    common = ("-c", csv, "-l", lab, "--min-grade", "2", "-d", "both", "--no-checks")
    code, _, err = run_cli(capsys, "estimate", run, *common, "-m", "C@1,C@5,RR,MnR", "--json", est)
    assert code == 0, err
    code, _, err = run_cli(capsys, "evaluate", run, *common, "-m", "C@1,C@5,RR,MnR", "-q", "--json", ev,
                           "--unjudged", "worst,best")  # fmt: skip
    assert code == 0, err
    want: dict[tuple[str, str], list[float]] = {}
    for r in json.loads(ev.read_text())["results"]:
        if r["labels"] != "original":
            want.setdefault((r["direction"], r["measure"]), []).append(r["value"])
    for r in json.loads(est.read_text())["results"]:
        lo, hi = sorted(want[(r["direction"], r["measure"])])
        assert (r["lower"], r["upper"]) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9)), r


def test_exact_estimate_equals_evaluate_when_some_query_has_no_relevant_doc(toy, capsys) -> None:
    """Every pair judged with grades; at --min-grade 2 some queries have no relevant doc. evaluate
    leaves them out of the mean (its default); estimate's `exact` value must be the same number
    and the same query count (a guard next to the bounds test above)."""
    tmp, csv, truth, run, _, _ = toy
    full = _graded_qrels(tmp, truth, run, "graded.txt", None)
    est, ev = tmp / "est.json", tmp / "ev.json"
    common = ("-c", csv, "-l", full, "--min-grade", "2", "--no-instance", "-d", "both", "--no-checks")
    code, _, err = run_cli(capsys, "estimate", run, *common, "-m", "C@1,RR", "--json", est)
    assert code == 0, err
    code, _, err = run_cli(capsys, "evaluate", run, *common, "-m", "C@1,RR", "-q", "--json", ev)
    assert code == 0, err
    want = {
        (r["direction"], r["measure"]): (r["value"], r["n"])
        for r in json.loads(ev.read_text())["results"]
        if r["labels"] != "original"
    }
    for r in json.loads(est.read_text())["results"]:
        assert r["method"] == "exact"
        value, n = want[(r["direction"], r["measure"])]
        assert r["n"] == n and r["estimate"] == pytest.approx(value, abs=1e-9), r


def _assert_report_shows_estimate(capsys, tmp, run, common: tuple, measure: str) -> None:
    """Plan a 12-pair walk with ``common`` options, then check that `report --plan`'s "Estimated
    corrected scores" row gives the bounds `estimate --plan` gives with the same options."""
    plan, est, md = tmp / "p.jsonl", tmp / "e.json", tmp / "r.md"
    code, _, err = run_cli(capsys, "plan", run, *common, "-m", measure, "--budget", "12", "-o", plan)
    assert code == 0, err
    code, _, err = run_cli(capsys, "estimate", run, *common, "--plan", plan, "-m", measure, "--json", est)
    assert code == 0, err
    rec = json.loads(est.read_text())["results"][0]
    code, _, err = run_cli(capsys, "report", run, *common, "--plan", plan, "-m", measure, "-o", tmp / "r.html",
                           "--markdown", md, "--resamples", "20", "-q")  # fmt: skip
    assert code == 0, err
    section = md.read_text().split("## Estimated corrected scores")[1]
    row = next(x for x in section.splitlines() if x.startswith(f"| a | t2v | {measure} |"))
    assert f"| {100 * rec['lower']:.1f} | {100 * rec['upper']:.1f} |" in row, (row, rec)


def test_report_estimates_honour_min_grade(toy, capsys) -> None:
    """`report --min-grade 2 --plan P` showed the estimates of grade > 0 (80.0 where estimate said
    57.7 on 1k-A): its section must give the numbers `estimate --min-grade 2` gives."""
    tmp, csv, truth, run, _, _ = toy
    lab = _graded_qrels(tmp, truth, run, "graded_top3.txt", slice(0, 3))
    _assert_report_shows_estimate(
        capsys, tmp, run, ("-c", csv, "-l", lab, "--min-grade", "2", "--no-checks"), "C@1"
    )


def test_report_estimates_use_every_label_set(toy, capsys) -> None:
    """`report -l a=X -l b=Y --plan P` estimated under the last named set only; its section must
    give what `estimate` gives with the same labels (every set merged)."""
    tmp, csv, truth, run, _, _ = toy
    order = np.argsort(-np.load(run), axis=1)
    one, two = tmp / "top1.txt", tmp / "top2_3.txt"
    one.write_text("".join(f"ret{i} 0 video{order[i, 0]} {int(truth[i, order[i, 0]])}\n" for i in range(N)))
    two.write_text(
        "".join(f"ret{i} 0 video{j} {int(truth[i, j])}\n" for i in range(N) for j in order[i, 1:3])
    )
    common = ("-c", csv, "-l", f"first={one}", "-l", f"rest={two}", "--no-checks")
    _assert_report_shows_estimate(capsys, tmp, run, common, "C@5")


def test_estimate_refuses_a_plan_made_at_another_min_grade(toy, capsys) -> None:
    """A plan made with --min-grade 2 (its population, strata and candidates are those of grade >= 2)
    estimated without it mixed the two silently (1k-A: 80.0 [73.1, 86.8] with n = 849, the grade-2
    population, where estimate --min-grade 2 gave 57.7); now one line, exit 2, as for another run."""
    tmp, csv, truth, run, _, _ = toy
    lab = _graded_qrels(tmp, truth, run, "graded_ranks_2_to_4.txt", slice(1, 4))
    plan = tmp / "p.jsonl"
    common = ("-c", csv, "-l", lab, "--no-checks", "-m", "C@1")
    code, _, err = run_cli(capsys, "plan", run, *common, "--min-grade", "2", "--budget", "12", "-o", plan)
    assert code == 0 and plan.stat().st_size > 0, err
    code, _, err = run_cli(capsys, "estimate", run, *common, "--min-grade", "2", "--plan", plan)
    assert code == 0, err
    for grade_args in ((), ("--min-grade", "3")):
        code, _, err = run_cli(capsys, "estimate", run, *common, *grade_args, "--plan", plan)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "--min-grade" in err, err
        code, _, err = run_cli(
            capsys, "plan", run, *common, *grade_args, "--plan", plan, "-o", tmp / "n.jsonl"
        )
        assert code == 2 and len(err.strip().splitlines()) == 1 and "--min-grade" in err, err


def test_plan_continuation_refuses_options_it_would_ignore(toy, capsys) -> None:
    """`plan --plan LAST -m RR -d v2t --seed 9` planned the plan's own measures, directions and
    seed and silently ignored what was asked; now one line naming them, exit 2, nothing written."""
    tmp, csv, truth, run, _, qrels = toy
    plans, labels = _walk(tmp, csv, run, qrels, truth)
    out = tmp / "next.jsonl"
    for extra, name in (
        (("-m", "RR"), "-m/--measures"),
        (("-d", "v2t"), "-d/--direction"),
        (("--seed", "9"), "--seed"),
    ):
        code, _, err = run_cli(capsys, "plan", run, "-c", csv, "-l", labels, "--plan", plans[0], *extra,
                               "--no-checks", "-o", out)  # fmt: skip
        assert code == 2 and len(err.strip().splitlines()) == 1 and name in err, err
        assert not out.exists()


def test_plan_continuation_refuses_a_run_the_walk_does_not_sample(toy, capsys) -> None:
    """`plan a b --plan LAST` (a walk of run a) planned a's next round and dropped b without a word."""
    tmp, csv, truth, run, _, qrels = toy
    plans, labels = _walk(tmp, csv, run, qrels, truth)
    other = tmp / "b.npy"
    np.save(other, np.load(run)[:, ::-1])
    out = tmp / "next.jsonl"
    code, _, err = run_cli(capsys, "plan", run, other, "-c", csv, "-l", labels, "--plan", plans[-1], "--no-checks",
                           "-o", out)  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1 and "'b'" not in err and " b" in err, err
    assert not out.exists()


def test_plan_budget_too_small_is_not_nothing_left(toy, capsys) -> None:
    """1k-A: `plan --budget 2` (walk) sampled nothing and said 'nothing left to judge: the labels
    decide every requested measure' with 189 queries undecided. Now one line, exit 2, no file."""
    tmp, csv, _, run, _, qrels = toy
    out = tmp / "p.jsonl"
    code, _, err = run_cli(
        capsys, "plan", run, "-c", csv, "-l", qrels, "--budget", "1", "--no-checks", "-o", out
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--budget 1" in err and "undecided" in err, (
        err
    )
    assert not out.exists()
    code, out_text, err = run_cli(
        capsys, "plan", run, "-c", csv, "-l", qrels, "--budget", "30", "--no-checks", "-o", out
    )
    assert code == 0 and out.stat().st_size > 0, err


def test_plan_does_not_claim_decided_when_only_unranked_docs_are_open(toy, capsys) -> None:
    """A run that ranks nothing (all -inf): MnR stays undecided (estimate: bounds), but plan said
    'nothing left to judge: the labels decide every requested measure'."""
    tmp, csv, _, _, _, qrels = toy
    run = tmp / "nothing.npy"
    np.save(run, np.full((N, N), -np.inf, np.float32))
    out = tmp / "p.jsonl"
    code, text, err = run_cli(capsys, "plan", run, "-c", csv, "-l", qrels, "-m", "MnR", "--exact", "--no-checks",
                              "-o", out)  # fmt: skip
    assert code == 0 and out.stat().st_size == 0, err
    assert "the labels decide every requested measure" not in text and "nothing left to judge" in text
    assert "note: nothing/t2v:" in err and "undecided queries have no candidate pair" in err
    code, text, err = run_cli(capsys, "estimate", run, "-c", csv, "-l", qrels, "-m", "MnR", "--no-checks")
    assert code == 0 and "bounds" in text


def test_a_new_walk_after_a_finished_one_is_not_out_of_order(toy, capsys) -> None:
    """A second walk of the same run with the same (default) seed, planned after the first one's
    labels came in, is a new sample: `--plan <first walk's last> --plan <new walk's round 1>` is in
    the order made and must not be refused as rounds out of order."""
    tmp, csv, truth, run, _, qrels = toy
    plans, labels = _walk(tmp, csv, run, qrels, truth)
    new = tmp / "new1.jsonl"
    code, _, err = run_cli(capsys, "plan", run, "-c", csv, "-l", labels, "-m", "C@1,C@5,C@10", "--budget", "40",
                           "--seed", "2", "--no-checks", "-o", new)  # fmt: skip
    assert code == 0, err
    assert new.stat().st_size > 0  # C@10 is undecided after the first walk (of C@1, C@5)
    code, _, err = run_cli(capsys, "estimate", run, "-c", csv, "-l", labels, "--plan", plans[-1], "--plan", new,
                           "-m", "C@1", "--no-checks")  # fmt: skip
    assert code == 0, err


def test_named_label_specs_are_not_dropped(toy, capsys) -> None:
    """`-l pool=q.txt` (evaluate's NAME=PATH form) was silently ignored by plan and estimate: the
    bounds were those of the instance labels alone. It must give what `-l q.txt` gives."""
    tmp, csv, _, run, _, qrels = toy
    plain, named = tmp / "plain.json", tmp / "named.json"
    for spec, out in ((str(qrels), plain), (f"pool={qrels}", named)):
        code, _, err = run_cli(capsys, "estimate", run, "-c", csv, "-l", spec, "--no-checks", "--json", out)
        assert code == 0, err
    assert json.loads(named.read_text())["results"] == json.loads(plain.read_text())["results"]
    p1, p2 = tmp / "p1.jsonl", tmp / "p2.jsonl"
    for spec, out in ((str(qrels), p1), (f"pool={qrels}", p2)):
        code, _, err = run_cli(
            capsys, "plan", run, "-c", csv, "-l", spec, "--exact", "--no-checks", "-o", out
        )
        assert code == 0, err
    assert p1.read_text().splitlines()[1:] == p2.read_text().splitlines()[1:]


def test_walk_can_pass_a_pair_the_annotators_skipped(toy, capsys) -> None:
    """An annotator skips one item of a round (its video does not play): the pair stays unjudged
    and every `plan --plan` refused ('not judged yet'), so the walk could never go on. With
    `--pass-unjudged` the next round walks past it and never plans it again."""
    tmp, csv, truth, run, _, qrels = toy
    r1 = tmp / "r1.jsonl"
    code, _, err = run_cli(capsys, "plan", run, "-c", csv, "-l", qrels, "-m", "C@1,C@5", "--budget", "40",
                           "--seed", "2", "--no-checks", "-o", r1)  # fmt: skip
    assert code == 0, err
    items = [json.loads(x) for x in r1.read_text().splitlines()[1:]]
    labels = tmp / "l.txt"
    lines = qrels.read_text().splitlines()
    for it in items[1:]:  # the first item skipped
        v = int(it["video_id"][5:])
        lines += [f"{c} 0 {it['video_id']} {int(truth[int(c[3:]), v])}" for c in it["caption_ids"]]
    labels.write_text("\n".join(lines) + "\n")
    r2 = tmp / "r2.jsonl"
    code, _, err = run_cli(
        capsys, "plan", run, "-c", csv, "-l", labels, "--plan", r1, "--no-checks", "-o", r2
    )
    assert code == 2 and "not judged yet" in err
    code, _, err = run_cli(capsys, "plan", run, "-c", csv, "-l", labels, "--plan", r1, "--pass-unjudged",
                           "--no-checks", "-o", r2)  # fmt: skip
    assert code == 0, err
    skipped = (items[0]["caption"], items[0]["video_id"])
    assert skipped not in {
        (json.loads(x)["caption"], json.loads(x)["video_id"]) for x in r2.read_text().splitlines()[1:]
    }
