"""Run arguments (``PATH`` / ``NAME=PATH``) follow one rule in every verb: ``fireval check`` reads
them with ``api.load_runs`` (same errors as ``evaluate``), and ``guard_outputs`` guards the path
``api.split_run_spec`` gives (``best=runs/lr=0.1/sims.npy`` guards ``runs/lr=0.1/sims.npy``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fireval.cli.common import guard_outputs
from fireval.core.errors import InputError

CSV = "video_id,sentence\n" + "".join(f"video{i},caption number {i} about topic {i % 7}\n" for i in range(40))


def run_cli(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "fireval", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "c.csv").write_text(CSV)
    rng = np.random.default_rng(0)
    (tmp_path / "runs" / "lr=0.1").mkdir(parents=True)
    for p in ("a.npy", "b.npy", "runs/lr=0.1/sims.npy"):
        np.save(tmp_path / p, rng.normal(size=(40, 40)) + 3 * np.eye(40))
    return tmp_path


@pytest.mark.parametrize(
    ("specs", "needle"),
    [
        (["=a.npy"], "empty run name"),
        (["x=a.npy", "x=b.npy"], "given twice"),
        (["a=b.npy", "a.npy"], "given twice"),
        (["x="], "no path after '='"),
    ],
)
def test_check_and_evaluate_share_the_run_spec_errors(work: Path, specs: list[str], needle: str) -> None:
    for verb in ("check", "evaluate"):
        r = run_cli(verb, *specs, "-c", "c.csv", cwd=work)
        assert r.returncode == 2, (verb, r.stdout, r.stderr)
        assert needle in r.stderr, (verb, r.stderr)
        assert "Traceback" not in r.stderr


def test_check_names_runs_as_evaluate_does(work: Path) -> None:
    r = run_cli(
        "check", "best=runs/lr=0.1/sims.npy", "runs/lr=0.1/sims.npy", "a.npy", "-c", "c.csv", cwd=work
    )
    assert r.returncode in (0, 1), r.stderr
    names = {line.split("\t")[0] for line in r.stdout.splitlines() if "\t" in line and " vs " not in line}
    assert names == {"best", "sims", "a"}


def test_guard_outputs_guards_the_path_after_the_first_equals(work: Path, monkeypatch) -> None:
    monkeypatch.chdir(work)
    with pytest.raises(InputError, match="sims.npy"):
        guard_outputs({"--json": "runs/lr=0.1/sims.npy"}, runs=["best=runs/lr=0.1/sims.npy"])
    # what rpartition('=') took for the run's path is not an input: writing there is fine
    guard_outputs({"--json": "0.1/sims.npy"}, runs=["best=runs/lr=0.1/sims.npy"])
    # a path holding '=' (before a '/') is a path, not NAME=PATH
    with pytest.raises(InputError):
        guard_outputs({"--json": "runs/lr=0.1/sims.npy"}, runs=["runs/lr=0.1/sims.npy"])


def test_check_refuses_to_overwrite_a_named_run(work: Path) -> None:
    before = (work / "runs" / "lr=0.1" / "sims.npy").read_bytes()
    r = run_cli(
        "check", "best=runs/lr=0.1/sims.npy", "-c", "c.csv", "--json", "runs/lr=0.1/sims.npy", cwd=work
    )
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert (work / "runs" / "lr=0.1" / "sims.npy").read_bytes() == before
