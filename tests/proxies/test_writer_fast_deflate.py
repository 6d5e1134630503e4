"""The graded-label writer's fast deflate: ISA-L at level 1 when installed, periodic members
deflated once per period-aligned piece."""

from __future__ import annotations

import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

import fireval.formats.graded_npz as graded_npz_mod
from fireval.formats.labels import _ParallelDeflate, _period_piece, write_graded_dense
from fireval.proxies.relevance import ProxyRelevance


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the pieces :class:`_ParallelDeflate` deflates, in order."""
    sizes: list[int] = []
    real = _ParallelDeflate._deflate

    def spy(self, data):  # type: ignore[no-untyped-def]
        sizes.append(len(data))
        return real(self, data)

    monkeypatch.setattr(_ParallelDeflate, "_deflate", spy)
    return sizes


def _inflate(stream: bytes) -> bytes:
    d = zlib.decompressobj(-15)
    out = d.decompress(stream) + d.flush()
    assert d.eof
    return out


@pytest.mark.parametrize("m", [1, 7, 1000, 70_000])
def test_periodic_pieces_are_deflated_once(m: int, calls: list[int]) -> None:
    period = np.arange(m, dtype=np.int32).tobytes()
    rows = 3 * ((4 << 20) // (4 * m)) + 5  # several pieces and a ragged tail
    data = period * rows
    piece = _period_piece(len(period))
    assert piece % len(period) == 0
    comp = _ParallelDeflate(6, threads=2, piece=piece)
    out = b""
    for a in range(0, len(data), 16 << 20):  # the writer's 16 MB row-aligned calls
        a -= a % len(period)
        out += comp.compress(data[a : a + (16 << 20) - (16 << 20) % len(period)])
    out += comp.flush()
    assert _inflate(out) == data
    # one full piece and at most one tail per call, not one deflate per 4 MB
    assert len(calls) <= 1 + -(-len(data) // (16 << 20)), calls


def test_grid_columns_are_deflated_once_and_read_back(tmp_path: Path, calls: list[int]) -> None:
    rng = np.random.default_rng(1)
    g = (rng.random((1500, 1000)) * (rng.random((1500, 1000)) < 0.5)).astype(np.float32)
    ids = ([f"c{i}" for i in range(1500)], [f"v{j}" for j in range(1000)])
    p = tmp_path / "g.npz"
    write_graded_dense(p, g, source="proxy:bow", caption_ids=ids[0], video_ids=ids[1], threads=1)
    with np.load(p) as z:
        assert np.array_equal(z["cols"], np.tile(np.arange(1000, dtype=np.int32), 1500))
        assert np.array_equal(z["rows"], np.repeat(np.arange(1500, dtype=np.int32), 1000))
        assert np.array_equal(z["grades"], g.reshape(-1))
    with zipfile.ZipFile(p) as zf:
        info = zf.getinfo("cols.npy")
        assert info.compress_size < 200_000
    # 6 MB of column indices, the only periodic member: the .npy header is a piece of its own,
    # then the one full piece every later piece repeats is deflated once, then the ragged tail
    header = info.file_size - 4 * g.size
    piece = _period_piece(4 * 1000)
    assert 0 < header < 4 * 1000 and (4 * g.size) % piece  # (else there would be no tail)
    assert calls == [header, piece, (4 * g.size) % piece]


@pytest.mark.skipif(graded_npz_mod._zlib_module() is zlib, reason="isal not installed")
def test_fast_uses_isal_when_installed_and_zlib_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(2)
    g = (rng.integers(0, 5, (700, 900)) / 4).astype(np.float32)
    ids = ([f"c{i}" for i in range(700)], [f"v{j}" for j in range(900)])
    with_isal = tmp_path / "isal.npz"
    write_graded_dense(with_isal, g, source="proxy:bow", caption_ids=ids[0], video_ids=ids[1])
    monkeypatch.setitem(sys.modules, "isal", None)  # import isal fails: zlib
    without = tmp_path / "zlib.npz"
    write_graded_dense(without, g, source="proxy:bow", caption_ids=ids[0], video_ids=ids[1])
    monkeypatch.delitem(sys.modules, "isal")
    with zipfile.ZipFile(with_isal) as a, zipfile.ZipFile(without) as b:
        # different compressors: different deflate bytes for the level-1 members ...
        assert a.read("grades.npy") == b.read("grades.npy")
        assert a.getinfo("grades.npy").compress_size != b.getinfo("grades.npy").compress_size
    # ... and both read back to the same labels, by the grid fast path
    ra, rb = ProxyRelevance.load(with_isal), ProxyRelevance.load(without)
    assert np.array_equal(ra.grades, g) and np.array_equal(rb.grades, g)
