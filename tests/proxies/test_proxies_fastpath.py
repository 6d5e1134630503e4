"""The SciPy-free BoW path of ``proxies build`` (issue 14, item 3): the numpy max-IoU kernel,
the columnar analyses and their one-blob parse cache, and a warm CLI run without SciPy.

The oracle for the kernel is :func:`fireval.proxies.relevance.set_relevance` (the SciPy sparse
path) and, for small cases, a per-pair Python ``set`` IoU written from the definition.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fireval.proxies.cache import DB_NAME, ParseCache
from fireval.proxies.iou import binary_rows, video_max_iou
from fireval.proxies.relevance import set_relevance

pytestmark = pytest.mark.usefixtures("private_cache")  # conftest: a private cache directory


class _NoTagger:
    def __getattr__(self, name: str) -> object:
        raise AssertionError("the tagger was used although the captions were cached")


def _random_sets(rng: np.random.Generator, n: int, vocab: int, max_len: int) -> list[list[str]]:
    # repeated items, empty sets and identical sets all occur
    return [[f"w{x}" for x in rng.integers(0, vocab, rng.integers(0, max_len + 1))] for _ in range(n)]


def _pairwise_reference(q: list[list[str]], d: list[list[str]], doc_video: np.ndarray, nv: int) -> np.ndarray:
    out = np.zeros((len(q), nv), np.float64)
    for i, a in enumerate(q):
        sa = set(a)
        for j, b in enumerate(d):
            sb = set(b)
            u = len(sa | sb)
            if u:
                out[i, doc_video[j]] = max(out[i, doc_video[j]], len(sa & sb) / u)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_kernel_equals_set_relevance_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nq, nd, nv = int(rng.integers(1, 60)), int(rng.integers(1, 200)), int(rng.integers(1, 40))
    vocab, max_len = int(rng.integers(1, 30)), int(rng.integers(0, 12))
    q = _random_sets(rng, nq, vocab, max_len)
    d = _random_sets(rng, nd, vocab, max_len)
    doc_video = rng.integers(0, nv, nd)  # interleaved videos; some videos have no doc
    ref = set_relevance([q], [d], doc_video, nv, "max")
    voc: dict[str, int] = {}
    qr, voc = binary_rows(q, voc)
    dr, voc = binary_rows(d, voc)
    for kw in ({}, {"block_triples": 3, "block_cells": 1}, {"block_triples": 50, "block_cells": 400}):
        got = video_max_iou(qr, dr, doc_video, nv, **kw)  # type: ignore[arg-type]
        assert got.dtype == np.float32 and got.tobytes() == ref.tobytes()
    np.testing.assert_allclose(ref, _pairwise_reference(q, d, doc_video, nv), rtol=1e-6)
    # into a given (dirty, non-contiguous) output
    buf = np.full((nq, 2 * nv), 7.0, np.float32)
    video_max_iou(qr, dr, doc_video, nv, out=buf[:, ::2])
    assert buf[:, ::2].tobytes() == ref.tobytes()


def test_kernel_edge_cases() -> None:
    empty = (np.zeros(3, np.int64), np.zeros(0, np.int64))  # two empty sets
    one = (np.array([0, 2]), np.array([0, 1]))
    assert not video_max_iou(empty, one, np.array([0]), 2).any()
    assert not video_max_iou(one, empty, np.array([0, 1]), 2).any()
    got = video_max_iou(one, (np.array([0, 1, 2]), np.array([1, 0])), np.array([1, 1]), 3)
    assert got.tolist() == [[0.0, 0.5, 0.0]]


def test_analyses_columns_round_trip(pipeline, msrvtt_captions) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.text import STOP_WORDS, Analyses, spacy_stop_words

    texts = [c for v in sorted(msrvtt_captions)[:20] for c in msrvtt_captions[v]]
    texts += ["", "A man... is RUNNING!", "a man is running", "\u00e9t\u00e9 caf\u00e9 2024"]
    an = pipeline.analyse_all(texts)
    cols = Analyses.from_list(an)
    assert len(cols) == len(texts)
    back = Analyses.from_blob(cols.to_blob(), len(texts))
    assert back is not None
    for c in (cols, back):
        v = np.array(c.vocab, dtype=object)
        for i, a in enumerate(an):
            lo, hi = c.offsets[i], c.offsets[i + 1]
            assert tuple(v[c.tokens[lo:hi]]) == a.tokens
            assert tuple(v[c.tags[lo:hi]]) == a.tags
            assert tuple(v[c.lemmas[lo:hi]]) == a.lemmas
        for stop in (STOP_WORDS, spacy_stop_words()):
            lengths, ids = c.content_lemma_ids(stop)
            parts = np.split(v[ids], np.cumsum(lengths)[:-1])
            assert [list(p) for p in parts] == [a.content_lemmas(stop) for a in an]
    blob = cols.to_blob()
    assert Analyses.from_blob(blob, len(texts) + 1) is None  # another list of texts
    for bad in (b"", blob[:-1], blob + b"\0\0\0\0", b"x" + blob[1:]):
        assert Analyses.from_blob(bad, len(texts)) is None
    tampered = bytearray(blob)
    tampered[-4:] = np.array([10**6], "<i4").tobytes()  # an id past the vocabulary
    assert Analyses.from_blob(bytes(tampered), len(texts)) is None


def test_columns_blob_cache(wn, msrvtt_captions, private_cache: Path) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.text import TextPipeline, default_parse_cache, texts_digest

    texts = [c for v in sorted(msrvtt_captions)[:15] for c in msrvtt_captions[v]]
    with default_parse_cache() as cache:
        cold = TextPipeline(wordnet=wn, cache=cache).analyse_columns(texts)
    with default_parse_cache() as cache:  # one blob, no per-text look-up, no tagger
        pl = TextPipeline(wordnet=object(), tagger=_NoTagger(), cache=cache)
        warm = pl.analyse_columns(texts)
        assert cache.hits == cache.misses == 0
        # a different list (one text changed) misses the blob but finds the per-text rows
        other = pl.analyse_columns([*texts[:-1], texts[0]])
        assert cache.misses == 0 and cache.hits > 0
    assert len(other) == len(texts)
    for a, b in zip(
        (cold.vocab, cold.offsets, cold.tokens, cold.tags, cold.lemmas),
        (warm.vocab, warm.offsets, warm.tokens, warm.tags, warm.lemmas),
    ):
        assert np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    assert texts_digest(["ab", "c"]) != texts_digest(["a", "bc"]) != texts_digest(["a\0bc"])
    # a damaged blob is ignored, reparsed and replaced
    con = sqlite3.connect(private_cache / DB_NAME)
    assert con.execute("UPDATE columns SET value = x'00'").rowcount >= 1
    con.commit()
    con.close()
    with default_parse_cache() as cache:
        again = TextPipeline(wordnet=wn, cache=cache).analyse_columns(texts)
    assert again.to_blob() == cold.to_blob()
    with default_parse_cache() as cache:
        assert cache.get_columns(texts_digest(texts)) == cold.to_blob()


def test_columns_blob_under_other_version_misses(tmp_path: Path) -> None:
    with ParseCache(tmp_path, version="v1") as c:
        c.put_columns("k", b"blob")
        assert c.get_columns("k") == b"blob"
    with ParseCache(tmp_path, version="v2") as c:
        assert c.get_columns("k") is None
        c.clear()
    with ParseCache(tmp_path, version="v1") as c:
        assert c.get_columns("k") is None


def test_video_relevance_bow_max_equals_sparse_path(pipeline, msrvtt_captions) -> None:  # type: ignore[no-untyped-def]
    """The numpy BoW path of video_relevance against caption_sets + set_relevance (SciPy)."""
    from fireval.core.collection import Collection
    from fireval.proxies.relevance import caption_sets, doc_captions, video_relevance
    from fireval.proxies.text import TextOptions

    vids = sorted(msrvtt_captions)[:60]
    caps = [c for v in vids for c in msrvtt_captions[v]]
    cv = np.repeat(np.arange(len(vids)), [len(msrvtt_captions[v]) for v in vids])
    coll = Collection(
        name="t", caption_ids=tuple(f"c{i}" for i in range(len(caps))), video_ids=tuple(vids),
        captions=tuple(caps), caption_video=cv,
    )  # fmt: skip
    queries = Collection(
        name="q", caption_ids=tuple(f"q{i}" for i in range(len(vids))), video_ids=tuple(vids),
        captions=tuple(msrvtt_captions[v][3] for v in vids), caption_video=np.arange(len(vids)),
    )  # fmt: skip
    for words, stop in (("lemma", "glasgow"), ("surface", "spacy"), ("lemma", "spacy")):
        opts = TextOptions(words, stop)
        for q, vc in ((coll, None), (queries, coll)):
            _, keep, doc_video = doc_captions(q, vc)
            d_texts = [(vc or q).captions[i] for i in keep]
            ref = set_relevance(
                caption_sets(q.captions, "bow", pipeline, opts),
                caption_sets(d_texts, "bow", pipeline, opts),
                doc_video,
                q.n_videos,
                "max",
            )
            got = video_relevance(q, "bow", "max", vc, pipeline=pipeline, options=opts).grades
            assert got.tobytes() == ref.tobytes()
            assert (got > 0).sum() > q.n_captions


def test_nltk_version_matches_metadata() -> None:
    from importlib.metadata import version

    from fireval.proxies.text import _nltk_version

    assert _nltk_version() == version("nltk")


_DRIVER = """
import json, sys
import fireval.cli
try:
    fireval.cli.main(json.loads(sys.argv[1]))
except SystemExit as exc:
    assert not exc.code, exc.code
heavy = ("scipy", "pandas", "sklearn", "nltk", "sqlalchemy", "pyarrow", "matplotlib", "importlib.metadata")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def test_warm_bow_build_imports_nothing_heavy(tmp_path: Path, private_cache: Path) -> None:
    """A warm ``proxies build --proxy bow`` (the issue-14 target) runs without SciPy, NLTK or
    pandas; its output equals the cold run's."""
    import os

    csv = tmp_path / "toy.csv"
    csv.write_text(
        "key,vid_key,video_id,sentence\nr0,m0,video0,a man is riding a horse\n"
        "r1,m1,video1,a woman is cooking pasta\nr2,m2,video2,men ride horses\n"
    )
    env = {**os.environ, "FIREVAL_CACHE_DIR": str(private_cache)}
    loaded = []
    for name in ("cold", "warm"):
        args = ["proxies", "build", "-c", str(csv), "--proxy", "bow", "-o", str(tmp_path / f"{name}.npz")]
        res = subprocess.run(
            [sys.executable, "-c", _DRIVER, json.dumps(args)], capture_output=True, text=True, env=env
        )
        assert res.returncode == 0, res.stderr
        loaded.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert loaded[1] == []
    with np.load(tmp_path / "cold.npz") as a, np.load(tmp_path / "warm.npz") as b:
        for k in ("rows", "cols", "grades", "caption_ids", "video_ids"):
            assert np.array_equal(a[k], b[k])
        assert a["grades"].max() > 0.5


def _blob_writer(directory: str, start: int, out: object) -> None:
    try:
        with ParseCache(directory, version="v") as c:
            for i in range(start, start + 60):  # overlapping keys, one transaction each
                blob = bytes([i % 251]) * (1000 + i)  # both writers store the same value per key
                c.put_columns(f"d{i}", blob)
                assert c.get_columns(f"d{i}") == blob
            assert not c._broken
        out.put("ok")  # type: ignore[attr-defined]
    except BaseException as exc:  # report to the parent
        out.put(repr(exc))  # type: ignore[attr-defined]


def test_two_processes_write_column_blobs(tmp_path: Path) -> None:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_blob_writer, args=(str(tmp_path), s, q)) for s in (0, 30)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["ok", "ok"]
    with ParseCache(tmp_path, version="v") as c:
        for i in range(90):
            assert c.get_columns(f"d{i}") == bytes([i % 251]) * (1000 + i)
    con = sqlite3.connect(tmp_path / DB_NAME)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
