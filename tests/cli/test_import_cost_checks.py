"""``fireval check --list`` lists the input checks without numpy (as ``fireval measures`` does).

Listing the checks needs only :mod:`fireval.checks.definitions` (and :mod:`fireval.checks.base`);
importing them runs ``fireval/checks/__init__.py``, which must therefore leave numpy and the
check engine for first use. Each check runs in a fresh interpreter (the test process's
``sys.modules`` is polluted), as ``tests/cli/test_import_cost.py`` does. No timing is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests.cli.test_import_cost import HEAVY, loaded_by

#: the checks' engine: none of it is needed to list the checks
ENGINE = (
    "numpy",
    "fireval.checks.runner",
    "fireval.checks.alignment",
    "fireval.checks.agreement",
    "fireval.checks.truncation",
    "fireval.checks.orientation",
    "fireval.checks.scan",
    "fireval.checks.text",
    "fireval.core.run",
    "fireval.metrics.evaluate",
)


def test_check_list_imports_no_numpy() -> None:
    assert loaded_by(["check", "--list"], ENGINE + HEAVY) == []


def test_every_public_name_still_imports() -> None:
    """``import fireval.checks`` is light, every name of ``__all__`` still imports from it (the
    engine on first use), and each check module names its results with the light value."""
    code = """
import json, sys
import fireval.checks as c
light = "numpy" not in sys.modules
from fireval.checks import *  # noqa: F403
from fireval.checks import CHECKS, Check, CheckResult, ChecksReport, PairResult, Status, run_checks, truncated_measures
from fireval.checks import agreement, alignment, orientation, truncation
from fireval.checks.definitions import CHECKS as DEFS
print(json.dumps({
    "light": light,
    "names": sorted(n for n in c.__all__ if getattr(c, n, None) is not None),
    "all": sorted(c.__all__),
    "dir": set(c.__all__) <= set(dir(c)),
    "same": CHECKS is DEFS,
    "modules": [m.CHECK is d for m, d in zip((alignment, agreement, truncation, orientation), DEFS)],
    "types": [type(ChecksReport).__name__, callable(run_checks), callable(truncated_measures)],
    "list": [x.name for x in CHECKS],
}))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(r.stdout)
    assert got["light"] is True
    assert got["names"] == got["all"] and got["dir"] is True
    assert got["same"] is True and got["modules"] == [True] * 4
    assert got["types"] == ["type", True, True]
    assert got["list"] == ["alignment", "agreement", "truncation", "orientation"]


def test_unknown_names_still_fail() -> None:
    import fireval.checks

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        fireval.checks.nope  # noqa: B018
    with pytest.raises(ImportError):
        from fireval.checks import nope  # noqa: F401
