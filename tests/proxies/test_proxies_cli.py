from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fireval.cli import main

CSV = """key,vid_key,video_id,sentence
ret0,msr0,video0,a man is riding a horse
ret1,msr1,video1,a woman is cooking pasta
ret2,msr2,video2,a man rides a horse on the beach
"""


def _run(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.fixture()
def csv_path(tmp_path: Path) -> Path:
    p = tmp_path / "toy.csv"
    p.write_text(CSV)
    return p


def test_proxies_build_writes_npz(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import ProxyRelevance

    out = tmp_path / "bow.npz"
    assert (
        _run(["proxies", "build", "-c", str(csv_path), "--proxy", "bow", "--agg", "max", "-o", str(out)]) == 0
    )
    rel = ProxyRelevance.load(out)
    assert rel.grades.shape == (3, 3)
    np.testing.assert_allclose(np.diag(rel.grades), 1.0)
    # {man, ride, horse} vs {man, ride, horse, beach}
    assert rel.grades[0, 2] == pytest.approx(3 / 4)
    assert "proxy:bow" in capsys.readouterr().out


def test_proxies_build_user_errors_exit_2(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert (
        _run(["proxies", "build", "-c", str(csv_path), "--proxy", "nope", "-o", str(tmp_path / "x.npz")]) == 2
    )
    assert "unknown proxy" in capsys.readouterr().err
    assert _run(["proxies", "build", "-c", str(tmp_path / "missing.csv"), "-o", str(tmp_path / "x.npz")]) == 2
    assert not (tmp_path / "x.npz").exists()


def test_labels_auto(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from fireval.formats.labels import read_graded_labels
    from fireval.formats.msrvtt import read_msrvtt_jsfusion

    out = tmp_path / "auto.npz"
    code = _run(
        ["labels", "auto", "-c", str(csv_path), "--matcher", "char", "--threshold", "0.5", "-o", str(out)]
    )
    assert code == 0
    j = read_graded_labels(out, read_msrvtt_jsfusion(csv_path))
    assert j.sources == ("auto:char",)
    assert (0, 2) in set(zip(j.rows.tolist(), j.cols.tolist()))
    assert _run(["labels", "auto", "-c", str(csv_path), "-o", str(out)]) == 2
    assert "--threshold" in capsys.readouterr().err
    assert _run(["labels", "auto", "-c", str(csv_path), "--threshold", "3", "-o", str(out)]) == 2


def test_proxies_ivr(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "bow.npz"
    assert _run(["proxies", "build", "-c", str(csv_path), "-o", str(out)]) == 0
    scores = np.array([[0.1, 0.0, 0.9], [0.0, 1.0, 0.2], [0.3, 0.1, 0.8]], dtype=np.float32)
    np.save(tmp_path / "run.npy", scores)
    capsys.readouterr()
    code = _run(
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
        _run(
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
