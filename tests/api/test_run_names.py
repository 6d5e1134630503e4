"""Run names: ``PATH`` or ``NAME=PATH`` in every verb that takes runs (``api.load_runs``).

Rules (:func:`fireval.api.split_run_spec`): an existing file is a path even with ``=`` in it;
otherwise the first ``=`` separates NAME from PATH unless the text before it holds a path
separator; an empty name, an empty path, or a name given twice is a one-line InputError.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fireval import api
from fireval.core import Collection, InputError


def _coll() -> Collection:
    return Collection.from_pairs("x", [(f"c{i}", f"v{i}", f"caption {i}") for i in range(3)])


def test_load_runs_reads_name_equals_path(tmp_path) -> None:
    coll = _coll()
    path = tmp_path / "sims.npy"
    np.save(path, np.eye(3))
    runs = api.load_runs([f"mine={path}"], coll)
    assert list(runs) == ["mine"]


def test_same_file_name_in_two_directories_named_apart(tmp_path) -> None:
    for d in ("e1", "e2"):
        (tmp_path / d).mkdir()
        np.save(tmp_path / d / "sims.npy", np.eye(3))
    a, b = tmp_path / "e1" / "sims.npy", tmp_path / "e2" / "sims.npy"
    assert list(api.load_runs([f"a={a}", f"b={b}"], _coll())) == ["a", "b"]
    assert list(api.load_runs([a, b], _coll())) == ["sims", "sims'"]  # plain paths: as before


def test_a_path_with_equals_sign_that_exists_is_a_path(tmp_path) -> None:
    d = tmp_path / "lr=0.1"
    d.mkdir()
    np.save(d / "run=3.npy", np.eye(3))
    runs = api.load_runs([str(d / "run=3.npy")], _coll())
    assert list(runs) == ["run=3"]
    runs = api.load_runs([f"best={d / 'run=3.npy'}"], _coll())  # the first '=' splits
    assert list(runs) == ["best"]


@pytest.mark.parametrize(
    "specs, message",
    [
        (["=x.npy"], "=x.npy: empty run name before '='"),
        (["a="], "a=: no path after '='"),
        (["a={p}", "a={p}"], "run name 'a' given twice"),
        (["sims={p}", "{p}"], "run name 'sims' given twice"),
    ],
)
def test_bad_names_are_one_line_errors(tmp_path, specs: list[str], message: str) -> None:
    p = tmp_path / "sims.npy"
    np.save(p, np.eye(3))
    with pytest.raises(InputError) as e:
        api.load_runs([s.format(p=p) for s in specs], _coll())
    assert message in str(e.value) and "\n" not in str(e.value)


def test_missing_file_behind_a_name_names_the_path(tmp_path) -> None:
    with pytest.raises(InputError, match="run file not found") as e:
        api.load_runs([f"a={tmp_path / 'nope.npy'}"], _coll())
    assert "nope.npy" in str(e.value)


@pytest.mark.parametrize("verb", ["evaluate", "compare"])
def test_cli_verbs_accept_name_equals_path(tmp_path, verb: str) -> None:
    rng = np.random.default_rng(0)
    for d in ("e1", "e2"):
        (tmp_path / d).mkdir()
        np.save(tmp_path / d / "sims.npy", rng.random((1000, 1000)).astype(np.float32))
    cmd = [sys.executable, "-m", "fireval", verb, "a=e1/sims.npy", "b=e2/sims.npy", "-c", "example"]
    cmd += ["-m", "C@1", "--no-checks"] if verb == "evaluate" else ["-m", "C@1", "--resamples", "200"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "run file not found" not in r.stderr
    assert "a" in r.stdout.split() and "b" in r.stdout.split()
