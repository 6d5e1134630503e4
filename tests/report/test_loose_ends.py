"""Loose ends of the report: Δ over one query set, truncation marks, -c help, strict CSV, names.

Each test fails on the code before its fix (noted per test).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from fireval.cli import main


def _run(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _md_row(md: str, title_part: str, run: str, section: str | None = None) -> dict[str, str]:
    """The Markdown table whose heading contains ``title_part``: ``run``'s row (in row section
    ``section``, the bold heading row of a label set or Δ) as header -> cell."""
    start = md.index(title_part)
    lines = md[start:].splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("| "))
    cols = [c.strip() for c in lines[i].strip("|").split("|")]
    j = (
        i + 2
        if section is None
        else next(k for k, ln in enumerate(lines) if ln.startswith(f"| **{section}** "))
    )
    row = next(ln for ln in lines[j:] if ln.startswith(f"| {run} "))
    return dict(zip(cols, [c.strip() for c in row.strip("|").split("|")], strict=True))


# ----------------------------------------------------------------------------- 1. Δ over one query set

N = 6  # captions = videos (one caption per video, as MSR-VTT 1k-A)


@pytest.fixture
def tiny(tmp_path: Path, write_fire_json, fire_annotation) -> dict[str, Path]:
    """A 6 × 6 JSFusion collection, one run, and FIRE labels that empty query 0 and help query 1.

    The run ranks every caption's own video first except caption 1, which ranks video 3 first.
    The FIRE JSON says caption 0's own video is irrelevant (with --precedence human,instance
    query 0 loses its only positive) and video 3 is relevant for caption 1.
    """
    captions = ["a man cooks pasta", "a dog runs", "a red car", "two kids sing", "a cat sleeps", "rain falls"]
    csv_path = tmp_path / "tiny.csv"
    csv_path.write_text(
        "key,vid_key,video_id,sentence\n"
        + "".join(f"ret{i},msr{i},video{i},{c}\n" for i, c in enumerate(captions)),
        encoding="utf-8",
    )
    scores = np.eye(N) + 0.01 * np.arange(N)[None, :]  # distinct, own video first
    scores[1, 3] = 2.0  # caption 1: video 3 first, own video second
    run = tmp_path / "run.npy"
    np.save(run, scores)
    fire = write_fire_json(
        [
            fire_annotation(captions[0], "video0", label="irrelevant"),
            fire_annotation(captions[1], "video3", label="relevant"),
        ]
    )
    return {"collection": csv_path, "run": run, "fire": fire, "scores": scores}  # type: ignore[dict-item]


def _c1_oracle(scores: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """C@1 per query from the definition (NaN without a relevant video)."""
    out = np.full(scores.shape[0], np.nan)
    for q in range(scores.shape[0]):
        if rel[q].any():
            out[q] = float(rel[q, int(np.argmax(scores[q]))])
    return out


def test_delta_over_common_queries(tiny: dict, tmp_path: Path) -> None:
    """Before: augmented was averaged over its own 5 queries and Δ over the 5 queries defined under
    both (+20.0); now both label sets and Δ are over the same 6 queries, query 0 a miss (+0.0)."""
    md = tmp_path / "r.md"
    tex = tmp_path / "r.tex"
    argv = [
        "report",
        str(tiny["run"]),
        "-c",
        str(tiny["collection"]),
        "-l",
        str(tiny["fire"]),
        "--precedence",
        "human,instance",
        "-m",
        "C@1,MnR",
        "--resamples",
        "200",
        "--markdown",
        str(md),
        "--latex",
        str(tex),
        "--out",
        str(tmp_path / "r.html"),
        "--no-checks",
        "-q",
    ]
    assert _run(argv) == 0
    # independent oracle over the union of queries with a positive under either label set
    scores = tiny["scores"]
    orig = np.eye(N, dtype=bool)
    aug = orig.copy()
    aug[0, 0] = False
    aug[1, 3] = True
    q = orig.any(1) | aug.any(1)
    c_orig = np.nan_to_num(_c1_oracle(scores, orig))[q]  # no positive: a miss (0)
    c_aug = np.nan_to_num(_c1_oracle(scores, aug))[q]
    assert q.sum() == N
    text = md.read_text(encoding="utf-8")
    orig_row, aug_row, delta = (_md_row(text, "Results", "run", g) for g in ("original", "augmented", "Δ"))
    assert orig_row["t2v C@1"] == f"{100 * c_orig.mean():.1f}"
    assert aug_row["t2v C@1"] == f"{100 * c_aug.mean():.1f}"
    assert delta["t2v C@1"] == f"{100 * (c_aug - c_orig).mean():+.1f}"
    # MnR: rank of the first relevant video; a query with none is ranked below every video (N + 1)
    ranks_aug = [N + 1, 1, 1, 1, 1, 1]
    ranks_orig = [1, 2, 1, 1, 1, 1]
    assert delta["t2v MnR↓"] == f"{np.mean(ranks_aug) - np.mean(ranks_orig):+.1f}"
    # n is stated, for the label sets and for Δ, in Markdown and LaTeX
    note = text[text.index("Every label set is averaged") :].split("\n")[0]
    assert (
        "t2v: n = 6" in note
        and "Δ = augmented − original per query over those same queries (t2v: n = 6)" in note
    )
    assert "n = 6" in tex.read_text(encoding="utf-8")  # the short LaTeX note states n too


def test_scores_and_pool_bias_use_the_common_set(tiny: dict) -> None:
    """The analysis' original-vs-augmented rows (fig-scores) are over the common set with n."""
    from fireval import api
    from fireval.analysis.trust import analyse

    coll = api.load_collection(tiny["collection"])
    runs = api.load_runs([tiny["run"]], coll)
    sets = api.label_sets(coll, [tiny["fire"]], precedence=["human", "instance"])
    a = analyse(coll, runs, sets, measures=["C@1"], n_resamples=100, budget_resamples=50)
    (row,) = a.scores
    assert row["n"] == N
    assert row["augmented"] == pytest.approx(5 / 6)  # before: 1.0 (query 0 left out)
    assert row["delta"] == pytest.approx(0.0)
    assert a.settings["common_queries"] == {"t2v": N}
    assert a.paper["t2v"].delta_n == {"C@1": N}


# ----------------------------------------------------------------------------- 2. truncation marks


@pytest.mark.shared
def test_truncated_run_is_marked_in_every_table(shared_data: Path) -> None:
    """GRAM keeps its top 50 per row: C@100 and MnR become expectations over the tail and carry ‡
    in the HTML, Markdown and LaTeX tables, C@1 does not (before: no mark anywhere). Along the
    columns (v2t) the check finds a median cut of 37, so there C@50 is marked too."""
    from fireval import api
    from fireval.analysis.trust import analyse
    from fireval.checks import run_checks
    from fireval.report.build import render

    d = shared_data / "msrvtt"
    coll = api.load_collection(d / "MSRVTT_JSFUSION_test.csv")
    runs = api.load_runs([d / "sims" / "GRAM_msrvtt.npy"], coll)
    checks = run_checks(coll, runs, pairs=False)
    ms = ["C@1", "C@50", "C@100", "MnR"]
    assert checks.marked_measures("GRAM_msrvtt", ms) == ["C@100", "MnR"]
    v2t = checks.runs["GRAM_msrvtt"]["truncation"].figures["directions"]["v2t"]
    assert v2t["truncated"] and v2t["k"] < 50
    a = analyse(
        coll,
        runs,
        api.label_sets(coll, []),
        measures=ms,
        paper_directions=["v2t"],
        n_resamples=100,
        budget_resamples=50,
    )
    out = render(a, figures=False, checks=checks)
    row = _md_row(out.markdown, "Results", "GRAM_msrvtt")
    marked = {k for k, v in row.items() if v.endswith("‡")}
    assert marked == {"t2v C@100", "t2v MnR↓", "v2t C@50", "v2t C@100", "v2t MnR↓"}
    assert "‡: depends on a truncated run's tail" in out.markdown
    assert "an expectation over the tail's undefined order where the tail is a tie" in out.markdown
    assert "GRAM_msrvtt (t2v): C@100, MnR; GRAM_msrvtt (v2t): C@50, C@100, MnR" in out.markdown
    paper_html = out.html[out.html.index('data-key="paper"') :]
    paper_html = paper_html[: paper_html.index("</table>")]
    assert paper_html.count("<sup>‡</sup>") == 5
    paper_tex = out.latex[out.latex.index(r"\label{tab:fireval-paper}") :]
    paper_tex = paper_tex[: paper_tex.index(r"\end{tabular}")]
    assert paper_tex.count(r"\textsuperscript{\ddag}") == 5
    # the intervals table (t2v) marks C@100 and MnR: mean, low and high
    iv_lines = [
        ln
        for ln in out.markdown.split("### Bootstrap")[1].splitlines()
        if ln.startswith("| ") and "GRAM" in ln
    ]
    assert sum(ln.count("‡") for ln in iv_lines) == 6
    # without checks nothing is marked
    plain = render(a, figures=False)
    assert "‡" not in plain.markdown and r"\ddag" not in plain.latex


# ----------------------------------------------------------------------------- 3. -c help


@pytest.mark.parametrize(
    "argv",
    [
        ["proxies", "build", "--help"],
        ["proxies", "ivr", "--help"],
        ["labels", "auto", "--help"],
        ["check", "--help"],
        ["report", "--help"],
        ["pool", "--help"],
        ["evaluate", "--help"],
    ],
)
def test_collection_help_lists_every_layout(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: proxies/labels/check said only "JSFusion CSV, MSR-VTT/MSVD JSON, or 'example'"."""
    monkeypatch.setenv("COLUMNS", "400")  # wide enough that rich prints every help text in full
    assert _run(argv) == 0
    text = re.sub(r"[\s│╭╮╰╯─]+", " ", capsys.readouterr().out)
    for name in ("DiDeMo", "VATEX", "YouCook2", "ActivityNet", "EPIC-Kitchens", "LSMDC", "JSONL", "MSVD raw"):
        assert name in text, (argv, name)


def test_collection_help_covers_the_loader_layouts() -> None:
    """Every layout of :data:`fireval.formats.datasets.LAYOUTS` is named in the help."""
    from fireval.cli.common import COLLECTION_HELP
    from fireval.formats.datasets import LAYOUTS

    named = {
        "jsfusion": "JSFusion",
        "caption-csv": "caption CSV",
        "msvd-raw": "MSVD raw",
        "epic-kitchens": "EPIC-Kitchens",
        "lsmdc": "LSMDC",
        "jsonl": "JSONL",
        "youcook2": "YouCook2",
        "msrvtt-official": "MSR-VTT",
        "msrvtt-datainfo": "MSR-VTT",
        "msvd": "MSVD",
    }
    assert set(LAYOUTS) == set(named), "a new layout: name it in COLLECTION_HELP and here"
    for key, word in named.items():
        assert word in COLLECTION_HELP, key


# ----------------------------------------------------------------------------- 4. --train-captions


def test_train_captions_csv_extra_field_is_an_error(tmp_path: Path) -> None:
    """Before: csv.DictReader put the extra field aside and kept the sentence cut at the comma."""
    from fireval.core.errors import InputError
    from fireval.report.inputs import read_train_captions

    bad = tmp_path / "train.csv"
    bad.write_text("video_id,sentence\nvideo1,a man cooks\nvideo2,a dog, a cat play\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_train_captions(bad)
    msg = str(err.value)
    assert str(bad) in msg and ":3" in msg and "\n" not in msg
    good = tmp_path / "ok.csv"
    good.write_text('video_id,Sentence\nvideo1,a man cooks\nvideo2,"a dog, a cat play"\n', encoding="utf-8")
    assert read_train_captions(good) == ["a man cooks", "a dog, a cat play"]


def test_train_captions_csv_error_exits_2(
    tiny: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "train.csv"
    bad.write_text("video_id,sentence\nvideo1,a man cooks\nvideo2,a dog, a cat play\n", encoding="utf-8")
    out = tmp_path / "r.html"
    argv = ["report", str(tiny["run"]), "-c", str(tiny["collection"]), "--train-captions", str(bad)]
    assert _run([*argv, "--out", str(out), "--resamples", "100", "--no-checks", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert any(f"{bad}:3" in ln for ln in err) and "Traceback" not in "\n".join(err)
    assert not out.exists()


# ----------------------------------------------------------------------------- 5. docs


def test_metrics_doc_explains_names() -> None:
    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert "-m R@K" in doc and "--names tvr" in doc and "Recall@K" in doc
