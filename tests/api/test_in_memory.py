"""In-memory evaluation: ``fireval.evaluate(scores, collection=...)`` on arrays, tensors and array-likes.

Oracles are written from the definitions, not from the code under test: with one relevant video
per caption and no ties, the rank of caption i's video is 1 + the number of videos scored
strictly higher; R@K (= C@K) is the share of ranks <= K, MdR/MnR their median/mean. With every
score tied, the expected rank over random orderings is (n + 1) / 2 and C@K = K / n.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fireval
from fireval import api
from fireval.core import Collection, InputError, Judgments, Run, merge
from fireval.metrics import evaluate as metrics_evaluate


def _ranks(s: np.ndarray) -> np.ndarray:
    """1-based rank of the diagonal entry in each row (no ties)."""
    return 1 + (s > np.diag(s)[:, None]).sum(axis=1)


def _oracle(s: np.ndarray) -> dict[str, dict[str, float]]:
    out = {}
    for d, m in (("t2v", s), ("v2t", s.T)):
        r = _ranks(m)
        out[d] = {f"R@{k}": 100.0 * float(np.mean(r <= k)) for k in (1, 5, 10)}
        out[d]["MdR"] = float(np.median(r))
        out[d]["MnR"] = float(np.mean(r))
    return out


def _scores(seed: int, n: int = 1000, signal: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n)) + signal * np.eye(n)).astype(np.float32)


@pytest.fixture(scope="module")
def msrvtt() -> Collection:
    return api.load_collection("msrvtt-1ka")


def test_import_fireval_stays_light() -> None:
    code = (
        "import sys, fireval; "
        "heavy = [m for m in ('pandas', 'scipy', 'matplotlib', 'torch', 'sqlalchemy') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numpy_matches_definition(seed: int, msrvtt: Collection) -> None:
    s = _scores(seed, signal=1.5 + seed)
    got = fireval.evaluate(s, collection="msrvtt-1ka", measures="R@1,R@5,R@10,MdR,MnR").to_dict(
        names="tvr", units="percent"
    )
    want = _oracle(s)
    assert set(got) == {"t2v", "v2t"}
    for d in ("t2v", "v2t"):
        assert set(got[d]) == set(want[d])
        for k, v in want[d].items():
            assert got[d][k] == pytest.approx(v, abs=1e-9), (d, k)


def test_same_result_as_file_api(tmp_path: Path, msrvtt: Collection) -> None:
    s = _scores(3)
    np.save(tmp_path / "run.npy", s)
    from_file = metrics_evaluate(api.load_run(tmp_path / "run.npy", msrvtt), msrvtt.instance_judgments())
    in_memory = fireval.evaluate(s, collection=msrvtt)
    cols = ["direction", "unjudged", "ties", "measure"]
    a = from_file.table.set_index(cols)["value"]
    b = in_memory.table.set_index(cols)["value"]
    assert list(a.index) == list(b.index)
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy())
    assert set(in_memory.table["labels"]) == {"original"} and set(in_memory.table["run"]) == {"run"}


def test_all_ties_expected_values(msrvtt: Collection) -> None:
    n = msrvtt.n_videos
    d = fireval.evaluate(np.zeros((n, n)), collection=msrvtt, measures="R@1,R@10,MdR,MnR").to_dict(
        names="tvr", units="percent"
    )
    for direction in ("t2v", "v2t"):
        assert d[direction]["R@1"] == pytest.approx(100.0 / n)
        assert d[direction]["R@10"] == pytest.approx(1000.0 / n)
        assert d[direction]["MnR"] == pytest.approx((n + 1) / 2)
        assert d[direction]["MdR"] == pytest.approx((n + 1) / 2)


def test_to_dict_names_units_and_modes(msrvtt: Collection) -> None:
    s = _scores(4)
    ev = fireval.evaluate(s, collection=msrvtt, unjudged=("lower", "upper"))
    tvr = ev.to_dict(names="tvr")
    ir = ev.to_dict(names="ir")
    assert "R@1" in tvr["t2v"] and "C@1" not in tvr["t2v"]
    assert "C@1" in ir["t2v"] and ir["t2v"]["C@1"] == tvr["t2v"]["R@1"]
    # one unit with .value and .table (issue 24: to_dict gave 34.4 where .value gave 0.344):
    # fractions, ranks for MdR/MnR; percent only when asked for
    assert tvr["t2v"]["R@1"] == ev.value("C@1") == ev.value("R@1")
    assert tvr["v2t"]["MnR"] == pytest.approx(ev.value("MnR", "v2t"))
    assert tvr["both"]["meanR"] == pytest.approx(float(ev.table.query("measure == 'meanR'").value.iloc[0]))
    pct = ev.to_dict(names="tvr", units="percent")
    assert pct["t2v"]["R@1"] == pytest.approx(100 * ev.value("C@1")) == ev.value("C@1", units="percent")
    assert pct["v2t"]["MnR"] == tvr["v2t"]["MnR"] == ev.value("MnR", "v2t", units="percent")
    with pytest.raises(fireval.FirevalError, match="fraction"):
        ev.to_dict(names="tvr", units="%")
    # the first evaluated mode by default; another on request
    upper = ev.to_dict(names="tvr", unjudged="upper")
    assert upper["t2v"]["R@1"] == pytest.approx(ev.value("C@1", unjudged="upper"))
    assert upper["t2v"]["R@1"] > tvr["t2v"]["R@1"]
    with pytest.raises(fireval.FirevalError, match="condensed"):
        ev.to_dict(names="tvr", unjudged="condensed")
    with pytest.raises(fireval.FirevalError, match="tvr"):
        ev.to_dict(names="paper")
    # the full record is unchanged without names
    assert set(ev.to_dict()) >= {"table", "tie_report", "warnings"}


def test_direction_and_measures(msrvtt: Collection) -> None:
    s = _scores(5)
    ev = fireval.evaluate(s, collection=msrvtt, direction="v2t", measures=["R@1", "MdR"])
    assert set(ev.table["direction"]) == {"v2t"}
    assert set(ev.to_dict(names="tvr")["v2t"]) == {"R@1", "MdR"}
    ev = fireval.evaluate(s, collection=msrvtt, preset="clip4clip", direction="t2v")
    assert set(ev.to_dict(names="tvr")["t2v"]) == {"R@1", "R@5", "R@10", "MdR", "MnR"}


def test_array_likes_and_dtypes(msrvtt: Collection) -> None:
    s = _scores(6, n=1000)
    ref = fireval.evaluate(s, collection=msrvtt, measures="C@1,MnR").to_dict(names="ir")
    as_list = fireval.evaluate(s.tolist(), collection=msrvtt, measures="C@1,MnR").to_dict(names="ir")
    assert as_list["t2v"] == pytest.approx(ref["t2v"]) and as_list["v2t"] == pytest.approx(ref["v2t"])
    half = fireval.evaluate(s.astype(np.float16), collection=msrvtt, measures="C@1")
    assert half.table["value"].notna().all()
    ints = (np.eye(1000) * 3).astype(np.int32)  # integer scores: the diagonal wins every row
    assert fireval.evaluate(ints, collection=msrvtt, measures="C@1").value("C@1") == 1.0
    v2t = api.load_run(s.T.copy(), msrvtt, direction="v2t", name="t")
    assert v2t.name == "t" and np.array_equal(v2t.scores, s)


class _FakeTensor:
    """Quacks like a torch tensor: the adapter must detach, move to CPU and call .numpy()."""

    calls: list[str]

    def __init__(self, a: np.ndarray) -> None:
        self.a, self.calls, self.dtype = a, [], "torch.float32"

    def detach(self) -> _FakeTensor:
        self.calls.append("detach")
        return self

    def cpu(self) -> _FakeTensor:
        self.calls.append("cpu")
        return self

    def numpy(self) -> np.ndarray:
        self.calls.append("numpy")
        return self.a

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:  # pragma: no cover - must not be used
        raise AssertionError("a torch tensor must go through .detach().cpu().numpy()")


_FakeTensor.__module__ = "torch"


def test_tensor_like_goes_through_detach_cpu_numpy(msrvtt: Collection) -> None:
    s = _scores(7)
    t = _FakeTensor(s)
    got = fireval.evaluate(t, collection=msrvtt, measures="R@1,MnR").to_dict(names="tvr", units="percent")
    assert t.calls == ["detach", "cpu", "numpy"]
    want = _oracle(s)
    assert got["t2v"]["R@1"] == pytest.approx(want["t2v"]["R@1"])
    assert got["v2t"]["MnR"] == pytest.approx(want["v2t"]["MnR"])


def test_real_torch_tensor(msrvtt: Collection) -> None:
    torch = pytest.importorskip("torch")
    s = _scores(8)
    want = _oracle(s)
    t = torch.from_numpy(s).requires_grad_(True)
    got = fireval.evaluate(t * 1.0, collection=msrvtt, measures="R@1,R@5,MdR").to_dict(
        names="tvr", units="percent"
    )
    assert got["t2v"]["R@1"] == pytest.approx(want["t2v"]["R@1"])
    assert got["v2t"]["MdR"] == pytest.approx(want["v2t"]["MdR"])
    # bfloat16 has no numpy dtype: widened, still evaluated (rounding may create ties, so only sanity)
    b = fireval.evaluate(t.detach().to(torch.bfloat16), collection=msrvtt, measures="R@1")
    assert 0.0 < b.value("C@1") <= 1.0


def test_collection_forms(tmp_path: Path, msrvtt: Collection) -> None:
    s = _scores(9)
    by_name = fireval.evaluate(s, collection="msrvtt-1ka", measures="C@1").value("C@1")
    assert fireval.evaluate(s, collection="MSRVTT-1k-A", measures="C@1").value("C@1") == by_name
    assert fireval.evaluate(s, collection=msrvtt, measures="C@1").value("C@1") == by_name
    csv = tmp_path / "tiny.csv"
    csv.write_text(
        "key,vid_key,video_id,sentence\nq0,m0,v0,a cat\nq1,m1,v1,a dog\nq2,m2,v2,a bird\n", encoding="utf-8"
    )
    small = np.array([[3.0, 1.0, 0.0], [0.0, 1.0, 2.0], [0.0, 1.0, 2.0]])
    got = fireval.evaluate(small, collection=csv, measures="R@1,MnR").to_dict(names="tvr", units="percent")
    # t2v ranks of the own video: q0 -> 1, q1 -> 2, q2 -> 1
    assert got["t2v"]["R@1"] == pytest.approx(200 / 3)
    assert got["t2v"]["MnR"] == pytest.approx(4 / 3)
    with pytest.raises(InputError, match="registered: msrvtt-1ka"):
        fireval.evaluate(s, collection="msrvtt-7k")
    with pytest.raises(InputError, match="Collection, a path or a registered name"):
        fireval.evaluate(s, collection=42)


def test_labels_forms(msrvtt: Collection) -> None:
    s = _scores(10)
    top1 = s.argmax(axis=1)
    wrong = np.flatnonzero(top1 != np.arange(1000))
    human = Judgments.from_arrays(msrvtt.shape, wrong, top1[wrong], np.ones(wrong.size), "human")
    aug = merge([msrvtt.instance_judgments(), human])
    ev = fireval.evaluate(s, collection=msrvtt, labels=aug, measures="C@1", direction="t2v")
    assert ev.value("C@1") == 1.0 and set(ev.table["labels"]) == {"labels"}
    # labels alone give the shape (no collection)
    assert fireval.evaluate(s, labels=aug, measures="C@1", direction="t2v").value("C@1") == 1.0
    inst = fireval.evaluate(s, collection=msrvtt, labels="instance", measures="C@1")
    assert set(inst.table["labels"]) == {"original"}


def test_legacy_run_judgments_call(msrvtt: Collection) -> None:
    s = _scores(11)
    run = Run("mine", scores=s)
    ev = fireval.evaluate(run, msrvtt.instance_judgments(), measures="C@1")
    assert set(ev.table["run"]) == {"mine"}
    assert ev.value("C@1") == pytest.approx(_oracle(s)["t2v"]["R@1"] / 100)


@pytest.mark.parametrize(
    ("scores", "match"),
    [
        (np.zeros((1000, 999)), r"shape \(1000, 999\).*expects \(1000, 1000\)"),
        (np.zeros(1000), "2-D matrix"),
        (np.array([["a"] * 1000] * 1000), "real numbers"),
        ([[1.0, 2.0], [3.0]], "numeric array"),
    ],
)
def test_bad_scores_say_what_is_wrong(scores: object, match: str, msrvtt: Collection) -> None:
    with pytest.raises(InputError, match=match):
        fireval.evaluate(scores, collection=msrvtt)


def test_transposed_and_nan_scores() -> None:
    coll = Collection.from_pairs("two", [("c0", "v0", "x"), ("c1", "v0", "y"), ("c2", "v1", "z")])
    with pytest.raises(InputError, match="looks transposed"):
        fireval.evaluate(np.zeros((2, 3)), collection=coll)
    bad = np.zeros((3, 2))
    bad[1, 1] = np.nan
    with pytest.raises(InputError, match="NaN"):
        fireval.evaluate(bad, collection=coll)
    with pytest.raises(InputError, match="collection="):
        fireval.evaluate(np.zeros((3, 2)))


def test_collection_repr_is_one_line(msrvtt: Collection) -> None:
    assert repr(msrvtt) == "Collection('msrvtt-1ka', 1000 captions, 1000 videos)"
    assert str(msrvtt) == repr(msrvtt)


def test_dataframe_labels_are_used_not_positions(msrvtt: Collection) -> None:
    """A DataFrame with caption/video ids used to be read by position: a sorted frame gave R@1 0.0."""
    import pandas as pd

    s = _scores(3)
    want = _oracle(s)
    df = pd.DataFrame(s, index=list(msrvtt.caption_ids), columns=list(msrvtt.video_ids))
    rng = np.random.default_rng(4)
    shuffled = df.iloc[rng.permutation(1000), rng.permutation(1000)]
    got = fireval.evaluate(shuffled, collection=msrvtt, measures="R@1,R@5,MdR,MnR").to_dict(
        names="tvr", units="percent"
    )
    for d in ("t2v", "v2t"):
        for m in ("R@1", "R@5", "MdR", "MnR"):
            assert got[d][m] == pytest.approx(want[d][m]), (d, m)
    # a frame sorted by its integer index (0..n-1 permuted) is read by those positions
    got = fireval.evaluate(
        pd.DataFrame(s).sample(frac=1.0, random_state=0), collection=msrvtt, measures="R@1"
    )
    assert got.to_dict(names="tvr", units="percent")["t2v"]["R@1"] == pytest.approx(want["t2v"]["R@1"])
    # a videos x captions frame is refused with a hint, and reads with load_run(direction="v2t")
    with pytest.raises(InputError, match=r"looks transposed; pass frame\.T"):
        fireval.evaluate(df.T, collection=msrvtt)
    run = api.load_run(df.T, msrvtt, direction="v2t")
    got = fireval.evaluate(run, collection=msrvtt, measures="R@1").to_dict(names="tvr", units="percent")
    assert got["t2v"]["R@1"] == pytest.approx(want["t2v"]["R@1"])


def test_transposed_hint_does_not_point_to_evaluate_direction() -> None:
    """``direction=`` of fireval.evaluate picks directions to evaluate; the hint must not suggest it."""
    coll = Collection.from_pairs("two", [("c0", "v0", "x"), ("c1", "v0", "y"), ("c2", "v1", "z")])
    with pytest.raises(InputError, match=r"pass scores\.T, or fireval\.api\.load_run\(.*direction='v2t'\)"):
        fireval.evaluate(np.zeros((2, 3)), collection=coll)


def _overruled_fire(tmp_path: Path) -> tuple[Collection, Path]:
    coll = Collection.from_pairs("msrvtt-x", [(f"c{i}", f"v{i}", f"caption number {i}") for i in range(4)])
    fire = tmp_path / "fire.json"
    rec = {"label": "irrelevant", "video_id": "v0", "query": "caption number 0", "dataset": "MSRVTT"}
    fire.write_text(json.dumps({"annotations": [rec], "disagreements": []}))
    return coll, fire


def test_overruled_human_labels_are_in_the_evaluation_warnings(tmp_path: Path) -> None:
    coll, fire = _overruled_fire(tmp_path)
    ev = fireval.evaluate(np.eye(4), collection=coll, labels=str(fire), measures="C@1")
    assert any("conflict" in w for w in ev.warnings)
    # the same lines as api.label_warnings, which is what `fireval evaluate` prints
    expected = api.label_warnings({"augmented": api.label_sets(coll, [str(fire)])["augmented"]})
    assert expected and ev.warnings[: len(expected)] == expected


def test_merged_judgments_passed_in_carry_their_warnings(tmp_path: Path) -> None:
    coll, fire = _overruled_fire(tmp_path)
    judg = api.label_sets(coll, [str(fire)])["augmented"]
    ev = fireval.evaluate(np.eye(4), collection=coll, labels=judg, measures="C@1")
    assert ev.warnings[:1] == api.label_warnings({"labels": judg})
    assert not fireval.evaluate(np.eye(4), collection=coll, measures="C@1").warnings


SIMS = Path(__file__).resolve().parents[3] / "shared" / "data" / "msrvtt" / "sims"


@pytest.mark.skipif(not SIMS.is_dir(), reason="needs ../shared/data")
def test_checks_opt_in_names_a_misaligned_matrix(msrvtt: Collection) -> None:
    """GRAM's released 1k-A matrix is not in CSV row order (shared/data/SOURCES.md, "Alignment"):
    with checks=True the alignment check says so in .warnings; CLIP4Clip's (CSV order) passes;
    without checks nothing is run and the values are the same."""
    gram = np.load(SIMS / "GRAM_msrvtt.npy")
    c4c = np.load(SIMS / "clip4clip_msrvtt.npy")
    plain = fireval.evaluate(gram, collection=msrvtt, direction="t2v")
    checked = fireval.evaluate(gram, collection=msrvtt, direction="t2v", checks=True)
    assert plain.checks is None and not any("check" in w for w in plain.warnings)
    assert checked.records == plain.records
    assert any("alignment check fail" in w for w in checked.warnings), checked.warnings
    assert checked.checks.runs["run"]["alignment"].failed
    good = fireval.evaluate(c4c, collection=msrvtt, direction="t2v", checks=True)
    assert not any("alignment check" in w for w in good.warnings), good.warnings
    assert not good.checks.runs["run"]["alignment"].failed
    with pytest.raises(InputError, match="checks=True needs collection="):
        fireval.evaluate(c4c, labels=msrvtt.instance_judgments(), checks=True)
