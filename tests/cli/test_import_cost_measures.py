"""``fireval measures`` lists the measures without the metrics engine (issue 14, "instant CLI").

Listing the measures needs only :mod:`fireval.metrics.definitions` and
:mod:`fireval.metrics.measures`; importing them runs ``fireval/metrics/__init__.py``, which must
therefore leave numpy and the engine for first use. Each check runs ``fireval ARGS`` in a fresh
interpreter (the test process's ``sys.modules`` is polluted), as ``tests/cli/test_import_cost.py``
does. No timing is asserted; ``benchmarks/bench_cli.py`` measures start-up.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests.cli.test_import_cost import HEAVY, loaded_by

#: the engine's modules: none of them is needed to list or look up a measure
ENGINE = (
    "numpy",
    "fireval.metrics.evaluate",
    "fireval.metrics.driver",
    "fireval.metrics.kernel",
    "fireval.metrics.entries",
    "fireval.metrics.ties",
    "fireval.metrics.presets",
    "fireval.core.run",
)


@pytest.mark.parametrize(
    "argv",
    [
        ["measures"],
        ["measures", "--json"],
        ["measures", "MdR"],
        ["measures", "mrr", "--json"],
        ["measures", "C"],
    ],
    ids=" ".join,
)
def test_measures_imports_no_numpy(argv: list[str]) -> None:
    assert loaded_by(argv, ENGINE + HEAVY) == []


def test_the_engine_still_loads_on_first_use() -> None:
    """``import fireval.metrics`` is light, and every public name still imports from it; the
    function ``evaluate`` stays the package attribute after its sub-module has been imported
    directly (the import system binds the sub-module to the package)."""
    code = """
import json, sys
import fireval.metrics as m
light = "numpy" not in sys.modules
from fireval.metrics.evaluate import TABLE_COLUMNS  # the sub-module first: binds it to the package
from fireval.metrics import (
    DEFAULT_MEASURES, PRESETS, TIE_POLICIES, UNJUDGED_MODES, Evaluation, Measure, evaluate,
    parse_measure, parse_measures, query_values,
)
import fireval.metrics.evaluate as ev_mod
print(json.dumps({
    "light": light,
    "evaluate": [type(m.evaluate).__name__, type(evaluate).__name__, evaluate is sys.modules["fireval.metrics.evaluate"].evaluate],
    "submodule": type(sys.modules["fireval.metrics.evaluate"]).__name__,
    "names": sorted(n for n in m.__all__ if hasattr(m, n)),
    "all": sorted(m.__all__),
    "dir": set(m.__all__) <= set(dir(m)),
    "presets": list(PRESETS),
}))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(r.stdout)
    assert got["light"] is True
    assert got["evaluate"] == ["function", "function", True]
    assert got["submodule"] == "module"
    assert got["names"] == got["all"] and got["dir"] is True
    assert got["presets"] == ["fire2023", "clip4clip", "wray2021"]


def test_unknown_names_still_fail() -> None:
    import fireval.metrics

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        fireval.metrics.nope  # noqa: B018
    with pytest.raises(ImportError):
        from fireval.metrics import nope  # noqa: F401
