"""A table-driven sweep of bad inputs across the verbs (issue 26; in the spirit of the red team's 425 cases).

Each case runs the CLI in-process and must end with exit code 2, exactly one line on stderr
(``fireval: error: ...``), no traceback, and no output file (nor a temporary) left behind. The
cases cover what the red team found: outputs onto a store's files, deeply nested JSON in every
JSON reader, in-memory and missing stores, incomplete pool records, label files with repeated
ids, option values checked at parse time, conflicting gold answers, control characters in
annotator names. The fixture is built once per module; each case gets a fresh copy of it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from fireval.cli import main
from fireval.core.errors import InputError

POOL_HEAD = '{"format": "fireval-pool", "version": 1}\n'
ITEM = {
    "caption": "a man",
    "caption_ids": ["ret0"],
    "video_id": "video9770",
    "runs": {"a": 1},
    "double": False,
}
DEEP = "[" * 100_000


def _pool_without(key: str) -> str:
    return POOL_HEAD + json.dumps({k: v for k, v in ITEM.items() if k != key}) + "\n"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sweep")
    np.save(d / "good.npy", np.eye(1000, dtype=np.float32))
    src = Path(__file__).resolve().parents[2] / "src" / "fireval" / "data" / "msrvtt_1ka.csv.gz"
    shutil.copy(src, d / "coll.csv.gz")
    with pytest.raises(SystemExit):
        main(["judgments", "init", "--db", str(d / "s.db")])
    (d / "deep.json").write_text(DEEP)
    (d / "deepobj.json").write_text('{"a":' * 100_000)
    (d / "deep.jsonl").write_text(DEEP + "\n")
    (d / "deep_pool.jsonl").write_text(POOL_HEAD + DEEP + "\n")
    (d / "deep_captions.jsonl").write_text(
        '{"caption_id": "c", "video_id": "video9770", "text": "x"}\n' + DEEP + "\n"
    )
    for key in ("caption_ids", "runs", "double"):
        (d / f"pool_no_{key}.jsonl").write_text(_pool_without(key))
    (d / "pool_bad_runs.jsonl").write_text(POOL_HEAD + json.dumps({**ITEM, "runs": ["a"]}) + "\n")
    gold = {"caption": "a man", "video_id": "video9770"}
    (d / "gold_conflict.jsonl").write_text(
        json.dumps({**gold, "answer": "relevant"})
        + "\n"
        + json.dumps({**gold, "answer": "irrelevant"})
        + "\n"
    )
    np.savez(
        d / "dup_ids.npz",
        rows=np.array([0, 1]),
        cols=np.array([0, 0]),
        grades=np.array([1, 1]),
        source=np.array("human"),
        caption_ids=np.array(["ret0", "ret0"]),
        video_ids=np.array(["video9770"]),
    )
    np.savez(  # a proxy relevance file whose JSON metadata is nested too deeply
        d / "deep_meta.npz",
        rows=np.array([0]),
        cols=np.array([0]),
        grades=np.array([1.0]),
        shape=np.array([1, 1]),
        caption_ids=np.array(["ret0"]),
        video_ids=np.array(["video9770"]),
        meta=np.array(DEEP),
    )
    return d


@pytest.fixture()
def work(template, tmp_path, monkeypatch) -> Path:
    d = tmp_path / "w"
    shutil.copytree(template, d)
    monkeypatch.chdir(d)
    return d


E = ["-c", "coll.csv.gz"]
EV = ["evaluate", "good.npy", *E, "--no-checks", "--json", "out.json"]
JG = ["judgments"]

#: (id, argv, words the one error line must contain)
CASES: list[tuple[str, list[str], tuple[str, ...]]] = [
    # 1. outputs onto a store's files
    ("export onto -wal", [*JG, "export", "--db", "s.db", "-o", "s.db-wal"], ("wal",)),
    ("export onto -shm", [*JG, "export", "--db", "s.db", "-o", "s.db-shm"], ("shm",)),
    (
        "export provenance onto store",
        [*JG, "export", "--db", "s.db", "-o", "out.json", "--provenance", "s.db"],
        ("s.db",),
    ),
    ("evaluate json onto -journal", ["evaluate", "good.npy", *E, "--json", "s.db-journal"], ("journal",)),
    ("stats json onto store", [*JG, "stats", "--db", "s.db", "--json", "s.db"], ("s.db",)),
    ("pool onto -wal", ["pool", "good.npy", *E, "-o", "s.db-wal"], ("wal",)),
    ("report onto store", ["report", "good.npy", *E, "-o", "s.db"], ("SQLite",)),
    # 3. stores: only init creates; in-memory refused
    ("init in-memory", [*JG, "init", "--db", "sqlite://"], ("in-memory",)),
    ("status missing", [*JG, "status", "--db", "missing.db"], ("judgments init",)),
    ("load missing store", [*JG, "load", "pool_no_double.jsonl", "--db", "missing.db"], ("double",)),
    (
        "add-annotator missing",
        [*JG, "add-annotator", "bob", "--db", "sqlite:///missing.db"],
        ("judgments init",),
    ),
    ("evaluate -l in-memory", [*EV, "-l", "sqlite://"], ("in-memory",)),
    ("evaluate -l missing url", [*EV, "-l", "sqlite:///missing.db"], ("judgments init",)),
    # 6. deeply nested JSON in every reader
    ("collection json", ["evaluate", "good.npy", "-c", "deep.json", "--json", "out.json"], ("nested",)),
    (
        "collection json object",
        ["evaluate", "good.npy", "-c", "deepobj.json", "--json", "out.json"],
        ("nested",),
    ),
    ("collection jsonl", ["evaluate", "good.npy", "-c", "deep.jsonl", "--json", "out.json"], ("nested",)),
    ("fire json labels", [*EV, "-l", "deep.json"], ("nested",)),
    ("stats fire json", [*JG, "stats", "deep.json", "--json", "out.json"], ("nested",)),
    (
        "video captions",
        ["labels", "auto", "--threshold", "0.5", *E, "--video-captions", "deep.json", "-o", "out.npz"],
        ("nested",),
    ),
    (
        "video captions jsonl",
        [
            "labels",
            "auto",
            "--threshold",
            "0.5",
            *E,
            "--video-captions",
            "deep_captions.jsonl",
            "-o",
            "out.npz",
        ],
        ("nested",),
    ),
    (
        "train captions",
        ["report", "good.npy", *E, "--no-checks", "--train-captions", "deep.json", "-o", "out.html"],
        ("nested",),
    ),
    ("pool file", [*JG, "load", "deep_pool.jsonl", "--db", "s.db"], ("nested",)),
    ("gold file", [*JG, "load", "--gold", "deep.jsonl", "--db", "s.db"], ("nested",)),
    ("pool -l", ["pool", "good.npy", *E, "--no-checks", "-l", "deep.json", "-o", "out.jsonl"], ("nested",)),
    ("proxies build -c", ["proxies", "build", "-c", "deep.json", "-o", "out.npz"], ("nested",)),
    ("verify-export", [*JG, "verify-export", "deep.json", "--provenance", "deep.json"], ("nested",)),
    ("proxy relevance meta", ["proxies", "ivr", "good.npy", *E, "-l", "deep_meta.npz"], ("nested",)),
    ("check -c", ["check", "good.npy", "-c", "deep.json", "--json", "out.json"], ("nested",)),
    # 7. options checked when parsed
    ("--sim bogus", [*EV, "--sim", "bogus"], ("--sim",)),
    ("--pool bogus", [*EV, "--pool", "bogus"], ("--pool",)),
    ("--precedence twice", [*EV, "--precedence", "instance,instance"], ("--precedence", "twice")),
    (
        "compare --precedence twice",
        ["compare", "good.npy", "good.npy", *E, "--precedence", "human,human"],
        ("twice",),
    ),
    ("budget --precedence unknown", ["budget", "good.npy", *E, "--precedence", "humans"], ("--precedence",)),
    (
        "report --precedence twice",
        ["report", "good.npy", *E, "-o", "out.html", "--precedence", "auto,instance,auto"],
        ("twice",),
    ),
    ("ivr threshold 2", ["proxies", "ivr", "good.npy", "-l", "x.npz", "--threshold", "2"], ("--threshold",)),
    (
        "ivr threshold -1",
        ["proxies", "ivr", "good.npy", "-l", "x.npz", "--threshold", "-1"],
        ("--threshold",),
    ),
    (
        "ivr threshold nan",
        ["proxies", "ivr", "good.npy", "-l", "x.npz", "--threshold", "nan"],
        ("--threshold",),
    ),
    (
        "serve javascript template",
        ["serve", "--db", "s.db", "--video-url-template", "javascript:alert(1)//{video_id}"],
        ("http",),
    ),
    (
        "serve data template",
        ["serve", "--db", "s.db", "--video-url-template", "data:text/html,{video_id}"],
        ("http",),
    ),
    (
        "serve protocol-relative",
        ["serve", "--db", "s.db", "--video-url-template", "//evil/{video_id}"],
        ("http",),
    ),
    ("serve --video-ext path", ["serve", "--db", "s.db", "--video-ext", "/../../x"], ("--video-ext",)),
    ("serve --video-ext no dot", ["serve", "--db", "s.db", "--video-ext", "mp4/../x"], ("--video-ext",)),
    ("serve in-memory", ["serve", "--db", "sqlite://"], ("in-memory",)),
    (
        "serve --forwarded-allow-ips bogus",
        ["serve", "--db", "s.db", "--forwarded-allow-ips", "localhost"],
        ("--forwarded-allow-ips",),
    ),
    (
        "load --replace without --gold",
        [*JG, "load", "pool_no_runs.jsonl", "--db", "s.db", "--replace"],
        ("--replace",),
    ),
    (
        "labels auto --threshold 3",
        ["labels", "auto", *E, "--threshold", "3", "-o", "out.npz"],
        ("--threshold",),
    ),
    (
        "labels auto --percentile nan",
        ["labels", "auto", *E, "--percentile", "nan", "-o", "out.npz"],
        ("--percentile",),
    ),
    # 8. incomplete records
    (
        "pool without caption_ids",
        [*JG, "load", "pool_no_caption_ids.jsonl", "--db", "s.db"],
        (":2:", "caption_ids"),
    ),
    ("pool without runs", [*JG, "load", "pool_no_runs.jsonl", "--db", "s.db"], (":2:", "runs")),
    ("pool without double", [*JG, "load", "pool_no_double.jsonl", "--db", "s.db"], (":2:", "double")),
    ("pool runs not a map", [*JG, "load", "pool_bad_runs.jsonl", "--db", "s.db"], (":2:", "runs")),
    ("npz repeated caption id", [*EV, "-l", "dup_ids.npz"], ("repeats", "ret0")),
    # 4. gold
    (
        "gold two answers",
        [*JG, "load", "--gold", "gold_conflict.jsonl", "--db", "s.db"],
        ("line 1", "line 2"),
    ),
    # 5. annotator names
    ("name with newline", [*JG, "add-annotator", "x\nfake\tadmin\tTOKEN", "--db", "s.db"], ("control",)),
    ("name with ESC", [*JG, "add-annotator", "x\x1b]0;pwned\x07", "--db", "s.db"], ("control",)),
    ("name with tab", [*JG, "add-annotator", "a\tb", "--db", "s.db"], ("control",)),
]


#: options checked when the command line is parsed (their Typer callbacks), before the command body
#: runs: each case must also fail in parsing alone (test_checked_at_parse_time)
EVQ = ["evaluate", "good.npy", *E, "--no-checks", "-q", "--json", "out.json"]
POOL = ["pool", "good.npy", *E, "-o", "out.jsonl"]
PLAN = ["plan", "good.npy", *E, "--budget", "5", "-o", "out.jsonl"]
SERVE = ["serve", "--db", "s.db"]
EXPLORE = ["explore", "good.npy", *E]
STATS = [*JG, "stats", "--db", "s.db"]
PARSE_CASES: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("serve --gold-rate 1", [*SERVE, "--gold-rate", "1"], ("--gold-rate", "[0, 1)")),
    ("serve --gold-rate -0.1", [*SERVE, "--gold-rate", "-0.1"], ("--gold-rate",)),
    ("serve --gold-rate nan", [*SERVE, "--gold-rate", "nan"], ("--gold-rate",)),
    ("serve --explore-k 0", [*SERVE, "--explore-k", "0"], ("--explore-k", ">= 1")),
    ("serve --explore-k -3", [*SERVE, "--explore-k", "-3"], ("--explore-k",)),
    ("serve --port 70000", [*SERVE, "--port", "70000"], ("--port", "65535")),
    ("serve --workers 0", [*SERVE, "--workers", "0"], ("--workers must be >= 1",)),
    ("serve --max-body-bytes 0", [*SERVE, "--max-body-bytes", "0"], ("--max-body-bytes",)),
    ("serve --log-level loud", [*SERVE, "--log-level", "loud"], ("--log-level", "warning")),
    ("explore --port -1", [*EXPLORE, "--port", "-1"], ("--port",)),
    ("explore -k 0", [*EXPLORE, "-k", "0"], ("--explore-k",)),
    (
        "explore javascript template",
        [*EXPLORE, "--video-url-template", "javascript:alert(1)//{video_id}"],
        ("http",),
    ),
    ("explore --video-ext path", [*EXPLORE, "--video-ext", "/../../x"], ("--video-ext",)),
    ("stats --level 1", [*STATS, "--level", "1"], ("--level", "(0, 1)")),
    ("stats --level 0", [*STATS, "--level", "0"], ("--level",)),
    ("stats --level 1.5", [*STATS, "--level", "1.5"], ("--level",)),
    ("stats --level nan", [*STATS, "--level", "nan"], ("--level",)),
    ("stats --resamples 0", [*STATS, "--resamples", "0"], ("--resamples", ">= 1")),
    ("stats --resamples -5", [*STATS, "--resamples", "-5"], ("--resamples",)),
    ("stats --seed -1", [*STATS, "--seed", "-1"], ("--seed",)),
    ("stats --seed 2**32", [*STATS, "--seed", str(2**32)], ("--seed",)),
    (
        "add-annotator --role root",
        [*JG, "add-annotator", "bob", "--db", "s.db", "--role", "root"],
        ("--role",),
    ),
    ("pool --depth 0", [*POOL, "--depth", "0"], ("--depth",)),
    ("pool -k -1", [*POOL, "-k", "-1"], ("--depth",)),
    ("pool --double-fraction 2", [*POOL, "--double-fraction", "2"], ("--double-fraction",)),
    ("pool --double-fraction nan", [*POOL, "--double-fraction", "nan"], ("--double-fraction",)),
    ("pool --seed -1", [*POOL, "--seed", "-1"], ("--seed",)),
    ("pool --budget 0", [*POOL, "--budget", "0"], ("--budget",)),
    ("pool --budget -2", [*POOL, "--budget", "-2"], ("--budget",)),
    ("pool --max-queries 0", [*POOL, "--max-queries", "0"], ("--max-queries",)),
    ("pool --direction up", [*POOL, "--direction", "up"], ("--direction",)),
    ("pool --run-direction up", [*POOL, "--run-direction", "up"], ("--run-direction",)),
    ("check --k 0", ["check", "good.npy", *E, "--k", "0"], ("--k",)),
    ("check --seed -1", ["check", "good.npy", *E, "--seed", "-1"], ("--seed",)),
    ("check --run-direction up", ["check", "good.npy", *E, "--run-direction", "up"], ("--run-direction",)),
    ("evaluate --ties random", [*EVQ, "--ties", "random"], ("--ties",)),
    ("evaluate --unjudged lower,bogus", [*EVQ, "--unjudged", "lower,bogus"], ("--unjudged",)),
    ("evaluate --unjudged empty", [*EVQ, "--unjudged", ","], ("--unjudged",)),
    ("evaluate --preset fire", [*EVQ, "--preset", "fire"], ("--preset",)),
    ("evaluate --block-size 0", [*EVQ, "--block-size", "0"], ("--block-size",)),
    ("evaluate --block-size -1", [*EVQ, "--block-size", "-1"], ("--block-size",)),
    ("evaluate --run-direction up", [*EVQ, "--run-direction", "up"], ("--run-direction",)),
    ("evaluate --min-grade 0", [*EVQ, "--min-grade", "0"], ("--min-grade",)),
    ("evaluate --min-grade nan", [*EVQ, "--min-grade", "nan"], ("--min-grade",)),
    (
        "compare --min-grade -1",
        ["compare", "good.npy", "good.npy", *E, "--min-grade", "-1"],
        ("--min-grade",),
    ),
    ("budget --min-grade 0", ["budget", "good.npy", *E, "--min-grade", "0"], ("--min-grade",)),
    (
        "report --min-grade 0",
        ["report", "good.npy", *E, "-o", "out.html", "--min-grade", "0"],
        ("--min-grade",),
    ),
    ("evaluate -m bogus", [*EVQ, "-m", "C@1,bogus"], ("-m/--measures", "bogus")),
    ("evaluate -m empty", [*EVQ, "-m", ","], ("-m/--measures",)),
    ("report -m bogus", ["report", "good.npy", *E, "-o", "out.html", "-m", "nDCG@x"], ("-m/--measures",)),
    ("compare -m empty", ["compare", "good.npy", "good.npy", *E, "-m", ","], ("-m/--measures",)),
    ("compare --seed -4", ["compare", "good.npy", "good.npy", *E, "--seed", "-4"], ("--seed",)),
    ("budget --seed 2**32", ["budget", "good.npy", *E, "--seed", str(2**32)], ("--seed",)),
    ("report --seed -1", ["report", "good.npy", *E, "-o", "out.html", "--seed", "-1"], ("--seed",)),
    ("plan --seed -1", [*PLAN, "--seed", "-1"], ("--seed",)),
    ("plan --run-direction up", [*PLAN, "--run-direction", "up"], ("--run-direction",)),
    ("plan --precedence twice", [*PLAN, "--precedence", "instance,instance"], ("twice",)),
    ("plan --min-grade -1", [*PLAN, "--min-grade", "-1"], ("--min-grade",)),
    (
        "estimate --run-direction up",
        ["estimate", "good.npy", *E, "--run-direction", "up"],
        ("--run-direction",),
    ),
    ("estimate --precedence twice", ["estimate", "good.npy", *E, "--precedence", "human,human"], ("twice",)),
    ("estimate --min-grade 0", ["estimate", "good.npy", *E, "--min-grade", "0"], ("--min-grade",)),
    (
        "labels auto --matcher fuzzy",
        ["labels", "auto", *E, "--matcher", "fuzzy", "-o", "out.npz"],
        ("--matcher",),
    ),
    (
        "proxies random --zero-relevant skip",
        ["proxies", "random", "-l", "x.npz", "--zero-relevant", "skip"],
        ("--zero-relevant",),
    ),
    (
        "proxies stats --correlation-direction up",
        ["proxies", "stats", "-l", "x.npz", "--correlation-direction", "up"],
        ("--correlation-direction",),
    ),
]
CASES += PARSE_CASES


def _outputs(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith(("out", ".out", ".s.db")))


@pytest.mark.parametrize(("argv", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(work, capsys, argv, words):
    store = (work / "s.db").read_bytes()
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    assert info.value.code == 2, (out, err)
    assert "Traceback" not in err and "Error" not in err.split(":", 1)[0], err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fireval: error: "), err
    for w in words:
        assert w in lines[0], (w, err)
    assert _outputs(work) == [], _outputs(work)
    assert (work / "s.db").read_bytes() == store
    assert not (work / "missing.db").exists()


def _parse_only(argv: list[str]) -> None:
    """Parse ``argv`` as the CLI would, without running the command body (callbacks run)."""
    import typer

    from fireval.cli import COMMAND_MODULES, make_app

    root = typer.main.get_command(make_app((COMMAND_MODULES[argv[0]],)))
    ctx = root.context_class(root)
    cmd, rest = root.get_command(ctx, argv[0]), argv[1:]
    if hasattr(cmd, "list_commands"):  # a group: judgments, proxies, labels
        cmd, rest = cmd.get_command(ctx, argv[1]), argv[2:]
    cmd.make_context(argv[0], list(rest))


@pytest.mark.parametrize(("argv", "words"), [c[1:] for c in PARSE_CASES], ids=[c[0] for c in PARSE_CASES])
def test_checked_at_parse_time(argv, words):
    """The option's value is refused by its parse-time callback, whatever the command body does."""
    with pytest.raises(InputError) as info:
        _parse_only(argv)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_parse_time_value_lists_match_the_library():
    """The enum values spelled in cli.common (to keep parsing free of library imports) are the library's."""
    from fireval.cli import common
    from fireval.core import Direction
    from fireval.judging.schema import ROLES
    from fireval.metrics.evaluate import UNJUDGED_MODES
    from fireval.metrics.presets import PRESETS
    from fireval.metrics.ties import TIE_POLICIES
    from fireval.proxies.matchers import MATCHERS

    assert tuple(d.value for d in Direction) == common.DIRECTIONS
    assert common.TIE_POLICIES == TIE_POLICIES
    assert common.UNJUDGED_MODES == UNJUDGED_MODES
    assert common.PRESETS == PRESETS
    assert common.ROLES == ROLES
    assert common.MATCHERS == MATCHERS


def test_good_values_still_parse():
    """Defaults and the edges of each range are accepted (a callback must not refuse valid input)."""
    for argv in (
        [
            *SERVE,
            "--gold-rate",
            "0",
            "--explore-k",
            "1",
            "--port",
            "0",
            "--workers",
            "1",
            "--log-level",
            "INFO",
        ],
        [*STATS, "--level", "0.5", "--resamples", "1", "--seed", str(2**32 - 1)],
        [*POOL, "-k", "1", "--double-fraction", "1", "--budget", "1", "--direction", "V2T"],
        [*EVQ, "--ties", "docid", "--unjudged", "lower,worst", "--preset", "wray2021", "--block-size", "1"],
        ["labels", "auto", *E, "--matcher", "Word", "-o", "out.npz"],
        ["proxies", "random", "-l", "x.npz", "--zero-relevant", "drop"],
    ):
        _parse_only(argv)
