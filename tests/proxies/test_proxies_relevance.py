from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fireval.core.collection import Collection
from fireval.core.errors import FirevalError, InputError
from fireval.core.run import Run
from fireval.proxies.relevance import ProxyRelevance, caption_sets, video_relevance

QUERIES = [
    ("q0", "v0", "a man is riding a horse on a beach"),
    ("q1", "v1", "a woman is cooking pasta in the kitchen"),
    ("q2", "v2", "two dogs are playing with a ball"),
    ("q3", "v3", "a boy plays the guitar"),
    ("q4", "v2", "a man is riding a horse on a beach"),  # repeated text: computed once
]
DOCS = [
    ("d0", "v0", "a man rides a horse"),
    ("d1", "v0", "horses running on the sand"),
    ("d2", "v1", "someone cooks noodles"),
    ("d3", "v1", "a lady is cooking in a kitchen"),
    ("d4", "v1", "a chef makes pasta"),
    ("d5", "v2", "dogs play fetch with a ball"),
    ("d6", "v3", "a kid playing guitar"),
    ("d7", "v3", "a man plays a guitar on a beach"),
    ("d8", "v1", "a lady is cooking in a kitchen"),  # repeat within a video: weighs twice in mean
]


@pytest.fixture(scope="module")
def colls() -> tuple[Collection, Collection]:
    q = Collection.from_pairs("toy", QUERIES)
    d = Collection.from_pairs("toy-caps", DOCS, video_ids=["v0", "v1", "v2", "v3"])
    return q, d


def _iou(a: set[str], b: set[str]) -> float:
    u = len(a | b)
    return len(a & b) / u if u else 0.0


@pytest.mark.parametrize("proxy", ["bow", "pos", "syn"])
@pytest.mark.parametrize("agg", ["max", "mean"])
def test_set_proxies_equal_per_pair_reference(colls, pipeline, proxy: str, agg: str) -> None:  # type: ignore[no-untyped-def]
    q, d = colls
    rel = video_relevance(q, proxy, agg, d, pipeline=pipeline, chunk=3)
    qs = caption_sets(q.captions, proxy, pipeline)
    ds = caption_sets(d.captions, proxy, pipeline)
    for i in range(q.n_captions):
        for v in range(q.n_videos):
            vals = [
                np.mean([_iou(set(qs[p][i]), set(ds[p][k])) for p in range(len(qs))])
                for k in np.flatnonzero(d.caption_video == v)
            ]
            want = max(vals) if agg == "max" else float(np.mean(vals))
            assert rel.grades[i, v] == pytest.approx(want, abs=1e-6), (i, v)
    assert rel.meta["proxy"] == proxy and rel.meta["collection"] == "toy"
    assert rel.source == f"proxy:{proxy}"


def test_bow_hand_values(colls, pipeline) -> None:  # type: ignore[no-untyped-def]
    q, d = colls
    rel = video_relevance(q, "bow", "max", d, pipeline=pipeline)
    # q3 {boy, play, guitar} vs d6 {kid, play, guitar}: 2/4 ; vs d7 {man, play, guitar, beach}: 2/5
    assert rel.grades[3, 3] == pytest.approx(0.5)
    # q0 {man, ride, horse, beach} vs d7: {man, beach} / 6 = 1/3 -> video v3
    assert rel.grades[0, 3] == pytest.approx(2 / 6)


def test_meteor_relevance_matches_nltk(colls, pipeline, wn) -> None:  # type: ignore[no-untyped-def]
    from nltk.translate.meteor_score import single_meteor_score

    from fireval.proxies.text import tokenize

    q, d = colls
    rel = video_relevance(q, "meteor", "max", d, pipeline=pipeline)
    for i in range(q.n_captions):
        for v in range(q.n_videos):
            want = max(
                single_meteor_score(tokenize(d.captions[k]), tokenize(q.captions[i]), wordnet=wn)
                for k in np.flatnonzero(d.caption_video == v)
            )
            assert rel.grades[i, v] == pytest.approx(want, abs=1e-6)


def test_save_load_and_read_as_graded_labels(colls, pipeline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from fireval.formats.labels import read_graded_labels

    q, d = colls
    rel = video_relevance(q, "pos", "max", d, pipeline=pipeline)
    p = tmp_path / "pos.npz"
    rel.save(p)
    back = ProxyRelevance.load(p)
    np.testing.assert_array_equal(back.grades, rel.grades)
    assert back.meta["proxy"] == "pos" and back.meta["agg"] == "max"
    j = read_graded_labels(p, q)
    assert j.sources == ("proxy:pos",) and len(j) == q.n_captions * q.n_videos
    np.testing.assert_allclose(j.matrix().toarray(), rel.grades, atol=1e-7)
    jn = back.to_judgments(keep_zeros=False)
    assert len(jn) == int((rel.grades > 0).sum())
    rel.save(tmp_path / "nz.npz", judge_zeros=False)
    np.testing.assert_array_equal(ProxyRelevance.load(tmp_path / "nz.npz").grades, rel.grades)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError):
        ProxyRelevance.load(tmp_path / "bad.npz")
    with pytest.raises(InputError, match="not found") as err:
        ProxyRelevance.load(tmp_path / "missing.npz")
    assert "missing.npz" in str(err.value)


def test_errors(colls, pipeline) -> None:  # type: ignore[no-untyped-def]
    q, d = colls
    with pytest.raises(FirevalError, match="unknown proxy"):
        video_relevance(q, "glove", "max", d)
    with pytest.raises(FirevalError, match="25%"):
        video_relevance(q, "meteor", "words25", d)
    other = Collection.from_pairs("x", [("z", "vz", "hello")])
    with pytest.raises(InputError, match="no captions"):
        video_relevance(q, "bow", "max", other, pipeline=pipeline)


def _wray_ndcg_reference(sim: np.ndarray, rel: np.ndarray) -> float:
    """Wray et al.'s NDCG.py, re-derived: per query rank by score, keep the first R ranks
    (R = #items with relevance > 0), DCG = sum rel / log2(rank + 1), IDCG on sorted rels."""
    vals = []
    for s, r in zip(sim, rel):
        k = int((r > 0).sum())
        if k == 0:
            continue
        order = np.argsort(-s, kind="stable")[:k]
        disc = 1 / np.log2(np.arange(2, k + 2))
        dcg = (r[order] * disc).sum()
        idcg = (np.sort(r)[::-1][:k] * disc).sum()
        vals.append(dcg / idcg)
    return float(np.mean(vals))


def test_wray_ndcg_uses_metrics_engine_and_eq3(colls, pipeline) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.ndcg import wray_ndcg

    q, d = colls
    rel = video_relevance(q, "bow", "max", d, pipeline=pipeline)
    rng = np.random.default_rng(0)
    scores = rng.random(q.shape)  # continuous: no ties
    out = wray_ndcg(Run("r", scores=scores), rel.to_judgments())
    assert out["t2v"] == pytest.approx(_wray_ndcg_reference(scores, rel.grades), abs=1e-9)
    assert out["v2t"] == pytest.approx(_wray_ndcg_reference(scores.T, rel.grades.T), abs=1e-9)
    assert out["mean"] == pytest.approx((out["t2v"] + out["v2t"]) / 2)


def test_caption_similarity_dense(pipeline) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import caption_similarity

    m = caption_similarity(
        ["a man rides a horse", "a dog"], ["a man is riding horses", "cats"], "bow", pipeline
    )
    np.testing.assert_allclose(m, [[1.0, 0.0], [0.0, 0.0]], atol=1e-6)
    met = caption_similarity(["a man rides a horse"], ["a man rides a horse"], "meteor", pipeline)
    assert met[0, 0] == pytest.approx(1 - 0.5 * (1 / 5) ** 3, abs=1e-6)  # 5 of 5 matched in 1 chunk
