"""`fireval measures`: every measure listed with its definition and source, one entry by name,
JSON that round-trips to the metrics layer's values, one-line errors, and a light start-up."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fireval.cli
from fireval.metrics.definitions import MEASURE_INFO, MEASURE_INFO_BY_NAME, Cutoff, MeasureInfo
from fireval.metrics.measures import MEASURE_NAMES, parse_measure


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``fireval ARGV`` in-process through the real entry point: (exit code, stdout, stderr)."""
    code = 0
    try:
        fireval.cli.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_lists_every_measure(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = run_main(capsys, "measures")
    assert code == 0 and not err
    lines = out.splitlines()
    assert lines[0].split() == ["measure", "better", "definition"]
    for info in MEASURE_INFO:
        row = next((ln for ln in lines if ln.startswith(info.form + " ")), None)
        assert row is not None, info.form
        assert row.split()[1] == ("higher" if info.higher_is_better else "lower"), row
        assert row.split(maxsplit=2)[2].startswith(info.description[:30]), row
    flat = " ".join(out.split())
    for info in MEASURE_INFO:
        assert info.description in flat and info.citation in flat, info.name
    assert all(len(ln) <= 100 for ln in lines)


def _from_dict(d: dict) -> MeasureInfo:
    derived = {"forms", "form", "docs"}
    fields = {k: v for k, v in d.items() if k not in derived}
    fields["aliases"] = tuple(fields["aliases"])
    fields["cutoff"] = Cutoff(fields["cutoff"])
    info = MeasureInfo(**fields)
    assert info.to_dict() == d
    return info


def test_json_round_trips(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "measures", "--json")
    assert code == 0
    docs = json.loads(out)
    assert [d["name"] for d in docs] == list(MEASURE_NAMES)
    assert tuple(_from_dict(d) for d in docs) == MEASURE_INFO


@pytest.mark.parametrize(
    ("name", "family", "measure"),
    [
        ("AP_hits@10", "AP_hits", "AP_hits@10"),
        ("mrr", "RR", "RR"),
        ("R@5", "C", "C@5"),
        ("recall", "Recall", None),
    ],
)
def test_one_entry(capsys: pytest.CaptureFixture[str], name: str, family: str, measure: str | None) -> None:
    info = MEASURE_INFO_BY_NAME[family]
    code, out, err = run_main(capsys, "measures", name)
    assert code == 0 and not err
    assert out.splitlines()[0] == f"{measure or info.form}: {info.description}"
    flat = " ".join(out.split())
    assert f"name: {family}" in flat and f"source: {info.citation}" in flat and info.docs in flat
    code, out, _ = run_main(capsys, "measures", name, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["measure"] == measure and doc["name"] == family
    assert doc["citation"] == info.citation and doc["description"] == info.description


def test_entry_uses_the_measures_own_flags(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_main(capsys, "measures", "P@R")  # P is monotone, P@R (= R-Prec) is not
    assert "bounded by unjudged=lower/upper: no" in out
    _, out, _ = run_main(capsys, "measures", "P@5")
    assert "bounded by unjudged=lower/upper: yes" in out
    _, out, _ = run_main(capsys, "measures", "MdR", "--json")
    assert json.loads(out)["higher_is_better"] is False


@pytest.mark.parametrize("bad", ["Bogus", "C@R", "R@R", "RR@5", "AP@0"])
def test_bad_name_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], bad: str) -> None:
    code, out, err = run_main(capsys, "measures", bad)
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and err.startswith("fireval: error:") and bad in err


def test_evaluate_r_at_r_suggests_a_form_that_parses(tmp_path: Path) -> None:
    """`evaluate -m R@R` used to suggest C@R, which is then refused; every suggestion must parse."""
    csv = tmp_path / "toy.csv"
    rows = [("video1", "a man sings"), ("video2", "a dog runs"), ("video3", "a cat sleeps")]
    csv.write_text(
        "key,vid_key,video_id,sentence\n"
        + "".join(f"ret{i},msr{i},{v},{s}\n" for i, (v, s) in enumerate(rows))
    )
    sims = tmp_path / "sims.npy"
    np.save(sims, np.eye(3, dtype=np.float32))
    r = subprocess.run(
        [sys.executable, "-m", "fireval", "evaluate", str(sims), "-c", str(csv), "-m", "R@R", "--no-checks"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, COLUMNS="200"),
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr and "ambiguous" in r.stderr, r.stderr
    suggested = re.findall(r"\b[A-Za-z][\w-]*@[A-Za-z0-9]+", r.stderr.split("use", 1)[1])
    assert suggested and "C@R" not in suggested
    for form in suggested:
        parse_measure(form)


def test_help_points_to_fireval_measures(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run_main(capsys, "evaluate", "--help")
    assert code == 0 and "see `fireval measures`" in " ".join(out.split())
    code, out, _ = run_main(capsys, "--help")
    assert code == 0 and re.search(r"^\s+measures\s+List every measure", out, re.M)


def test_measures_loads_no_heavy_module() -> None:
    """Listing needs the metrics layer (numpy) but none of the data, web or plotting stack."""
    heavy = [
        "pandas",
        "scipy",
        "matplotlib",
        "sqlalchemy",
        "pyarrow",
        "numba",
        "fastapi",
        "pydantic",
        "rich.markdown",
    ]
    driver = (
        "import json, sys\nimport fireval.cli\n"
        "for argv in (['measures'], ['measures', 'mrr', '--json']):\n"
        "    try:\n        fireval.cli.main(argv)\n    except SystemExit as e:\n        assert not e.code, e.code\n"
        f"print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr.strip().splitlines()[-1]) == []
