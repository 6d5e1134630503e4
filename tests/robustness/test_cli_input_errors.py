"""Clean CLI errors for careless input (issue 11 items 6-7, issue 9 item 3).

Each case exits with code 2 and one line naming the file, line or option, without a traceback,
and leaves no partial output.
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import pickle
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fireval.cli import main

DATA = Path(__file__).resolve().parents[2] / "src" / "fireval" / "data"


def _exit(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    cap = capsys.readouterr()
    return info.value.code or 0, cap.out, cap.err


def _error(args: list[str], capsys) -> str:
    code, _, err = _exit(args, capsys)
    assert code == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("fireval: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture()
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "good.npy", np.eye(1000, dtype=np.float32))
    return tmp_path


# ------------------------------------------------------------------------------------------- seeds


@pytest.mark.parametrize(
    "args",
    [
        ["pool", "good.npy", "-o", "p.jsonl"],
        ["compare", "good.npy", "good.npy"],
        ["budget", "good.npy"],
        ["report", "good.npy", "-o", "r.html"],
    ],
)
@pytest.mark.parametrize("seed", ["-1", "4294967296"])
def test_seed_out_of_range(work, capsys, args, seed):
    line = _error([*args, "--seed", seed], capsys)
    assert f"--seed must be an integer from 0 to 4294967295, got {seed}" in line
    assert not (work / "p.jsonl").exists() and not (work / "r.html").exists()


# ------------------------------------------------------------------------------ CSV with extra field


def test_collection_row_with_an_unquoted_comma(work, capsys):
    text = gzip.decompress((DATA / "msrvtt_1ka.csv.gz").read_bytes()).decode()
    lines = text.splitlines()
    key, vid_key, vid, sent = next(__import__("csv").reader([lines[5]]))
    lines[5] = f"{key},{vid_key},{vid},{sent}, and more words"
    (work / "coll.csv").write_text("\n".join(lines) + "\n")
    line = _error(["evaluate", "good.npy", "-c", "coll.csv"], capsys)
    assert "coll.csv:6: expected 4 fields as in the header, found 5" in line and "quoted" in line


def test_gzip_collection_and_unknown_layout(work, capsys):
    shutil.copy(DATA / "msrvtt_1ka.csv.gz", work / "coll.csv.gz")
    code, out, err = _exit(
        ["evaluate", "good.npy", "-c", "coll.csv.gz", "-m", "C@1", "-q", "--no-checks"], capsys
    )
    assert code == 0, err
    (work / "weird.csv").write_text("id,text\n1,hello\n")
    line = _error(["evaluate", "good.npy", "-c", "weird.csv"], capsys)
    assert "weird.csv: unknown collection layout" in line
    assert "YouCook2" in line and "LSMDC" in line and "EPIC-Kitchens-100" in line and "JSON lines" in line


# ------------------------------------------------------------------------------------------ full disk


def _full_disk(monkeypatch):
    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.parametrize(
    ("args", "target"),
    [
        (
            ["pool", "good.npy", "-o", "out/p.jsonl", "--max-queries", "5", "--allow-misaligned"],
            "out/p.jsonl",
        ),
        (["report", "good.npy", "-o", "out/r.html", "--resamples", "20", "--no-checks"], "out/r.html"),
        (["evaluate", "good.npy", "-m", "C@1", "-q", "--no-checks", "--json", "out/e.json"], "out/e.json"),
    ],
)
def test_full_disk_names_the_file(work, capsys, monkeypatch, args, target):
    (work / "out").mkdir()
    _full_disk(monkeypatch)
    line = _error(args, capsys)
    assert f"fireval: error: {target}: No space left on device" in line
    assert list((work / "out").iterdir()) == []  # no partial file, no temporary left behind


# ------------------------------------------------------------------------------ common run mistakes


def _torch_zip(path: Path) -> None:
    """The layout torch.save writes (a zip holding archive/data.pkl), without torch."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"x": 1}, protocol=2))
        z.writestr("archive/version", "3\n")


@pytest.mark.parametrize("name", ["sims.pt", "sims.pth", "sims_saved_as.npy", "legacy.bin"])
def test_torch_or_pickle_run(work, capsys, name):
    p = work / name
    if name == "legacy.bin":
        p.write_bytes(pickle.dumps(np.eye(3).tolist(), protocol=2))  # legacy torch.save is a pickle
    else:
        _torch_zip(p)
    line = _error(["evaluate", name], capsys)
    assert f"{name}: a PyTorch/pickle file" in line
    assert "numpy.save(path, tensor.cpu().numpy())" in line


def test_csv_of_scores_is_not_a_trec_run(work, capsys):
    buf = io.StringIO()
    np.savetxt(buf, np.eye(4), delimiter=",")
    (work / "scores.csv").write_text(buf.getvalue())
    line = _error(["evaluate", "scores.csv"], capsys)
    assert "scores.csv:1: looks like a CSV table" in line and "not a TREC run" in line
    assert "qid Q0 docid rank score tag" in line and ".npy" in line
    (work / "scores.txt").write_text("0.1 0.2 0.3\n0.4 0.5 0.6\n")
    line = _error(["evaluate", "scores.txt"], capsys)
    assert "matrix of numbers as text, not a TREC run" in line


def test_without_c_says_which_collection_and_refuses_a_misfit(work, capsys):
    code, _, err = _exit(["evaluate", "good.npy", "-m", "C@1", "-q", "--no-checks"], capsys)
    assert code == 0
    assert (
        "note: no -c/--collection given: using the bundled example 'msrvtt-1ka' (1000 captions x 1000 videos)"
        in err
    )
    np.save(work / "didemo.npy", np.zeros((1003, 1003), np.float32))
    line = _error(["evaluate", "didemo.npy"], capsys)
    assert "didemo.npy" in line and "(1003, 1003)" in line
    assert "no -c/--collection was given, so the bundled example (MSR-VTT 1k-A) was used" in line
    code, _, err = _exit(["evaluate", "good.npy", "-c", "example", "-m", "C@1", "-q", "--no-checks"], capsys)
    assert code == 0 and "note: no -c" not in err


def test_transposed_matrix_points_to_run_direction(work, capsys, tmp_path):
    coll = work / "c.csv"
    coll.write_text("video_id,sentence\n" + "".join(f"v{i // 2},caption {i}\n" for i in range(6)))
    np.save(work / "v2t.npy", np.zeros((3, 6), np.float32))
    for extra in ([], ["-d", "v2t"]):
        line = _error(["evaluate", "v2t.npy", "-c", "c.csv", *extra], capsys)
        assert "looks transposed" in line and "--run-direction v2t" in line
        assert "-d/--direction only picks the direction to evaluate" in line
    code, _, err = _exit(
        ["evaluate", "v2t.npy", "-c", "c.csv", "--run-direction", "v2t", "-q", "--no-checks"], capsys
    )
    assert code == 0, err


def test_transposed_trec_run_points_to_run_direction(work, capsys):
    (work / "v2t.run").write_text("video9770 Q0 ret0 1 0.9 t\nvideo9770 Q0 ret1 2 0.5 t\n")
    for extra in ([], ["-d", "v2t"]):
        line = _error(["evaluate", "v2t.run", *extra], capsys)
        assert "v2t.run:1: unknown caption (query) id 'video9770'" in line
        assert "--run-direction v2t" in line and "no -c/--collection was given" not in line
    code, _, err = _exit(["evaluate", "v2t.run", "--run-direction", "v2t", "-q", "--no-checks"], capsys)
    assert code == 0, err
