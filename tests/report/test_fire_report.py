"""FIRE as published in the trust analysis and the report: defaults are the paper's, variants named."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.analysis import breakdowns
from fireval.analysis.trust import analyse
from fireval.core.errors import FirevalError
from fireval.report.build import write_report

TRAIN = [
    "a man plays guitar on the beach",
    "a dog runs in the kitchen",
    "a woman cooks food",
    "a red car drives",
]


@pytest.fixture(scope="module")
def fire(toy):  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    return analyse(
        coll,
        runs,
        sets,
        measures=["C@1", "C@10"],
        n_resamples=200,
        budget_resamples=50,
        train_captions=TRAIN,
        label_agreement=0.9,
    )


def test_published_defaults(fire, toy) -> None:  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    s = fire.settings
    assert (s["tfidf_fit"], s["fig8_similarity"], s["fig8_k"], s["examples_by"], s["examples_per_group"]) == (
        "all",
        "mean10",
        5,
        "words",
        10,
    )
    # Fig. 8 bins the mean of the top-10 train similarities, and plots C@5
    ov = breakdowns.train_test_overlap(coll.captions, TRAIN, fit="all")
    np.testing.assert_array_equal(fire.train_overlap, ov)
    c5 = {r: fire.per_query[fire.main_labels][r]["C@5"] for r in runs}
    assert fire.correctness_similarity == breakdowns.correctness_by_similarity(c5, ov)
    # Table 7 in words and characters; Fig. 3 on both label sets; Fig. 12 counts per run
    assert [r["length"] for r in fire.train_overlap_table] == ["words", "characters"]
    assert set(fire.correctness_by_labels) == set(sets) == set(fire.correctness_chars_by_labels)
    assert fire.correctness_by_labels[fire.main_labels] == fire.correctness
    assert set(fire.rank_histogram) == set(runs)
    for r in runs:
        n_pos = sum(v.size for v in fire.positive_ranks[r].values())
        assert (
            sum(
                sum(v for k, v in row.items() if k not in ("rank", "beyond"))
                for row in fire.rank_histogram[r]
            )
            == n_pos
        )
    assert len([r for r in fire.caption_examples if r["group"] == "shortest"]) == 10
    # pool bias by size ends at leave-one-out
    for row in fire.pool_bias:
        top = max(x["pool_size"] for x in fire.pool_bias_sizes if x["run"] == row["run"])
        (same,) = [
            x
            for x in fire.pool_bias_sizes
            if x["run"] == row["run"] and x["measure"] == row["measure"] and x["pool_size"] == top
        ]
        assert same["mean_drop"] == pytest.approx(row["drop"])
    # saturation rows for the percentage measures, with the noise of the agreement
    assert {(r["run"], r["measure"]) for r in fire.saturation} == {
        (r, m) for r in runs for m in ("C@1", "C@10")
    }
    assert all(r["upper"] >= r["lower"] - 1e-12 and r["eps"] > 0 for r in fire.saturation)


def test_earlier_variants_by_name(toy) -> None:  # type: ignore[no-untyped-def]
    coll, runs, sets = toy
    a = analyse(
        coll,
        runs,
        sets,
        measures=["C@1"],
        n_resamples=100,
        budget_resamples=20,
        train_captions=TRAIN,
        tfidf_fit="train",
        fig8_similarity="max",
        fig8_k=1,
        examples_by="chars",
        examples_per_group=3,
    )
    _, best = breakdowns.train_similarities(coll.captions, TRAIN, fit="train")
    c1 = {r: a.per_query[a.main_labels][r]["C@1"] for r in runs}
    assert a.correctness_similarity == breakdowns.correctness_by_similarity(c1, best)
    assert len(a.caption_examples) == 9
    assert not a.saturation or a.saturation[0]["agreement"] is None
    with pytest.raises(FirevalError, match="tfidf_fit"):
        analyse(coll, runs, sets, measures=["C@1"], tfidf_fit="test")
    with pytest.raises(FirevalError, match="agreement"):
        analyse(coll, runs, sets, measures=["C@1"], label_agreement=0.4)


def test_report_has_the_fire_tables_and_figures(fire, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fireval.report.fire_figures import build_fire_figures
    from fireval.report.plots import FIGURE_KEYS, write_figures

    out = write_report(fire, None, markdown=tmp_path / "r.md")
    keys = {t.key for t in out.tables}
    assert {"train_overlap_length", "rank_histogram", "pool_bias_sizes", "saturation"} <= keys
    md = (tmp_path / "r.md").read_text()
    assert "RBO@10 truncated" in md and "mean top-10 similarity" in md and "Ranked by length in words" in md
    figs = build_fire_figures(fire, png=False)
    assert (
        {f.key for f in figs}
        == {
            "fig-correctness-labels-words",
            "fig-correctness-labels-chara",
            "fig-rank-histogram",
            "fig-pool-size",
        }
        <= set(FIGURE_KEYS)
    )
    small = [f for f in figs if f.key == "fig-pool-size"]
    write_figures(small, tmp_path / "figs")
    assert (tmp_path / "figs" / "fig-pool-size-1col.svg").is_file()


def test_label_agreement_from_fire_json_votes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from fireval.cli.report import _labels_agreement

    votes = [["relevant", "relevant"], ["relevant", "irrelevant", "relevant"], ["irrelevant", "irrelevant"]]
    votes += [["relevant"], ["irrelevant", "irrelevant", "irrelevant"]]
    recs = [
        {
            "annotator_ids": list(range(len(v))),
            "video_id": f"v{i}",
            "query": "q",
            "annotator_labels": v,
            "label": "relevant" if v.count("relevant") * 2 > len(v) else "irrelevant",
            "models": ["CE"],
        }
        for i, v in enumerate(votes)
    ]
    path = tmp_path / "fire.json"
    path.write_text(json.dumps({"annotations": recs, "disagreements": []}))
    # pairwise agreement by definition: agreeing ordered vote pairs / all ordered pairs, items with >= 2 votes
    agree = total = 0
    for v in votes:
        if len(v) < 2:
            continue
        for i in range(len(v)):
            for j in range(len(v)):
                if i != j:
                    total += 1
                    agree += v[i] == v[j]
    assert _labels_agreement([f"fire={path}"]) == pytest.approx(agree / total)
    assert _labels_agreement([str(path)]) == pytest.approx(agree / total)
    assert _labels_agreement([str(tmp_path / "labels.npz")]) is None and _labels_agreement(None) is None


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--tfidf-fit", "test"),
        ("--fig8-similarity", "min"),
        ("--examples-by", "tokens"),
        ("--label-agreement", "0.3"),
        ("--pool-subsets", "-1"),
    ],
)
def test_report_fire_options_refused(option: str, value: str, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from fireval.cli import main

    try:
        main(["report", "x.npy", "-c", "c.csv", option, value, "-o", str(tmp_path / "r.html"), "-q"])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 2 and option in capsys.readouterr().err


@pytest.mark.skipif(__import__("shutil").which("pdflatex") is None, reason="pdflatex is not installed")
def test_fire_tables_compile_with_pdflatex(fire, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    from fireval.report.fire_tables import build_fire_tables
    from fireval.report.latex import latex_document

    doc = tmp_path / "doc.tex"
    doc.write_text(latex_document(build_fire_tables(fire, "tvr")), encoding="utf-8")
    proc = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
