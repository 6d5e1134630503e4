"""The bundled example and the TF-IDF caption-oracle baseline."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import numpy as np
import pytest

from fireval.baselines import caption_oracle_scores
from fireval.core import Collection, normalise
from fireval.formats import read_msrvtt_jsfusion
from fireval.formats.example import data_dir, load_example


def test_bundle_is_small_and_attributed():
    files = {f.name: f.stat().st_size for f in data_dir().iterdir() if f.is_file()}
    assert {"msrvtt_1ka.csv.gz", "msrvtt_1ka_captions.json.gz", "ATTRIBUTION.md"} <= set(files)
    assert sum(files.values()) < 2 * 2**20
    text = (data_dir() / "ATTRIBUTION.md").read_text()
    assert "Xu" in text and "bc88718199007d395136adc99a3e69adbee874a0" in text


def test_example_matches_shared_data(shared_data):
    ex = load_example()
    assert ex.collection.shape == (1000, 1000) and ex.video_captions.shape == (20000, 1000)
    assert ex.video_captions.video_ids == ex.collection.video_ids
    assert np.all(np.bincount(ex.video_captions.caption_video) == 20)
    ref = read_msrvtt_jsfusion(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv")
    assert ex.collection.captions == ref.captions and ex.collection.video_ids == ref.video_ids
    raw = json.loads((shared_data / "msrvtt" / "official_test" / "test.json").read_text())
    for i in (0, 4321, 19999):
        v = ex.video_captions.video_ids[ex.video_captions.caption_video[i]]
        assert raw[v][ex.video_captions.caption_ids[i]] == ex.video_captions.captions[i]


def _reference_oracle(queries: Collection, desc: Collection) -> np.ndarray:
    """Per-pair TF-IDF computed by hand (sklearn's default formulas), loops on purpose."""
    tok = re.compile(r"(?u)\b\w\w+\b")
    docs = [tok.findall(t.lower()) for t in desc.captions]
    n = len(docs)
    df = Counter(w for d in docs for w in set(d))
    idf = {w: math.log((1 + n) / (1 + k)) + 1 for w, k in df.items()}

    def vec(words):
        v = {w: c * idf[w] for w, c in Counter(words).items() if w in idf}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {w: x / norm for w, x in v.items()}

    dvec = [vec(d) for d in docs]
    out = np.zeros(queries.shape)
    for qi, qt in enumerate(queries.captions):
        qv = vec(tok.findall(qt.lower()))
        qvid = queries.video_ids[queries.caption_video[qi]]
        for vi, vid in enumerate(queries.video_ids):
            best = 0.0
            for ci in desc.captions_of(desc.video_index[vid]):
                if vid == qvid and normalise(desc.captions[ci]) == normalise(qt):
                    continue
                best = max(best, sum(x * dvec[ci].get(w, 0.0) for w, x in qv.items()))
            out[qi, vi] = best
    return out


def test_oracle_matches_hand_computation_and_leaves_source_out():
    desc = Collection.from_pairs(
        "d",
        [
            ("s1", "va", "A man is cooking pasta"),
            ("s2", "va", "a man cooks"),
            ("s3", "va", "a man is cooking pasta!"),
            ("s4", "vb", "A man is cooking pasta"),
            ("s5", "vb", "dogs run in the park"),
            ("s6", "vc", "kids play football"),
            ("s7", "vc", "children playing soccer outside"),
        ],
    )
    queries = Collection.from_pairs(
        "q",
        [
            ("q1", "va", "a man is cooking pasta"),
            ("q2", "vb", "dogs run"),
            ("q3", "vc", "kids play football"),
        ],
        video_ids=["vc", "va", "vb"],
    )
    got = caption_oracle_scores(queries, desc)
    assert got.dtype == np.float32 and got.shape == (3, 3)
    np.testing.assert_allclose(got, _reference_oracle(queries, desc), rtol=1e-5, atol=1e-6)
    col = queries.video_index
    # q1's own video: both normalised copies (s1, s3) are left out, s2 remains (< 1)
    assert 0 < got[0, col["va"]] < 0.99
    # the identical caption of *another* video is not left out
    assert got[0, col["vb"]] == pytest.approx(1.0)
    # q3's only matching caption in its own video is left out
    assert got[2, col["vc"]] < 0.5


def test_oracle_on_example_subset_and_full():
    ex = load_example()
    scores = caption_oracle_scores(ex.collection, ex.video_captions)
    assert scores.shape == (1000, 1000) and np.all(np.isfinite(scores))
    # cross-check a 12 x 12 corner against the loop reference over the same description corpus
    q = ex.collection
    sub = Collection.from_pairs(
        "s",
        [(q.caption_ids[i], q.video_ids[i], q.captions[i]) for i in range(12)],
        video_ids=list(q.video_ids[:12]),
    )
    ref = _reference_oracle(sub, ex.video_captions)
    np.testing.assert_allclose(scores[:12, :12], ref, rtol=1e-5, atol=1e-6)
    # a useful but imperfect baseline: the diagonal is the best column for a fair share of queries
    d = np.diag(scores)
    c1 = float(((scores > d[:, None]).sum(1) == 0).mean())
    assert 0.2 < c1 < 0.9
