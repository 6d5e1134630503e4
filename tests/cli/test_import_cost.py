"""The CLI starts without its heavy dependencies (issue 14, "instant CLI").

Each check runs in a fresh interpreter (``sys.modules`` of the test process is polluted), imports
or runs the command, and reports which heavy modules ended up in ``sys.modules``. No timing is
asserted here; the start-up times are measured by ``benchmarks/bench_cli.py``.

Also checked: the pandas-free paths that make this possible give what the pandas paths give
(terminal tables printed from records, the judgments' CSR arrays built with numpy).
"""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

#: heavy modules that `import fireval.cli` and `fireval --help` must not load: the data stack,
#: pydantic (Typer 0.29 validates every parameter with it), numba (the metrics kernel's optional
#: compiled path), and rich's markdown stack (Typer's rich help panels)
HEAVY = (
    "pandas",
    "scipy",
    "matplotlib",
    "sqlalchemy",
    "pyarrow",
    "sklearn",
    "nltk",
    "fastapi",
    "jinja2",
    "pydantic",
    "numba",
    "markdown_it",
    "rich.markdown",
    "pygments",
)

#: a driver for the child: run `fireval ARGS` in-process, then print the heavy modules loaded
DRIVER = """
import json, sys
argv, heavy = json.loads(sys.argv[1]), json.loads(sys.argv[2])
import fireval.cli
code = 0
if argv is not None:
    try:
        fireval.cli.main(argv)
    except SystemExit as exc:
        code = exc.code or 0
print(json.dumps({"loaded": sorted(m for m in heavy if m in sys.modules), "code": code}), file=sys.stderr)
"""


def loaded_by(argv: list[str] | None, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """Heavy modules in ``sys.modules`` after ``import fireval.cli`` (and ``fireval ARGV``)."""
    r = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(argv), json.dumps(list(heavy))],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = json.loads(r.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, r.stdout + r.stderr
    return report["loaded"]


@pytest.fixture(scope="module")
def run_1k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1,000 x 1,000 tie-free score matrix for the bundled MSR-VTT 1k-A collection."""
    rng = np.random.default_rng(14)
    scores = rng.standard_normal((1000, 1000))
    scores[np.arange(1000), np.arange(1000)] += 2.0  # some signal on the diagonal (caption i, video i)
    path = tmp_path_factory.mktemp("run") / "random_1k.npy"
    np.save(path, scores)
    return path


def test_import_cli_loads_no_heavy_module() -> None:
    assert loaded_by(None) == []


def test_help_loads_no_heavy_module() -> None:
    assert loaded_by(["--help"]) == []
    assert loaded_by(["evaluate", "--help"]) == []
    assert loaded_by(["judgments", "--help"]) == []
    # not even numpy or rich for the help, nor the verb modules of other commands
    assert (
        loaded_by(["evaluate", "--help"], ("numpy", "rich", "fireval.cli.report", "fireval.cli.serve")) == []
    )


def test_each_command_builds_from_its_own_module(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fireval CMD`` builds only CMD's module: the map must name every command of the full app,
    and the one-module app must give the same help as the full one."""
    import typer.main

    from fireval.cli import COMMAND_MODULES, make_app
    from fireval.cli.common import HelpGroup

    def help_text(app: object, argv: list[str]) -> str:
        with pytest.raises(SystemExit) as exc:
            app(args=argv, prog_name="fireval")  # type: ignore[operator]
        assert exc.value.code == 0
        return capsys.readouterr().out

    monkeypatch.setenv("COLUMNS", "100")
    full_app = make_app()
    full = typer.main.get_command(full_app)
    assert isinstance(full, HelpGroup)
    assert set(full.commands) == set(COMMAND_MODULES)
    for name, module in COMMAND_MODULES.items():
        one_app = make_app((module,))
        one = typer.main.get_command(one_app)
        assert isinstance(one, HelpGroup) and name in one.commands, name
        assert len(one.commands) < len(full.commands)
        got, want = help_text(one_app, [name, "--help"]), help_text(full_app, [name, "--help"])
        assert got == want and got.startswith(f"Usage: fireval {name} "), name


def test_help_lists_whole_summaries_and_keeps_hyphenated_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Click's plain help would cut "Wray et al. 2021): BoW, ..." at "et al." and wrap inside
    "--text-emb" or "MSR-VTT" (it did at 80 columns); the app's help group does neither."""
    import fireval.cli

    monkeypatch.setenv("COLUMNS", "80")

    for argv in (["--help"], ["proxies", "--help"], ["evaluate", "--help"]):
        with pytest.raises(SystemExit) as exc:
            fireval.cli.main(argv)
        assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Semantic-similarity proxies (Wray et al. 2021): BoW, PoS, SYN, METEOR." in out
    assert "Evaluate runs with every standard and FIRE-style measure, in both directions." in out
    assert "--text-emb" in out and "--text- emb" not in out and "EPIC-Kitchens-100" in out
    assert "(MSR-VTT 1k-A)" in out
    assert "\u2011" not in out


def test_evaluate_loads_no_web_db_or_plotting(run_1k: Path) -> None:
    assert loaded_by(["evaluate", str(run_1k)], ("matplotlib", "sqlalchemy", "fastapi", "jinja2")) == []
    # the default input checks: TF-IDF text model and top-K with numpy only (no scipy.sparse);
    # no pydantic or rich.markdown from Typer, no numba at this size, no numpy.ma (np.median and
    # np.unique import it), no fireval.scale without embeddings, no other verb's module
    assert loaded_by(["evaluate", str(run_1k)], ("pandas", "pyarrow", "scipy")) == []
    late = ("pydantic", "markdown_it", "numba", "numpy.ma", "fireval.scale", "fireval.cli.report")
    assert loaded_by(["evaluate", str(run_1k)], late) == []
    assert loaded_by(["evaluate", str(run_1k), "--no-checks"], late) == []
    # nor the readers and writers of other formats (fireval.formats loads each one on first use),
    # the atomic writer (tempfile), zipfile (only .npz runs need it) or statistics (the checks'
    # normal tail uses math.erf)
    unused = (
        "statistics",
        "zipfile",
        "tempfile",
        "fireval.atomic",
        "fireval.formats.labels",
        "fireval.formats.fire_json",
        "fireval.formats.trec",
    )
    assert loaded_by(["evaluate", str(run_1k)], unused) == []


def test_evaluate_prints_tables_without_pandas_or_scipy(run_1k: Path, tmp_path: Path) -> None:
    # tables printed from records, labels as CSR arrays built with numpy, tie closed forms
    # without scipy.special (the rounded run has many relevant docs inside tie groups)
    heavy = ("pandas", "pyarrow", "scipy", "matplotlib", "sqlalchemy", "fastapi")
    tied = tmp_path / "tied.npy"
    np.save(tied, np.round(np.load(run_1k), 1))
    for run in (run_1k, tied):
        assert loaded_by(["evaluate", str(run), "--no-checks"], heavy) == []


def test_evaluate_json_still_has_the_table(run_1k: Path, tmp_path: Path) -> None:
    # --json and --per-query build the DataFrame on demand
    out, pq = tmp_path / "r.json", tmp_path / "pq.tsv"
    assert "pandas" in loaded_by(["evaluate", str(run_1k), "--no-checks", "-q", "--json", str(out)])
    doc = json.loads(out.read_text())
    c1 = [r for r in doc["results"] if r["measure"] == "C@1" and r["direction"] == "t2v"]
    assert len(c1) == 1 and 0.0 < c1[0]["value"] < 1.0 and c1[0]["n"] == 1000
    loaded_by(["evaluate", str(run_1k), "--no-checks", "-q", "--per-query", str(pq)])
    table = pd.read_csv(pq, sep="\t")
    assert len(table) > 0 and set(table["direction"]) == {"t2v", "v2t"}


def _render(tables: list) -> str:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=400, color_system=None)
    for t in tables:
        console.print(t)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _records(rng: np.random.Generator, nan_share: float, with_n: bool) -> list[dict]:
    rows = []
    for run in ("a", "b"):
        for labels in ("original", "augmented"):
            for direction in ("t2v", "v2t"):
                for mode in ("lower", "upper"):
                    for measure in ("C@1", "MdR", "nDCG@10", "judged@10"):
                        value = float("nan") if rng.random() < nan_share else float(rng.random())
                        n = int(rng.integers(990, 1000)) if with_n else None
                        rows.append(
                            {
                                "run": run,
                                "labels": labels,
                                "direction": direction,
                                "unjudged": mode,
                                "ties": "tie-aware",
                                "measure": measure,
                                "value": value,
                                "n": n,
                            }
                        )
            rows.append({**rows[-1], "direction": "both", "measure": "meanR", "value": 0.5, "n": None})
    return rows


@pytest.mark.parametrize(("nan_share", "with_n"), [(0.0, True), (0.2, True), (0.0, False)])
@pytest.mark.parametrize(
    "options",
    [{}, {"unjudged": "upper"}, {"measures": ["C@1", "MdR"]}, {"marks": {"a": ["MdR"]}, "names": "tvr"}],
)
def test_tables_from_records_match_tables_from_the_dataframe(
    nan_share: float, with_n: bool, options: dict
) -> None:
    from fireval.metrics.evaluate import TABLE_COLUMNS
    from fireval.report.terminal import comparison_tables

    records = _records(np.random.default_rng(3), nan_share, with_n)
    frame = pd.DataFrame(records, columns=TABLE_COLUMNS)
    from_frame = _render(comparison_tables(frame, **options))
    assert _render(comparison_tables(records, **options)) == from_frame
    firsts = {ln.split()[0] for ln in from_frame.splitlines() if ln.split()}
    assert " Δ " in from_frame and {"a", "b"} <= firsts


def test_evaluation_table_is_built_from_records(run_1k: Path) -> None:
    import fireval

    ev = fireval.evaluate(np.load(run_1k), collection="msrvtt-1ka")
    assert "table" not in vars(ev)  # not built until asked for
    assert isinstance(ev.table, pd.DataFrame) and list(ev.table.columns)[:3] == ["run", "labels", "direction"]
    assert len(ev.table) == len(ev.records) > 0
    for rec, row in zip(ev.records, ev.table.to_dict(orient="records"), strict=True):
        for key, v in rec.items():
            w = row[key]
            assert v == w or (v is None and math.isnan(w)) or (math.isnan(v) and math.isnan(w)), (key, v, w)


def test_csr_arrays_match_scipy() -> None:
    from fireval.core import Direction, Judgments
    from fireval.metrics.driver import grades_csr as _csr

    rng = np.random.default_rng(7)
    for _ in range(50):
        n_q, n_d = (int(x) for x in rng.integers(1, 30, 2))
        flat = rng.choice(n_q * n_d, size=int(rng.integers(0, n_q * n_d + 1)), replace=False)
        grades = rng.integers(0, 4, flat.size).astype(float)  # 0: judged irrelevant, kept explicitly
        judg = Judgments.from_arrays((n_q, n_d), flat // n_d, flat % n_d, grades, "human")
        for d in (Direction.T2V, Direction.V2T):
            m = judg.matrix(d)
            got = _csr(judg, d)
            want = (m.indptr.astype(np.int64), m.indices.astype(np.int64), np.asarray(m.data, np.float64))
            for g, w in zip(got, want, strict=True):
                # narrower dtypes (int32 indices, float32 grades) are allowed; values must be equal
                assert g.dtype.kind == w.dtype.kind and np.array_equal(g, w)


def test_integer_special_functions_match_scipy() -> None:
    from fractions import Fraction
    from math import comb

    from scipy.special import digamma, gammaln

    from fireval.metrics import ties

    z = np.concatenate([np.arange(-40.0, 3000.0), np.unique(np.round(np.logspace(3.5, 9, 3000)))])
    want = gammaln(z)
    got = ties._gammaln(z)
    assert np.array_equal(np.isinf(got), np.isinf(want))  # +inf at the integers <= 0, as scipy
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=2e-15, atol=0)
    x = z[z >= 0]
    np.testing.assert_allclose(ties.harmonic(x), digamma(x + 1.0) + ties._EULER, rtol=2e-15, atol=0)
    assert ties.harmonic([0, 1, 2, 3]).tolist() == [0.0, 1.0, 1.5, float(Fraction(11, 6))]
    # non-integer arguments still go to scipy
    np.testing.assert_array_equal(ties.harmonic([0.5]), digamma([1.5]) + ties._EULER)
    for t, r, n in [(30, 2, 1), (28, 3, 4), (113, 4, 26), (1362, 37, 28), (40, 0, 7), (9, 9, 1)]:
        exact = float(Fraction(comb(t - r, n), comb(t, n)))
        assert abs(float(ties.prob_none(t, r, n)) - exact) < 1e-12
