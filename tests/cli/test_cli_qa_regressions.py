"""Regressions found by QA of the CLI verbs on the real MSR-VTT 1k-A data (subprocess, real entry point)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

FIREVAL = [sys.executable, "-m", "fireval"]


def run_cli(*args: object, columns: int = 200, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS=str(columns))
    return subprocess.run(
        [*FIREVAL, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def jsfusion(shared_data: Path) -> Path:
    return shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"


@pytest.fixture(scope="module")
def gram(shared_data: Path) -> Path:
    return shared_data / "msrvtt" / "sims" / "GRAM_msrvtt.npy"


def test_tables_keep_full_numbers_on_a_narrow_pipe(shared_data: Path, jsfusion: Path):
    """At 80 columns (any pipe) rich used to squeeze the table and print ``34…`` for 34.4."""
    sims = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    r = run_cli("evaluate", sims, "-c", jsfusion, "-d", "t2v", columns=80)
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout
    assert "clip4clip_msrvtt" in r.stdout
    for value in ("34.4", "55.1", "65.0"):  # SOURCES.md: C@1/5/10 of the diagonal ground truth
        assert value in r.stdout


def test_bad_per_query_name_fails_before_writing_the_json(gram: Path, jsfusion: Path, tmp_path: Path):
    out = tmp_path / "res.json"
    r = run_cli("evaluate", gram, "-c", jsfusion, "-q", "--json", out, "--per-query", tmp_path / "pq.xlsx")
    assert r.returncode == 2
    assert "pq.xlsx" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_store_given_as_a_plain_sqlite_path_is_read_as_labels(gram: Path, jsfusion: Path, tmp_path: Path):
    """``-l store.db`` (as ``serve --db store.db`` accepts) equals ``-l sqlite:///store.db``.

    It used to be read as a qrels file and fail with "not UTF-8 text".
    """
    import csv

    rows = list(csv.DictReader(jsfusion.open()))
    pool = tmp_path / "pool.jsonl"
    db = tmp_path / "store.db"
    assert (
        run_cli(
            "pool",
            f"GRAM={gram}",
            "-c",
            jsfusion,
            "-o",
            pool,
            "-k",
            "2",
            "--max-queries",
            "5",
            "--allow-misaligned",
        ).returncode
        == 0
    )
    assert run_cli("judgments", "init", "--db", db).returncode == 0
    assert run_cli("judgments", "load", "--db", db, pool).returncode == 0
    con = sqlite3.connect(db)
    item_id, video = con.execute("select id, video_id from items order by id limit 1").fetchone()
    con.close()
    assert video in {row["video_id"] for row in rows}
    res = {}
    for spec in (db, f"sqlite:///{db}"):
        out = tmp_path / f"r{len(res)}.json"
        r = run_cli(
            "evaluate", gram, "-c", jsfusion, "-q", "-l", spec, "-d", "t2v", "-m", "C@1", "--json", out
        )
        assert r.returncode == 0, r.stderr
        res[str(spec)] = json.loads(out.read_text())["results"]
    a, b = res.values()
    assert a == b
    assert {row["labels"] for row in a} == {"original", "augmented"}


@pytest.mark.parametrize(
    ("verb", "extra", "needle"),
    [
        ("report", ["--resamples", "0", "-o", "rep.html"], "resamples"),
        ("compare", ["--resamples", "-3"], "resamples"),
        ("budget", ["--resamples", "0"], "resamples"),
        ("budget", ["--delta", "0"], "delta"),
        ("budget", ["--delta", "-1"], "delta"),
    ],
)
def test_bad_analysis_options_exit_2_without_traceback(
    verb: str, extra: list[str], needle: str, gram: Path, jsfusion: Path, tmp_path: Path
):
    runs = [gram, gram] if verb == "compare" else [gram]
    r = run_cli(verb, *runs, "-c", jsfusion, *extra, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert needle in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["judgments", "status", "--db", "{db}"],
        ["judgments", "release", "--db", "{db}"],
        ["judgments", "export", "--db", "{db}", "-o", "out.json"],
        ["judgments", "export", "--db", "sqlite:///{db}", "-o", "out.json"],
    ],
)
def test_reading_a_mistyped_store_path_is_an_error_not_an_empty_store(args: list[str], tmp_path: Path):
    """A typo in --db used to create an empty store and export 0 labels with exit code 0."""
    db = tmp_path / "typo.db"
    r = run_cli(*[a.format(db=db) for a in args], cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "typo.db" in r.stderr and "judgments init" in r.stderr and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_direction_missing_from_a_trec_run_is_announced(gram: Path, jsfusion: Path, tmp_path: Path):
    """`--direction both` on a t2v TREC run used to drop v2t without a word."""
    import csv

    import numpy as np

    rows = list(csv.DictReader(jsfusion.open()))
    s = np.load(gram)[:, :]
    lines = []
    for q in range(len(rows)):
        for r, j in enumerate(np.argsort(-s[q], kind="stable")[:5]):
            lines.append(f"{rows[q]['key']} Q0 {rows[j]['video_id']} {r + 1} {s[q, j]:.6f} g\n")
    run = tmp_path / "gram.run"
    run.write_text("".join(lines))
    r = run_cli("evaluate", run, "-c", jsfusion, "-q", "-m", "C@1")
    assert r.returncode == 0, r.stderr
    assert "no v2t results" in r.stderr and "gram.run" in r.stderr
    assert "no t2v results" not in r.stderr


@pytest.mark.parametrize("value", ["x", "", "both,x"])
def test_bad_direction_names_all_three_choices(value: str, gram: Path, jsfusion: Path):
    r = run_cli("evaluate", gram, "-c", jsfusion, "-q", "-d", value)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "expected t2v, v2t or both" in r.stderr


def test_pool_prints_shared_pairs_as_a_table_not_a_json_dump(
    shared_data: Path, jsfusion: Path, tmp_path: Path
):
    """`fireval pool` used to end with a raw ``{"pairwise_overlap": ...}`` line on stderr."""
    import numpy as np

    sims = shared_data / "msrvtt" / "sims"
    a = np.load(sims / "clip4clip_msrvtt.npy")
    b = np.load(sims / "GRAM_msrvtt.npy")
    ta = np.argsort(-a, axis=1, kind="stable")[:, :10]
    tb = np.argsort(-b, axis=1, kind="stable")[:, :10]
    # pairs proposed by both, without each caption's own (already judged) video
    shared = sum(len((set(ta[q]) & set(tb[q])) - {q}) for q in range(a.shape[0]))
    r = run_cli(
        "pool", f"C={sims / 'clip4clip_msrvtt.npy'}", f"G={sims / 'GRAM_msrvtt.npy'}", "-c", jsfusion,
        "-o", tmp_path / "pool.jsonl", "--allow-misaligned",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "pairwise_overlap" not in r.stderr and "{" not in r.stderr
    lines = r.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("shared pairs"))
    row_c = lines[head + 1].split()
    assert row_c[0] == "C" and int(row_c[2]) == shared
    assert lines[-1].startswith("wrote ")


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "{gram}", "-c", "{csv}", "-q", "--json", "adir"],
        ["evaluate", "{gram}", "-c", "{csv}", "-q", "--per-query", "afile/pq.tsv"],
        ["report", "{gram}", "-c", "{csv}", "-o", "adir"],
        ["report", "{gram}", "-c", "{csv}", "--markdown", "afile/r.md"],
        ["compare", "{gram}", "{gram}", "-c", "{csv}", "--json", "adir"],
        ["pool", "{gram}", "-c", "{csv}", "-o", "adir"],
        ["demo", "-q", "-o", "afile"],
    ],
)
def test_unwritable_output_is_one_line_exit_2_before_any_work(
    args: list[str], gram: Path, jsfusion: Path, tmp_path: Path
):
    """Writing onto a directory, or below a file, used to end in an OSError traceback (exit 1)."""
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("keep me")
    r = run_cli(*[a.format(gram=gram, csv=jsfusion) for a in args], cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert ("adir" in r.stderr) or ("afile" in r.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile"]
    assert list((tmp_path / "adir").iterdir()) == []
    assert (tmp_path / "afile").read_text() == "keep me"


def test_serve_option_errors_are_one_line_before_starting(gram: Path, tmp_path: Path):
    """A busy port used to print "serving on ..." and then a uvicorn error (exit 3); port 70000 a traceback."""
    import socket

    db = tmp_path / "s.db"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = [
            (["--port", str(port)], f"cannot listen on 127.0.0.1:{port}"),
            (["--port", "70000"], "--port must be between 0 and 65535"),
            (["--port", "0", "--run", str(gram)], "--run needs --collection"),
        ]
        for extra, needle in cases:
            r = run_cli("serve", "--db", db, *extra)
            assert r.returncode == 2, (extra, r.stderr)
            assert needle in r.stderr and "Traceback" not in r.stderr
            assert "serving" not in r.stderr
            assert len(r.stderr.strip().splitlines()) == 1


def test_serve_refuses_a_guessable_session_secret(tmp_path: Path):
    """The signed session cookie holds the user id: a short secret would let anyone sign an admin's."""
    key = tmp_path / "key"
    key.write_text("hunter2\n")
    for args, env in (
        (["--secret-key-file", key], {}),
        ([], {"FIREVAL_SECRET_KEY": "hunter2"}),
    ):
        r = subprocess.run(
            [*FIREVAL, "serve", "--db", tmp_path / "s.db", "--port", "0", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200", **env},
            timeout=120,
        )
        assert r.returncode == 2, r.stderr
        assert "at least 32 characters, got 7" in r.stderr and "Traceback" not in r.stderr
        assert ("key" in r.stderr) if args else ("FIREVAL_SECRET_KEY" in r.stderr)


@pytest.mark.parametrize(("value", "needle"), [("humna,instance", "'humna'"), ("", "--precedence is empty")])
def test_precedence_typo_is_an_error(value: str, needle: str, gram: Path, jsfusion: Path):
    """``--precedence foo`` used to be accepted and silently rank every source equal."""
    r = run_cli("evaluate", gram, "-c", jsfusion, "-q", "--precedence", value)
    assert r.returncode == 2
    assert needle in r.stderr and "Traceback" not in r.stderr


def test_precedence_accepts_kinds_and_source_names(gram: Path, jsfusion: Path):
    r = run_cli(
        "evaluate", gram, "-c", jsfusion, "-q", "-m", "C@1", "--precedence", "human,proxy:bow,instance"
    )
    assert r.returncode == 0, r.stderr


def test_labels_from_a_missing_store_url_do_not_create_it(gram: Path, jsfusion: Path, tmp_path: Path):
    db = tmp_path / "typo.db"
    r = run_cli("evaluate", gram, "-c", jsfusion, "-q", "-l", f"sqlite:///{db}")
    assert r.returncode == 2
    assert "no annotation store" in r.stderr and "typo.db" in r.stderr
    assert not db.exists()


# --- second QA pass: budget/compare/report/evaluate -----------------------------------------


@pytest.fixture(scope="module")
def clip4clip(shared_data: Path) -> Path:
    return shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"


def _trec_lines(jsfusion: Path, n_queries: int, depth: int) -> list[str]:
    """A small TREC run: the first ``n_queries`` captions, each ranking its own video first."""
    import csv

    rows = list(csv.DictReader(jsfusion.open(encoding="utf-8")))
    videos = [r["video_id"] for r in rows]
    out = []
    for q in rows[:n_queries]:
        docs = [q["video_id"], *[v for v in videos if v != q["video_id"]][: depth - 1]]
        out += [f"{q['key']} Q0 {d} {i + 1} {float(depth - i)} t" for i, d in enumerate(docs)]
    return out


def test_budget_refuses_mdr_alone_and_drops_it_among_others(clip4clip: Path, jsfusion: Path):
    """``budget -m MdR`` printed the mean rank's error curve under MdR's name."""
    r = run_cli("budget", clip4clip, "-c", jsfusion, "-m", "MdR", "--n", "100", "--resamples", "50", "-q")
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "median" in r.stderr and "Traceback" not in r.stderr
    r = run_cli(
        "budget", clip4clip, "-c", jsfusion, "-m", "R@1,MdR,MnR", "--n", "100", "--resamples", "50", "-q"
    )
    assert r.returncode == 0, r.stderr
    assert "MdR" in r.stderr and "note" in r.stderr
    measures = {ln.split("\t")[1] for ln in r.stdout.splitlines()[2:]}
    assert measures == {"C@1", "MnR"}


def test_compare_drops_mdr_from_the_paper_set_with_one_note(clip4clip: Path, gram: Path, jsfusion: Path):
    r = run_cli(
        "compare", clip4clip, gram, "-c", jsfusion, "-m", "R@1,R@5,R@10,MdR,MnR", "--names", "tvr",
        "--resamples", "50", "--no-checks", "-q",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert len(r.stderr.splitlines()) == 1 and "note: -m: MdR left out" in r.stderr
    rows = [ln.split("\t")[0] for ln in r.stdout.splitlines()[3:]]
    assert rows == ["R@1", "R@5", "R@10", "MnR"]
    r = run_cli("compare", clip4clip, gram, "-c", jsfusion, "-m", "MdR", "--resamples", "50", "-q")
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr


@pytest.mark.parametrize("delta", ["2", "0", "-0.1", "1"])
def test_budget_validates_delta_before_printing_anything(delta: str, clip4clip: Path, jsfusion: Path):
    r = run_cli("budget", clip4clip, "-c", jsfusion, "--delta", delta, "--resamples", "50", "-q")
    assert r.returncode == 2
    assert r.stdout == "" and "--delta" in r.stderr and "Traceback" not in r.stderr


def test_report_without_o_never_overwrites_an_unnamed_html(gram: Path, jsfusion: Path, tmp_path: Path):
    """``report --latex t.tex --figures figs/`` silently wrote (over) ./fireval-report.html."""
    old = tmp_path / "fireval-report.html"
    old.write_text("mine")
    r = run_cli("report", gram, "-c", jsfusion, "--resamples", "20", "-m", "C@1", "-q", cwd=tmp_path)
    assert r.returncode == 2 and "-o" in r.stderr and "Traceback" not in r.stderr
    assert old.read_text() == "mine"
    old.unlink()
    r = run_cli(
        "report", gram, "-c", jsfusion, "--resamples", "20", "-m", "C@1", "-q", "--no-checks",
        "--markdown", "t.md", cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.md"]


def test_report_help_says_where_the_html_goes():
    r = run_cli("report", "--help")
    assert r.returncode == 0
    flat = " ".join(r.stdout.split())
    assert "fireval-report.html" in flat and "never over an existing file" in flat


def test_names_apply_to_the_per_query_table(clip4clip: Path, jsfusion: Path, tmp_path: Path):
    """``--names tvr``: the JSON said R@1 but the per-query file said C@1."""
    js, pq = tmp_path / "r.json", tmp_path / "pq.tsv"
    r = run_cli(
        "evaluate", clip4clip, "-c", jsfusion, "-q", "-d", "t2v", "-m", "C@1,Recall@5", "--names", "tvr",
        "--no-checks", "--json", js, "--per-query", pq,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    in_json = {rec["measure"] for rec in json.loads(js.read_text())["results"]}
    header, *lines = pq.read_text().splitlines()
    col = header.split("\t").index("measure")
    in_table = {ln.split("\t")[col] for ln in lines}
    assert in_json == in_table == {"R@1", "Recall@5"}


def test_queries_absent_from_a_trec_run_are_named_not_called_a_cut(jsfusion: Path, tmp_path: Path):
    """5 lines of one query: "cut to its top 0 per query ... 100.0% ... in the cut" was nonsense."""
    run = tmp_path / "partial.run"
    run.write_text("\n".join(_trec_lines(jsfusion, 1, 5)) + "\n")
    r = run_cli("evaluate", run, "-c", jsfusion, "-d", "t2v", "-m", "C@1")
    assert r.returncode == 0, r.stderr
    flat = " ".join(r.stderr.split())
    assert "999 of 1000 queries rank no document" in flat and "stay in the means" in flat
    assert "top 0" not in flat


def test_compressed_trec_run_is_named_without_its_suffixes(jsfusion: Path, tmp_path: Path):
    import gzip

    run = tmp_path / "c4c.run.gz"
    run.write_bytes(gzip.compress(("\n".join(_trec_lines(jsfusion, 3, 2)) + "\n").encode()))
    out = tmp_path / "r.json"
    r = run_cli("evaluate", run, "-c", jsfusion, "-q", "-d", "t2v", "-m", "C@1", "--no-checks", "--json", out)
    assert r.returncode == 0, r.stderr
    assert {rec["run"] for rec in json.loads(out.read_text())["results"]} == {"c4c"}


def test_collection_from_stdin_is_refused_clearly(clip4clip: Path, jsfusion: Path, tmp_path: Path):
    r = subprocess.run(
        [*FIREVAL, "evaluate", str(clip4clip), "-c", "-"],
        input=jsfusion.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert "standard input is not supported" in r.stderr and "not found" not in r.stderr
