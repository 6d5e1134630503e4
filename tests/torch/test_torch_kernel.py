"""The torch counting kernel gives the numpy path's numbers exactly: every measure, tie mode,
unjudged mode and preset, both directions, on random and tied scores (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch_helpers import all_measures, collection, labels  # noqa: E402

import fireval  # noqa: E402
from fireval.core.errors import InputError  # noqa: E402
from fireval.torch import counting as tcount  # noqa: E402
from fireval.torch.sources import TensorScores  # noqa: E402

MEASURES = all_measures(estimators=False)
ESTIMATORS = all_measures(estimators=True)  # bpref, infAP, infNDCG: not under worst/best
pytestmark = pytest.mark.usefixtures("torch_kernel_on_cpu")
MODES = ("lower", "upper", "condensed", "worst", "best")


def _records(ev):  # type: ignore[no-untyped-def]
    return ev.records, ev.tie_report, ev.warnings


@pytest.fixture
def device_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the calls of the torch kernel (proof that the device path ran)."""
    calls: list[int] = []
    real = tcount.count_marked

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr("fireval.torch.sources.count_marked", spy)
    monkeypatch.setattr(tcount, "CANDIDATE_MAX", tcount.CANDIDATE_MAX)  # restored after the test
    return calls


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**31 - 1),
    n_v=st.integers(1, 9),
    per=st.integers(1, 4),
    levels=st.sampled_from([2, 4, 0]),  # 0: continuous scores (few ties)
    dtype=st.sampled_from(["float32", "float64", "float16", "int"]),
    neg_inf=st.booleans(),
    ties=st.sampled_from(["tie-aware", "optimistic", "pessimistic", "docid"]),
    candidates=st.booleans(),
)
def test_torch_equals_numpy_every_measure_and_mode(
    device_calls: list[int],
    seed: int,
    n_v: int,
    per: int,
    levels: int,
    dtype: str,
    neg_inf: bool,
    ties: str,
    candidates: bool,
) -> None:
    tcount.CANDIDATE_MAX = (
        1.0 if candidates else 0.0
    )  # all float32 rows by candidates, or none (device_calls restores it)
    rng = np.random.default_rng(seed)
    coll = collection(n_v, per)
    n_c = n_v * per
    judg = labels(rng, n_c, n_v, per, extra=3 * n_c)
    s = rng.integers(0, levels, size=(n_c, n_v)).astype(np.float64) if levels else rng.normal(size=(n_c, n_v))
    if neg_inf:
        s[rng.random(s.shape) < 0.2] = -np.inf
    s = np.where(np.isinf(s), -5, s * 3).astype(np.int64) if dtype == "int" else s.astype(dtype)
    modes = [m for m in MODES if ties in ("tie-aware", "docid") or m not in ("worst", "best")]
    plain = [m for m in modes if m not in ("worst", "best")]  # the estimators' modes
    for measures, unjudged in ((MEASURES, modes), (ESTIMATORS, plain)):
        kw = dict(
            collection=coll, labels=judg, measures=measures, unjudged=unjudged, ties=ties, per_query=True
        )
        want = fireval.evaluate(s, **kw)
        calls = len(device_calls)
        got = fireval.evaluate(torch.from_numpy(s), **kw)
        assert len(device_calls) > calls  # lower and condensed were counted by the torch kernel
        assert _records(got) == _records(want)
        assert got.per_query.equals(want.per_query)


@pytest.mark.parametrize("preset", ["fire2023", "clip4clip", "wray2021"])
@pytest.mark.parametrize("direction", ["t2v", "v2t", "both"])
def test_presets_and_directions(preset: str, direction: str) -> None:
    rng = np.random.default_rng(7)
    coll = collection(12, 3)
    judg = labels(rng, 36, 12, 3, extra=60)
    s = rng.integers(0, 3, size=(36, 12)).astype(np.float32)
    kw = dict(collection=coll, labels=judg, preset=preset, direction=direction)
    assert _records(fireval.evaluate(torch.from_numpy(s), **kw)) == _records(fireval.evaluate(s, **kw))


@pytest.mark.parametrize("strategy", ["direct", "sorted", "candidates"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_strategy_gives_the_numpy_counts(
    strategy: str, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The torch strategies (few / many judged docs per query, few candidates) against numpy."""
    from fireval.metrics.counting import count_direct

    monkeypatch.setattr(tcount, "DIRECT_MAX_BY_DEVICE", {})  # the accelerators' choice
    monkeypatch.setattr(tcount, "CANDIDATE_MAX", 1.0 if strategy == "candidates" else 0.0)
    calls: list[str] = []
    for name in ("_direct", "_sorted", "_candidates"):
        real = getattr(tcount, name)
        monkeypatch.setattr(tcount, name, lambda *a, _r=real, _n=name: calls.append(_n) or _r(*a))
    rng = np.random.default_rng(3)
    block = rng.integers(0, 5, size=(40, 300)).astype(dtype)
    block[rng.random(block.shape) < 0.1] = -np.inf
    block[rng.random(block.shape) < 0.1] = -0.0
    per = 2 if strategy == "direct" else 20
    q = np.repeat(np.arange(40), per)
    doc = np.concatenate([rng.choice(300, per, replace=False) for _ in range(40)])
    c = tcount.count_marked(torch.from_numpy(block), q, doc)
    g, t = count_direct(block, q, block[q, doc])
    assert (c.g == g).all() and (c.t == t).all()
    ran = "sorted" if strategy == "candidates" and dtype == "float64" else strategy  # float32 only
    assert f"_{ran}" in calls


def test_transposed_bfloat16_and_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """v2t reads a transposed view; bfloat16 widens as the host path does; tiny batches agree."""
    monkeypatch.setattr(tcount, "CPU_BATCH_ELEMS", 7)
    rng = np.random.default_rng(4)
    coll = collection(10, 3)
    judg = labels(rng, 30, 10, 3, extra=40)
    s = torch.from_numpy(rng.integers(0, 4, size=(30, 10)).astype(np.float32)).to(torch.bfloat16)
    kw = dict(collection=coll, labels=judg, measures=MEASURES, unjudged=("lower", "condensed"), ties="docid")
    assert _records(fireval.evaluate(s, **kw)) == _records(fireval.evaluate(s.float().numpy(), **kw))


def test_bad_scores_name_the_position_as_the_numpy_path_does() -> None:
    coll = collection(4, 2)
    s = np.zeros((8, 4), np.float32)
    s[5, 2] = np.nan
    with pytest.raises(InputError) as want:
        fireval.evaluate(s, collection=coll)
    with pytest.raises(InputError) as got:
        fireval.evaluate(torch.from_numpy(s), collection=coll)
    assert str(got.value) == str(want.value)
    with pytest.raises(InputError, match="looks transposed"):
        fireval.evaluate(torch.zeros(4, 8), collection=coll)


def test_only_counts_leave_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """lower/condensed never ask the source for a host block."""

    def no_host(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("the score block was copied to the host")

    monkeypatch.setattr(TensorScores, "block", no_host)
    rng = np.random.default_rng(5)
    coll = collection(6, 2)
    s = torch.from_numpy(rng.normal(size=(12, 6)))
    ev = fireval.evaluate(s, collection=coll, unjudged=("lower", "condensed"))
    assert ev.value("C@1") >= 0


def test_cpu_tensors_are_counted_in_place_by_the_numpy_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the fixture's override a CPU tensor is host memory: the numpy kernels read it."""
    import fireval.torch

    monkeypatch.setattr(fireval.torch, "HOST_DEVICES", frozenset({"cpu"}))
    monkeypatch.setattr("fireval.torch.sources.count_marked", None)  # would fail if called
    rng = np.random.default_rng(6)
    coll = collection(8, 3)
    judg = labels(rng, 24, 8, 3, extra=30)
    s = rng.integers(0, 3, size=(24, 8)).astype(np.float32)
    kw = dict(collection=coll, labels=judg, measures=MEASURES)
    assert _records(fireval.evaluate(torch.from_numpy(s), **kw)) == _records(fireval.evaluate(s, **kw))
    t, v = torch.from_numpy(s[:, :3].copy()), torch.from_numpy(s[:8, :3].copy())
    a = fireval.evaluate(collection=coll, labels=judg, text_emb=t, video_emb=v, sim="dot")
    b = fireval.evaluate(collection=coll, labels=judg, text_emb=t.numpy(), video_emb=v.numpy(), sim="dot")
    assert _records(a) == _records(b)
