from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.cli_helpers import exit_code

CSV = """key,vid_key,video_id,sentence
ret0,msr0,video0,a man is riding a horse
ret1,msr1,video1,a woman is cooking pasta
ret2,msr2,video2,a man rides a horse on the beach
"""


@pytest.fixture()
def csv_path(tmp_path: Path) -> Path:
    p = tmp_path / "toy.csv"
    p.write_text(CSV)
    return p


def test_proxies_build_writes_npz(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import ProxyRelevance

    out = tmp_path / "bow.npz"
    assert (
        exit_code(["proxies", "build", "-c", str(csv_path), "--proxy", "bow", "--agg", "max", "-o", str(out)])
        == 0
    )
    rel = ProxyRelevance.load(out)
    assert rel.grades.shape == (3, 3)
    np.testing.assert_allclose(np.diag(rel.grades), 1.0)
    # {man, ride, horse} vs {man, ride, horse, beach}
    assert rel.grades[0, 2] == pytest.approx(3 / 4)
    assert "proxy:bow" in capsys.readouterr().out


def test_proxies_build_user_errors_exit_2(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert (
        exit_code(["proxies", "build", "-c", str(csv_path), "--proxy", "nope", "-o", str(tmp_path / "x.npz")])
        == 2
    )
    assert "unknown proxy" in capsys.readouterr().err
    assert (
        exit_code(["proxies", "build", "-c", str(tmp_path / "missing.csv"), "-o", str(tmp_path / "x.npz")])
        == 2
    )
    assert not (tmp_path / "x.npz").exists()


def test_labels_auto(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from fireval.formats.labels import read_graded_labels
    from fireval.formats.msrvtt import read_msrvtt_jsfusion

    out = tmp_path / "auto.npz"
    code = exit_code(
        ["labels", "auto", "-c", str(csv_path), "--matcher", "char", "--threshold", "0.5", "-o", str(out)]
    )
    assert code == 0
    j = read_graded_labels(out, read_msrvtt_jsfusion(csv_path))
    assert j.sources == ("auto:char",)
    assert (0, 2) in set(zip(j.rows.tolist(), j.cols.tolist()))
    assert exit_code(["labels", "auto", "-c", str(csv_path), "-o", str(out)]) == 2
    assert "--threshold" in capsys.readouterr().err
    assert exit_code(["labels", "auto", "-c", str(csv_path), "--threshold", "3", "-o", str(out)]) == 2


def test_proxies_ivr(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "bow.npz"
    assert exit_code(["proxies", "build", "-c", str(csv_path), "-o", str(out)]) == 0
    scores = np.array([[0.1, 0.0, 0.9], [0.0, 1.0, 0.2], [0.3, 0.1, 0.8]], dtype=np.float32)
    np.save(tmp_path / "run.npy", scores)
    capsys.readouterr()
    code = exit_code(
        [
            "proxies",
            "ivr",
            str(tmp_path / "run.npy"),
            "-l",
            str(out),
            "-c",
            str(csv_path),
            "--threshold",
            "0.7",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    # grades >= 0.7: q0 {v0 1, v2 3/4}, q1 {v1}, q2 {v0 3/4, v2 1}; worst ranks 2, 1, 2
    # -> t2v C@1 lower 1/3, upper 1
    assert "t2v: C@1 33.3-100.0" in text, text
    assert (
        exit_code(
            [
                "proxies",
                "ivr",
                str(tmp_path / "run.npy"),
                "-l",
                str(tmp_path / "nope.npz"),
                "-c",
                str(csv_path),
            ]
        )
        == 2
    )


def test_proxies_build_preset_wray2021_and_classes(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import ProxyRelevance

    out = tmp_path / "w.npz"
    assert exit_code(["proxies", "build", "-c", str(csv_path), "--preset", "wray2021", "-o", str(out)]) == 0
    meta = ProxyRelevance.load(out).meta
    assert (meta["agg"], meta["words"], meta["preset"]) == ("words25", "surface", "wray2021")
    assert "words=surface, stop=spacy" in capsys.readouterr().out
    # explicit options override the preset
    assert exit_code(["proxies", "build", "-c", str(csv_path), "--preset", "wray2021", "--agg", "max",
                 "--words", "lemma", "-o", str(out)]) == 0  # fmt: skip
    meta = ProxyRelevance.load(out).meta
    assert (meta["agg"], meta["words"], meta["stop_words"][:5]) == ("max", "lemma", "spacy")
    verbs = tmp_path / "verbs.csv"
    verbs.write_text("id,key,instances\n0,ride,\"['ride', 'riding', 'rides']\"\n")
    syn = tmp_path / "syn.npz"
    args = [
        "proxies",
        "build",
        "-c",
        str(csv_path),
        "-p",
        "syn",
        "--verb-classes",
        str(verbs),
        "-o",
        str(syn),
    ]
    assert exit_code(args) == 0
    assert ProxyRelevance.load(syn).meta["verb_classes"] == "verbs.csv"
    capsys.readouterr()
    # class lists on another proxy, a broken class list, an unknown preset: exit 2, nothing written
    bad = tmp_path / "bad.npz"
    assert (
        exit_code(["proxies", "build", "-c", str(csv_path), "--verb-classes", str(verbs), "-o", str(bad)])
        == 2
    )
    assert "syn proxy" in capsys.readouterr().err
    verbs.write_text("id,key\n0,ride\n")
    assert exit_code([*args[:-1], str(bad)]) == 2
    assert "verbs.csv" in capsys.readouterr().err
    assert exit_code(["proxies", "build", "-c", str(csv_path), "--preset", "wray", "-o", str(bad)]) == 2
    assert not bad.exists()


def test_proxies_random_and_stats_outputs(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    import pandas as pd

    from fireval.proxies.ndcg import expected_random_ndcg
    from fireval.proxies.relevance import ProxyRelevance

    b, p = tmp_path / "bow.npz", tmp_path / "pos.npz"
    assert exit_code(["proxies", "build", "-c", str(csv_path), "--preset", "wray2021", "-o", str(b)]) == 0
    assert (
        exit_code(
            ["proxies", "build", "-c", str(csv_path), "--preset", "wray2021", "-p", "pos", "-o", str(p)]
        )
        == 0
    )
    capsys.readouterr()
    js, tsv = tmp_path / "r.json", tmp_path / "r.tsv"
    assert (
        exit_code(["proxies", "random", "-l", str(b), "-l", str(p), "--json", str(js), "--tsv", str(tsv)])
        == 0
    )
    text = capsys.readouterr().out
    assert "bow: t2v" in text and "Eq.3 mean" in text
    rows = json.loads(js.read_text())
    want = expected_random_ndcg(ProxyRelevance.load(b).grades, "zero")
    got = {r["direction"]: r["value"] for r in rows if r["proxy"] == "bow"}
    assert got["t2v"] == pytest.approx(want["t2v"], rel=1e-12) and got["mean"] == pytest.approx(
        want["mean"], rel=1e-12
    )
    assert len(pd.read_csv(tsv, sep="\t")) == 6
    sj, st = tmp_path / "s.json", tmp_path / "s.tsv"
    args = ["proxies", "stats", "-l", str(b), "-l", str(p), "--thresholds", "0,0.5,1", "--json", str(sj)]
    assert exit_code([*args, "--tsv", str(st)]) == 0
    stats = json.loads(sj.read_text())
    assert len(stats["fig4"]) == 2 * 2 * 3 and len(stats["appendix_b"]) == 1
    assert (tmp_path / "s.correlations.tsv").exists()
    assert exit_code(["proxies", "stats", "-l", str(b), "--thresholds", "0,x"]) == 2
    assert "--thresholds" in capsys.readouterr().err
    assert exit_code(["proxies", "random", "-l", str(b), "--json", str(b)]) == 2  # never overwrite an input


def test_evaluate_preset_wray2021_prints_eq3_over_every_query(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from fireval.core.run import Run
    from fireval.proxies.ndcg import wray_ndcg
    from fireval.proxies.relevance import ProxyRelevance

    lab = tmp_path / "bow.npz"
    assert exit_code(["proxies", "build", "-c", str(csv_path), "--preset", "wray2021", "-o", str(lab)]) == 0
    scores = np.array([[0.1, 0.0, 0.9], [0.0, 1.0, 0.2], [0.3, 0.1, 0.8]], dtype=np.float32)
    np.save(tmp_path / "run.npy", scores)
    capsys.readouterr()
    args = ["evaluate", str(tmp_path / "run.npy"), "-c", str(csv_path), "--no-instance", "-l", str(lab)]
    assert exit_code([*args, "--preset", "wray2021"]) == 0
    out = capsys.readouterr().out
    want = wray_ndcg(Run("r", scores=scores), ProxyRelevance.load(lab).to_judgments())
    assert f"= {100 * want['mean']:.2f}" in out and "Wray Eq. 3 (%)" in out  # the tables' unit
    assert exit_code(args) == 0  # no preset: no Eq. 3 line
    assert "Wray Eq. 3" not in capsys.readouterr().out
