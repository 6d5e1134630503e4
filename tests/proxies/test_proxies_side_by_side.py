"""Named proxy label sets side by side (Wray Table 3), Eq. 3 in --json and with -q, and IVR
bounds over every query; oracles from the definitions (nDCG@R by sorting one query at a time,
IVR by the best/worst rank of each query's candidates), not from fireval's kernels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.cli_helpers import exit_code, write_csv_collection

N = 40


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 40-caption collection, a run and two proxy files with different grades."""
    from fireval.proxies.relevance import ProxyRelevance

    d = tmp_path_factory.mktemp("side")
    rng = np.random.default_rng(7)
    csv = d / "toy.csv"
    write_csv_collection(csv, [(f"video{i}", f"caption {i}") for i in range(N)])
    scores = rng.normal(size=(N, N))
    np.save(d / "run.npy", scores)
    ids = (tuple(f"c{i}" for i in range(N)), tuple(f"video{i}" for i in range(N)))
    out = {"csv": csv, "run": d / "run.npy"}
    for name, density in (("bow", 0.3), ("syn", 0.1)):
        g = (rng.random((N, N)) * (rng.random((N, N)) < density)).astype(np.float32)
        g[np.arange(N), np.arange(N)] = 1.0
        g[3] = 0.0  # a caption with no relevant video (scored 0 by the wray2021 preset)
        ProxyRelevance(g, *ids, {"proxy": name}).save(d / f"{name}.npz")
        out[name] = d / f"{name}.npz"
        np.save(d / f"{name}_grades.npy", g)
        out[f"{name}_grades"] = d / f"{name}_grades.npy"
    return out


def _ndcg_r(scores: np.ndarray, rel: np.ndarray) -> float:
    """Wray's nDCG@R of one query (0 when nothing is relevant: the wray2021 preset's choice)."""
    r = int((rel > 0).sum())
    if r == 0:
        return 0.0
    ranked = rel[np.argsort(-scores, kind="stable")]
    disc = 1 / np.log2(np.arange(2, r + 2))
    return float((ranked[:r] * disc).sum() / (np.sort(rel)[::-1][:r] * disc).sum())


def _eq3(scores: np.ndarray, g: np.ndarray) -> tuple[float, float, float]:
    t2v = np.mean([_ndcg_r(scores[i], g[i]) for i in range(N)])
    v2t = np.mean([_ndcg_r(scores[:, j], g[:, j]) for j in range(N)])
    return t2v, v2t, (t2v + v2t) / 2


def test_named_label_sets_stay_separate_with_eq3_in_json(toy, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "ev.json"
    args = ["evaluate", str(toy["run"]), "-c", str(toy["csv"]), "--no-instance", "--preset", "wray2021"]
    rc = exit_code([*args, "-l", f"bow={toy['bow']}", "-l", f"syn={toy['syn']}", "--json", str(out), "-q"])
    assert rc == 0
    doc = json.loads(out.read_text())
    scores = np.load(toy["run"])
    labels = {r["labels"] for r in doc["results"]}
    assert labels == {"bow", "syn"}  # one group per proxy, not one merged set
    eq3 = {r["labels"]: r for r in doc["wray_eq3"]}
    for name in ("bow", "syn"):
        t2v, v2t, mean = _eq3(scores, np.load(toy[f"{name}_grades"]))
        assert eq3[name]["t2v"] == pytest.approx(t2v, abs=1e-6)
        assert eq3[name]["v2t"] == pytest.approx(v2t, abs=1e-6)
        assert eq3[name]["mean"] == pytest.approx(mean, abs=1e-6)
        assert eq3[name]["unit"] == "fraction in [0, 1]"
    printed = capsys.readouterr().out  # -q still prints Eq. 3, in % (the tables' unit)
    lines = [x for x in printed.splitlines() if x.startswith("Wray Eq. 3 (%)")]
    assert len(lines) == 2
    assert f"= {100 * eq3['syn']['mean']:.2f}" in next(x for x in lines if "/ syn " in x)
    layout = printed.splitlines()[
        printed.splitlines().index("Wray Table 3 layout: nDCG@R in % per label set") :
    ]
    assert "bow" in layout[1] and "syn" in layout[1] and layout[1].index("bow") < layout[1].index("syn")
    cells = layout[3].split("|")  # run | bow: t2v v2t Eq.3 | syn: t2v v2t Eq.3
    for name, cell in zip(("bow", "syn"), cells[1:]):
        want = [100 * eq3[name][k] for k in ("t2v", "v2t", "mean")]
        assert [float(x) for x in cell.split()] == pytest.approx(want, abs=0.006)

    # unnamed -l merge into one set, as before
    rc = exit_code([*args, "-l", str(toy["bow"]), "-l", str(toy["syn"]), "--json", str(out), "-q"])
    assert rc == 0
    assert {r["labels"] for r in json.loads(out.read_text())["results"]} == {"augmented"}


def test_named_label_set_errors(toy, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["evaluate", str(toy["run"]), "-c", str(toy["csv"]), "-q"]
    assert exit_code([*args, "-l", f"bow={toy['bow']}", "-l", f"bow={toy['syn']}"]) == 2
    assert exit_code([*args, "-l", f"original={toy['bow']}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert all(line.startswith("fireval: error:") for line in err) and "given twice" in err[0]


def _ivr_oracle(scores: np.ndarray, cand: np.ndarray, k: int) -> tuple[float, float]:
    """Mean over queries with a candidate of [best candidate's optimistic rank <= k] and
    [worst candidate's pessimistic rank <= k]."""
    up, lo = [], []
    for s, c in zip(scores, cand):
        if not c.any():
            continue
        best, worst = s[c].max(), s[c].min()
        up.append(1 + (s > best).sum() <= k)
        lo.append((s >= worst).sum() <= k)
    return float(np.mean(up)), float(np.mean(lo))


def test_ivr_bounds_cover_every_query(toy) -> None:  # type: ignore[no-untyped-def]
    from fireval.core.run import Run
    from fireval.proxies.ivr import ivr_bounds

    rng = np.random.default_rng(3)
    scores = np.round(rng.normal(size=(N, N)), 1)  # ties on purpose
    g = np.load(toy["bow_grades"])
    inst = np.eye(N, dtype=bool)
    res = ivr_bounds(Run(name="r", scores=scores), g, threshold=0.8, instance=inst)
    for d, s, c in (("t2v", scores, (g >= 0.8) | inst), ("v2t", scores.T, (g.T >= 0.8) | inst.T)):
        b = res[d]
        assert b.n == b.n_queries == N
        for k in (1, 5, 10):
            up, lo = _ivr_oracle(s, c, k)
            assert b.upper[k] == pytest.approx(up) and b.lower[k] == pytest.approx(lo)
            # the instance C@K (optimistic rank of the instance positive) lies between the bounds
            inst_rank = 1 + (s > s[np.arange(N), np.arange(N)][:, None]).sum(1)
            assert lo <= np.mean(inst_rank <= k) + 1e-12 and np.mean(inst_rank <= k) <= up
    without = ivr_bounds(Run(name="r", scores=scores), g, threshold=1.0)
    assert without["t2v"].n == int((g >= 1.0).any(1).sum()) < N
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(Exception, match=r"\(0, 1\]"):
            ivr_bounds(Run(name="r", scores=scores), g, threshold=bad)


def test_ivr_cli_prints_n_and_refuses_thresholds(toy, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["proxies", "ivr", str(toy["run"]), "-l", str(toy["bow"]), "-c", str(toy["csv"])]
    assert exit_code(args) == 0
    out = capsys.readouterr().out
    assert f"(n = {N} of {N} queries)" in out
    for bad in ("2", "0", "-1", "nan"):
        assert exit_code([*args, "--threshold", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "(0, 1]" in err[0], err


def test_named_label_file_is_guarded_as_an_input(toy, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import shutil

    lab = tmp_path / "bow.npz"
    shutil.copy(toy["bow"], lab)
    before = lab.read_bytes()
    args = ["evaluate", str(toy["run"]), "-c", str(toy["csv"]), "-l", f"bow={lab}", "--json", str(lab), "-q"]
    assert exit_code(args) == 2
    assert lab.read_bytes() == before
    assert "refusing to overwrite an input" in capsys.readouterr().err
