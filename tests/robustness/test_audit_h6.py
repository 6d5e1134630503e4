"""Black-box audit (H6): regressions for defects found by checking outputs against cases the docs
do not show, and an oracle written from the definitions (docs/metrics.md), never from fireval's code.

* A run that ranks nothing (every row one tie) was reported as "rows or columns in another order"
  by the alignment check and "not in the same row/column order" by the agreement check; its top-K
  is a random draw, so neither can be told.
* Such a run (or one with most queries absent from a TREC run) printed C@1 = 0.1% and MnR = 500.5
  without the truncation mark, though every value is an expectation over a random order.
* A one-video gallery: every finite row was counted as "ranks no document" (a one-document row is
  trivially one tie) while C@1 = 100%.
* `fireval compare` gave bare p-values for MnR/C@100 differences of runs cut to their top 50
  (expectations over an undefined tail, which `evaluate` marks with †).
* `fireval compare` and `fireval budget` did not say which direction their numbers are for
  (stdout or `--json`), though `-d v2t` changes every number.
* The report's breakdowns by caption showed runs that fail the alignment check (their rows are not
  the collection's captions) without a mark, when the two runs agree with each other (GRAM, VAST).
* Per-query values of C@K, P@K, Recall@K, RR, AP, nDCG@10 and the first relevant rank, with many
  captions per video in both directions and ties straddling cutoffs, agree with brute force over
  every ordering of the tie groups.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fireval.checks import Status, run_checks
from fireval.cli import main
from fireval.core import Collection, Run

WORDS = [
    "man",
    "woman",
    "dog",
    "cat",
    "car",
    "guitar",
    "kitchen",
    "soccer",
    "ball",
    "cooking",
    "singing",
    "dancing",
    "river",
    "beach",
    "game",
    "computer",
    "baby",
    "horse",
    "street",
    "music",
    "chef",
    "pool",
    "swimming",
    "snow",
    "mountain",
    "news",
    "anchor",
    "crowd",
    "video",
]


def _exit(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    cap = capsys.readouterr()
    return info.value.code or 0, cap.out, cap.err


def _msrvtt(shared: Path) -> tuple[Collection, np.ndarray]:
    df = pd.read_csv(shared / "msrvtt" / "MSRVTT_JSFUSION_test.csv")
    coll = Collection.from_pairs(
        "msrvtt", list(zip(df.key, df.video_id, df.sentence)), video_ids=list(df.video_id)
    )
    return coll, np.load(shared / "msrvtt" / "sims" / "clip4clip_msrvtt.npy").astype(np.float64)


# ------------------------------------------------------------------- runs that rank nothing


def test_constant_run_is_not_called_misordered(shared_data):
    coll, sims = _msrvtt(shared_data)
    runs = {"clip4clip": Run("clip4clip", scores=sims), "const": Run("const", scores=np.ones_like(sims))}
    rep = run_checks(coll, runs)
    assert rep.runs["clip4clip"]["alignment"].status is Status.PASS
    const = rep.runs["const"]
    assert const["alignment"].status is Status.INCONCLUSIVE, const["alignment"].message
    assert "another order" not in const["alignment"].message
    assert const["truncation"].status is Status.WARN  # the truncation check says it ranks nothing
    # ... and every value of it is an expectation over a random order: all marked, in both directions
    names = ["C@1", "C@10", "MdR", "MnR", "AP", "nDCG@10"]
    for d in ("t2v", "v2t"):
        assert rep.marked_measures("const", names, d) == names
        assert rep.marked_measures("clip4clip", names, d) == []
    (pair,) = rep.pairs
    assert pair.result.status is Status.INCONCLUSIVE, pair.result.message
    assert not rep.misaligned_pairs()


def test_constant_rows_are_left_out_of_alignment_and_agreement(shared_data):
    coll, sims = _msrvtt(shared_data)
    part = sims.copy()
    part[::3] = 0.5  # a third of the rows rank nothing; the rest is clip4clip
    rep = run_checks(coll, {"clip4clip": Run("clip4clip", scores=sims), "part": Run("part", scores=part)})
    assert rep.runs["part"]["alignment"].status is Status.PASS
    t2v = rep.pairs[0].result.figures["directions"]["t2v"]
    assert rep.pairs[0].result.status is Status.PASS
    assert t2v["queries"] == 1000 - len(range(0, 1000, 3))
    # on the rows both rank, the two runs are the same run
    assert t2v["overlap"] == pytest.approx(1.0)


def test_single_video_gallery_ranks_its_video():
    coll = Collection.from_pairs(
        "one", [("c0", "v0", "a man is cooking"), ("c1", "v0", "a chef cooks"), ("c2", "v0", "food")]
    )
    rep = run_checks(coll, {"r": Run("r", scores=np.array([[0.3], [0.1], [0.3]]))})
    trunc = rep.runs["r"]["truncation"]
    assert trunc.status is Status.PASS, trunc.message
    assert trunc.figures["directions"]["t2v"]["n_queries_unranked"] == 0
    # a -inf score is still "not retrieved"
    rep = run_checks(coll, {"r": Run("r", scores=np.array([[0.3], [-np.inf], [0.3]]))})
    assert rep.runs["r"]["truncation"].figures["directions"]["t2v"]["n_queries_unranked"] == 1


# ------------------------------------------------------------------- direction in compare / budget


@pytest.fixture()
def small(tmp_path):
    """40 captions of 8 videos (5 each) and two score matrices."""
    rng = np.random.default_rng(7)
    rows = []
    for i in range(40):
        v = i % 8
        text = " ".join(rng.choice(WORDS, 4)) + f" {WORDS[v]} {WORDS[v + 8]}"
        rows.append({"caption_id": f"c{i}", "video_id": f"v{v}", "text": text})
    coll = tmp_path / "coll.jsonl"
    coll.write_text("".join(json.dumps(r) + "\n" for r in rows))
    truth = np.arange(40)[:, None] % 8 == np.arange(8)[None, :]
    for name, sig in (("a", 1.0), ("b", 0.3)):
        np.save(tmp_path / f"{name}.npy", sig * truth + rng.normal(size=(40, 8)))
    return tmp_path


@pytest.mark.parametrize("direction", ["t2v", "v2t"])
def test_compare_says_which_direction(small, capsys, direction):
    out_json = small / "cmp.json"
    code, out, err = _exit(
        [
            "compare", str(small / "a.npy"), str(small / "b.npy"), "-c", str(small / "coll.jsonl"),
            "-d", direction, "--resamples", "200", "--no-checks", "-q", "--json", str(out_json),
        ],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert f"direction: {direction}" in out.splitlines()[0]
    rows = json.loads(out_json.read_text())["comparisons"]
    assert rows and all(r["direction"] == direction for r in rows)


def test_budget_says_which_direction(small, capsys):
    code, out, err = _exit(
        [
            "budget", str(small / "a.npy"), "-c", str(small / "coll.jsonl"), "-d", "v2t",
            "--n", "4,8", "--resamples", "200", "-q",
        ],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[0].startswith("direction: v2t")


def test_compare_marks_values_of_truncated_runs(shared_data, tmp_path, capsys, monkeypatch):
    """GRAM and VAST are cut to their top 50: their MnR and C@100 differences are over an undefined
    tail, as `evaluate` marks them; compare gave them bare p-values."""
    monkeypatch.setenv("COLUMNS", "200")  # the tab-separated form (at 80 columns it is split in blocks)
    sims = shared_data / "msrvtt" / "sims"
    out_json = tmp_path / "c.json"
    code, out, err = _exit(
        [
            "compare", str(sims / "GRAM_msrvtt.npy"), str(sims / "VAST_msrvtt.npy"),
            "-c", str(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"), "-m", "MnR,C@100,C@1",
            "--resamples", "200", "-q", "--json", str(out_json),
        ],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    rows = {ln.split("\t")[0]: ln.split("\t") for ln in out.splitlines() if "\tGRAM_msrvtt\t" in ln}
    assert rows["MnR"][3].endswith("†") and rows["C@100"][3].endswith("†")
    assert not rows["C@1"][3].endswith("†")
    assert any(ln.startswith("† depends on a truncated run's tail") for ln in out.splitlines())
    got = {r["measure"]: r["truncated"] for r in json.loads(out_json.read_text())["comparisons"]}
    assert got == {"MnR": ["GRAM_msrvtt", "VAST_msrvtt"], "C@100": ["GRAM_msrvtt", "VAST_msrvtt"], "C@1": []}


# ------------------------------------------------------------------- report breakdowns


def test_report_marks_caption_breakdowns_of_unaligned_runs(shared_data, tmp_path, capsys):
    sims = shared_data / "msrvtt" / "sims"
    md = tmp_path / "r.md"
    code, _, err = _exit(
        [
            "report", str(sims / "GRAM_msrvtt.npy"), str(sims / "VAST_msrvtt.npy"),
            "-c", str(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"), "-o", str(tmp_path / "r.html"),
            "--markdown", str(md), "--resamples", "200", "-q",
        ],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    text = md.read_text()
    heads = [ln for ln in text.splitlines() if ln.startswith("### C@1 by caption length")]
    assert heads and all(h.endswith("GRAM_msrvtt vs VAST_msrvtt!") for h in heads), heads
    assert "failed the alignment check (GRAM_msrvtt, VAST_msrvtt)" in text
    # they agree with each other, so their paired comparison keeps no mark
    sig = [ln for ln in text.splitlines() if ln.startswith("| C@1 | GRAM_msrvtt |")]
    assert sig and "!" not in sig[0]
    # every per-direction table says its direction
    assert "### Paired significance (t2v; original labels)" in text
    assert "### Bootstrap 95% confidence intervals (t2v)" in text


# ------------------------------------------------------------------- oracle from the definitions


def _placements(scores: np.ndarray, rel: np.ndarray):
    """Every equally likely placement of the relevant docs inside their tie groups: (p, ranks)."""
    per_group = []
    for v in np.unique(scores[rel])[::-1]:
        g = int((scores > v).sum())
        t = int((scores == v).sum())
        r = int(((scores == v) & rel).sum())
        combos = list(itertools.combinations(range(1, t + 1), r))
        per_group.append([(1 / len(combos), [g + c for c in combo]) for combo in combos])
    for choice in itertools.product(*per_group):
        yield math.prod(p for p, _ in choice), sorted(x for _, rk in choice for x in rk)


def _oracle(scores: np.ndarray, rel: np.ndarray) -> dict[str, float]:
    n_rel = int(rel.sum())
    idcg = sum(1 / math.log2(i + 1) for i in range(1, min(n_rel, 10) + 1))
    out = dict.fromkeys(["C@1", "C@5", "P@5", "Recall@5", "RR", "AP", "nDCG@10", "rank"], 0.0)
    for p, ranks in _placements(scores, rel):
        hits5 = sum(r <= 5 for r in ranks)
        out["C@1"] += p * (ranks[0] == 1)
        out["C@5"] += p * (hits5 > 0)
        out["P@5"] += p * hits5 / 5
        out["Recall@5"] += p * hits5 / n_rel
        out["RR"] += p / ranks[0]
        out["AP"] += p * sum((i + 1) / r for i, r in enumerate(ranks)) / n_rel
        out["nDCG@10"] += p * sum(1 / math.log2(r + 1) for r in ranks if r <= 10) / idcg
        out["rank"] += p * ranks[0]
    return out


def test_per_query_values_match_brute_force_with_many_captions_per_video(small, capsys):
    """5 captions per video: t2v has one relevant video per caption, v2t five relevant captions
    per video; scores rounded so that ties straddle the cutoffs."""
    sims = np.round(np.load(small / "a.npy") * 2) / 2
    np.save(small / "tied.npy", sims)
    coll = [json.loads(ln) for ln in (small / "coll.jsonl").read_text().splitlines()]
    cap_video = np.array([int(r["video_id"][1:]) for r in coll])
    truth = cap_video[:, None] == np.arange(8)[None, :]
    pq = small / "pq.tsv"
    code, _, err = _exit(
        [
            "evaluate", str(small / "tied.npy"), "-c", str(small / "coll.jsonl"), "-q", "--no-checks",
            "-m", "C@1,C@5,P@5,Recall@5,RR,AP,nDCG@10,MnR", "--per-query", str(pq),
        ],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    got = pd.read_csv(pq, sep="\t").pivot_table(
        index=["direction", "query"], columns="measure", values="value"
    )
    checked = 0
    for direction, mat, rel, ids in (
        ("t2v", sims, truth, [r["caption_id"] for r in coll]),
        ("v2t", sims.T, truth.T, [f"v{j}" for j in range(8)]),
    ):
        for i, qid in enumerate(ids):
            want = _oracle(mat[i], rel[i])
            row = got.loc[(direction, qid)]
            for m, v in want.items():
                assert row["MnR" if m == "rank" else m] == pytest.approx(v, abs=1e-9), (direction, qid, m)
                checked += 1
    assert checked == 8 * 48
    assert len(np.unique(sims)) < sims.size // 4  # the case has ties


# ------------------------------------------------------------------- degenerate intervals


def test_interval_of_equal_values_is_the_value():
    from fireval.analysis.bootstrap import percentile_ci

    v = np.full(1000, 0.001)  # a run that ranks nothing: C@1 = 1/1000 for every query
    iv = percentile_ci(v, n_resamples=200, seed=3)
    assert iv.low == iv.mean == iv.high == float(v.mean())


def test_report_of_a_run_that_ranks_nothing(shared_data, tmp_path, capsys):
    """Was a matplotlib traceback (a bootstrap bound past the mean by rounding: negative error bar)."""
    np.save(tmp_path / "const.npy", np.ones((1000, 1000), dtype=np.float32))
    code, out, err = _exit(
        [
            "report", str(tmp_path / "const.npy"), "-c", str(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv"),
            "-o", str(tmp_path / "r.html"), "--markdown", str(tmp_path / "r.md"), "--resamples", "200", "-q",
        ],
        capsys,
    )  # fmt: skip
    assert code == 0 and "Traceback" not in err, err
    md = (tmp_path / "r.md").read_text()
    # a degenerate interval, and marked: every value of a run that ranks nothing is a random order's
    assert "| original | const | C@1 | 0.1‡ | 0.1‡ | 0.1‡ | 1000 |" in md
    assert "| const | 0.1‡ | 0.5‡ | 1.0‡ | 0.5‡ |" in md
    assert "rank no document" in md
