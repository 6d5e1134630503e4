"""The warm ``fireval proxies build --proxy bow`` path (issue 14, item 3): lemma BoW rows kept as
one parse-cache blob (:func:`fireval.proxies.relevance.bow_rows`), and one BLAS thread for the
command's process (:func:`fireval.proxies.single_blas_thread`).

Oracles: the rows computed without any cache (from the columnar analyses) and the relevance
computed without a cache; the BLAS setting is read back from a fresh interpreter.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fireval.proxies.cache import DB_NAME, encode_columns
from fireval.proxies.relevance import _rows_from_blob, bow_rows, bow_rows_key
from fireval.proxies.text import LEMMA_TEXT, TextOptions, TextPipeline, default_parse_cache

pytestmark = pytest.mark.usefixtures("private_cache")  # conftest: a private cache directory


class _NoPipeline:
    """Fails on any use of the tagger or WordNet."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"{name} was used although the rows were cached")


def _fail(*args: object) -> None:
    raise AssertionError("the captions were analysed although the rows were cached")


def _texts(msrvtt_captions: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    vids = sorted(msrvtt_captions)[:25]
    return [msrvtt_captions[v][0] for v in vids], [c for v in vids for c in msrvtt_captions[v]]


def _same(a, b) -> bool:  # type: ignore[no-untyped-def]
    return all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip((*a[0], *a[1]), (*b[0], *b[1])))


def test_warm_bow_rows_come_from_one_blob(wn, msrvtt_captions, private_cache: Path) -> None:  # type: ignore[no-untyped-def]
    q, d = _texts(msrvtt_captions)
    for opts in (LEMMA_TEXT, TextOptions("lemma", "spacy")):
        ref = bow_rows(q, d, TextPipeline(wordnet=wn), opts)  # no cache
        with default_parse_cache() as cache:  # cold: parses, stores analyses and rows
            assert _same(bow_rows(q, d, TextPipeline(wordnet=wn, cache=cache), opts), ref)
        with default_parse_cache() as cache:  # warm: one blob, no analyses, no tagger
            pl = TextPipeline(wordnet=_NoPipeline(), tagger=_NoPipeline(), cache=cache)
            pl.analyse_columns = pl.analyse_all = _fail  # type: ignore[method-assign]
            got = bow_rows(q, d, pl, opts)
            assert cache.hits == cache.misses == 0
        assert _same(got, ref)
    # the key covers both lists, their order and the stop list
    keys = {
        bow_rows_key(q, d, LEMMA_TEXT),
        bow_rows_key(d, q, LEMMA_TEXT),
        bow_rows_key(q, d, TextOptions("lemma", "spacy")),
        bow_rows_key([*q[:-1], q[-1] + "x"], d, LEMMA_TEXT),
    }
    assert len(keys) == 4


def test_damaged_rows_blob_is_ignored_and_replaced(wn, msrvtt_captions, private_cache: Path) -> None:  # type: ignore[no-untyped-def]
    q, d = _texts(msrvtt_captions)
    ref = bow_rows(q, d, TextPipeline(wordnet=wn))
    with default_parse_cache() as cache:
        bow_rows(q, d, TextPipeline(wordnet=wn, cache=cache))
    key = bow_rows_key(q, d, LEMMA_TEXT)
    (qp, qi), (dp, di) = ref
    bad_rows = [
        encode_columns([], [qp, qi[::-1], dp, di]),  # ids not increasing within a row
        encode_columns([], [qp, qi, dp[:-1], di]),  # one doc row short
        encode_columns([], [qp, -1 - qi, dp, di]),  # negative ids
        encode_columns(["w"], [qp, qi, dp, di]),  # not a rows blob
        b"\0",
    ]
    for bad in bad_rows:
        assert _rows_from_blob(bad, len(q), len(d)) is None
        con = sqlite3.connect(private_cache / DB_NAME)
        assert con.execute("UPDATE columns SET value = ? WHERE digest = ?", (bad, key)).rowcount == 1
        con.commit()
        con.close()
        with default_parse_cache() as cache:  # falls back to the analyses blobs, then rewrites
            assert _same(bow_rows(q, d, TextPipeline(wordnet=wn, cache=cache)), ref)
        with default_parse_cache() as cache:
            blob = cache.get_columns(key)
            assert blob is not None and _same(_rows_from_blob(blob, len(q), len(d)), ref)  # type: ignore[arg-type]
    # empty rows and empty lists round-trip
    empty = ((np.zeros(3, np.int64), np.zeros(0, np.int64)), (np.zeros(1, np.int64), np.zeros(0, np.int64)))
    assert _same(_rows_from_blob(encode_columns([], [*empty[0], *empty[1]]), 2, 0), empty)  # type: ignore[arg-type]
    assert _rows_from_blob(encode_columns([], [*empty[0], *empty[1]]), 2, 1) is None


def test_warm_relevance_is_bit_identical(wn, msrvtt_captions) -> None:  # type: ignore[no-untyped-def]
    from fireval.core.collection import Collection
    from fireval.proxies.relevance import video_relevance

    vids = sorted(msrvtt_captions)[:40]
    caps = [c for v in vids for c in msrvtt_captions[v]]
    coll = Collection(
        name="t", caption_ids=tuple(f"c{i}" for i in range(len(caps))), video_ids=tuple(vids),
        captions=tuple(caps), caption_video=np.repeat(np.arange(len(vids)), 20),
    )  # fmt: skip
    ref = video_relevance(coll, "bow", "max", pipeline=TextPipeline(wordnet=wn)).grades
    for _ in range(3):  # cold, then warm twice (rows blob, read-only hits)
        with default_parse_cache() as cache:
            got = video_relevance(coll, "bow", "max", pipeline=TextPipeline(wordnet=wn, cache=cache)).grades
        assert got.tobytes() == ref.tobytes()


def _fresh(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_single_blas_thread_only_before_numpy_and_without_a_user_setting() -> None:
    show = "import os; from fireval.proxies import single_blas_thread as s; "
    assert _fresh(show + "print(s(), os.environ.get('OPENBLAS_NUM_THREADS'))") == "True 1"
    user = _fresh(show + "print(s(), os.environ['OPENBLAS_NUM_THREADS'])", OPENBLAS_NUM_THREADS="2")
    assert user == "False 2"
    assert (
        _fresh("import numpy; " + show + "print(s(), os.environ.get('OPENBLAS_NUM_THREADS'))") == "False None"
    )
