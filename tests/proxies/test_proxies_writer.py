"""The proxy file writer: dense grades streamed as graded labels, deflated on several threads."""

from __future__ import annotations

import json
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

import fireval.formats.labels as labels_mod
from fireval.formats.labels import _ParallelDeflate, write_graded_arrays, write_graded_dense


@pytest.fixture
def grades() -> np.ndarray:
    rng = np.random.default_rng(3)
    g = rng.random((53, 37)).astype(np.float32)
    g[g < 0.6] = 0  # mostly zeros, as a proxy's grades
    return g


def _ids(g: np.ndarray) -> tuple[list[str], list[str]]:
    return [f"c{i}" for i in range(g.shape[0])], [f"v{j}" for j in range(g.shape[1])]


def _arrays(p: Path) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(p) as zf:
        assert zf.testzip() is None  # every member's CRC is right
    with np.load(p, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the threaded deflate onto small arrays, cut into many small pieces."""
    monkeypatch.setattr(labels_mod, "_PARALLEL_MIN_BYTES", 64)
    monkeypatch.setattr(_ParallelDeflate, "PIECE", 1000)


@pytest.mark.parametrize("compress", ["fast", "best", "none"])
@pytest.mark.parametrize("threads", [1, 3])
def test_dense_writer_equals_array_writer(tmp_path, grades, tiny_pieces, compress, threads) -> None:  # type: ignore[no-untyped-def]
    caps, vids = _ids(grades)
    n, m = grades.shape
    meta = {"proxy": "bow", "agg": "max"}
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    write_graded_arrays(
        a, shape=(n, m), rows=np.repeat(np.arange(n, dtype=np.int32), m),
        cols=np.tile(np.arange(m, dtype=np.int32), n), grades=grades.ravel(), source="proxy:bow",
        caption_ids=caps, video_ids=vids, meta=meta, compress=compress, threads=threads,
    )  # fmt: skip
    write_graded_dense(
        b, grades, source="proxy:bow", caption_ids=caps, video_ids=vids, meta=meta, compress=compress,
        threads=threads,
    )  # fmt: skip
    x, y = _arrays(a), _arrays(b)
    assert sorted(x) == sorted(y)
    for k in x:
        assert x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]), k
    assert y["rows"].dtype == np.int32 and y["grades"].dtype == np.float32
    back = np.zeros((n, m), np.float32)
    back[y["rows"], y["cols"]] = y["grades"]
    assert back.tobytes() == grades.tobytes()
    assert json.loads(str(y["meta"])) == meta


def test_dense_writer_nonzero_only(tmp_path, grades, tiny_pieces) -> None:  # type: ignore[no-untyped-def]
    caps, vids = _ids(grades)
    p = tmp_path / "nz.npz"
    write_graded_dense(p, grades, source="proxy:bow", caption_ids=caps, video_ids=vids, judge_zeros=False)
    z = _arrays(p)
    r, c = np.nonzero(grades)
    assert np.array_equal(z["rows"], r) and np.array_equal(z["cols"], c)
    assert z["grades"].tobytes() == grades[r, c].tobytes()


def test_proxy_relevance_save_roundtrip_and_old_files(tmp_path, grades, tiny_pieces) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import ProxyRelevance

    caps, vids = _ids(grades)
    rel = ProxyRelevance(grades, tuple(caps), tuple(vids), {"proxy": "bow"})
    rel.save(tmp_path / "new.npz")
    assert ProxyRelevance.load(tmp_path / "new.npz").grades.tobytes() == grades.tobytes()
    # a file in the layout written before the streamed writer (np.savez_compressed, int32 indices)
    n, m = grades.shape
    np.savez_compressed(
        tmp_path / "old.npz", rows=np.repeat(np.arange(n, dtype=np.int32), m),
        cols=np.tile(np.arange(m, dtype=np.int32), n), grades=grades.ravel(), source=np.array("proxy:bow"),
        shape=np.array([n, m]), caption_ids=np.array(caps), video_ids=np.array(vids),
        meta=np.array(json.dumps({"proxy": "bow"})),
    )  # fmt: skip
    assert ProxyRelevance.load(tmp_path / "old.npz").grades.tobytes() == grades.tobytes()


@pytest.mark.parametrize("level", [1, 6])
def test_parallel_deflate_inflates_to_the_input(level: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ParallelDeflate, "PIECE", 4096)
    rng = np.random.default_rng(0)
    period = np.tile(np.arange(997, dtype=np.int32), 9).tobytes()  # written whole, again and again
    chunks = [b"hdr", rng.bytes(10_000), *[period] * 7, rng.bytes(5), b"", rng.bytes(20_000), period[:100]]
    comp = _ParallelDeflate(level, threads=3)
    submitted = []
    real_submit = comp._pool.submit
    comp._pool.submit = lambda fn, data: submitted.append(len(data)) or real_submit(fn, data)  # type: ignore[method-assign]
    out = b"".join(comp.compress(c) for c in chunks) + comp.flush()
    assert zlib.decompress(out, wbits=-15) == b"".join(chunks)
    # the seven whole-period writes were deflated once: six were served from the previous call
    assert sum(submitted) == len(b"".join(chunks)) - 6 * len(period)


def test_parallel_deflate_empty_stream() -> None:
    comp = _ParallelDeflate(1, threads=2)
    assert zlib.decompress(comp.flush(), wbits=-15) == b""
