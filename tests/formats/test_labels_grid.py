"""Reading graded-label .npz files: the full-grid fast path against the general path.

The oracle is the definition of the format, built here from :func:`numpy.load` of the members:
``grades[rows, cols] = vals`` for :meth:`ProxyRelevance.load`, and
:meth:`Judgments.from_arrays` over the ids mapped onto the collection for
:func:`read_graded_labels`.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import fireval.formats.graded_npz as graded_npz_mod
import fireval.formats.labels as labels_mod
from fireval.core import Collection, InputError, Judgments
from fireval.formats.labels import (
    GradedNpz,
    _ParallelDeflate,
    read_graded_labels,
    write_graded_arrays,
    write_graded_dense,
)
from fireval.proxies.relevance import ProxyRelevance


def _grades(n: int, m: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    g = (rng.integers(1, 4, (n, m)) / rng.integers(4, 16, (n, m))).astype(np.float32)
    g[rng.random((n, m)) < 0.6] = 0
    return g


def _ids(n: int, m: int) -> tuple[list[str], list[str]]:
    return [f"c{i}" for i in range(n)], [f"v{j}" for j in range(m)]


def _collection(caps: list[str], vids: list[str]) -> Collection:
    return Collection.from_pairs(
        "grid", [(c, vids[i % len(vids)], "t") for i, c in enumerate(caps)], video_ids=list(vids)
    )


def _members(p: Path) -> dict[str, np.ndarray]:
    with np.load(p, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _oracle_dense(p: Path) -> np.ndarray:
    z = _members(p)
    out = np.zeros(tuple(int(x) for x in z["shape"]), np.float32)
    out[z["rows"], z["cols"]] = z["grades"]
    return out


def _oracle_judgments(p: Path, coll: Collection) -> Judgments:
    z = _members(p)
    cap, vid = list(z["caption_ids"]), list(z["video_ids"])
    r = np.array([coll.caption_index[cap[i]] for i in z["rows"]], np.int64)
    c = np.array([coll.video_index[vid[j]] for j in z["cols"]], np.int64)
    return Judgments.from_arrays(coll.shape, r, c, z["grades"], str(z["source"]))


def _same_judgments(a: Judgments, b: Judgments) -> None:
    assert a.shape == b.shape and a.sources == b.sources
    for k in ("rows", "cols", "grades", "source_codes"):
        x, y = getattr(a, k), getattr(b, k)
        assert x.dtype == y.dtype and np.array_equal(x, y), k
        assert x.flags.writeable and x.flags.c_contiguous, k


def _rezip(src: Path, dst: Path, replace: dict[str, bytes | None]) -> None:
    """Copy a zip, replacing members (``None`` drops one), keeping order and compression."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", allowZip64=True) as zout:
        for info in zin.infolist():
            if info.filename in replace:
                data = replace[info.filename]
                if data is not None:
                    zout.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
            else:
                zout.writestr(info, zin.read(info.filename))


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threaded deflate on small members, cut into many pieces; small streaming pieces."""
    monkeypatch.setattr(labels_mod, "_PARALLEL_MIN_BYTES", 64)
    monkeypatch.setattr(_ParallelDeflate, "PIECE", 1000)
    monkeypatch.setattr(graded_npz_mod, "_STREAM_ITEMS", 777)


@pytest.fixture(params=["zlib", "isal"])
def inflater(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The parallel inflate with zlib, and with isal when it is installed."""
    import zlib

    if request.param == "zlib":
        monkeypatch.setattr(graded_npz_mod, "_zlib_module", lambda: zlib)
    else:
        pytest.importorskip("isal")
    return str(request.param)


@pytest.fixture(params=["fast", "general"])
def path_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test on the fast path and with the grid marker ignored (general path)."""
    if request.param == "general":
        monkeypatch.setattr(GradedNpz, "grid_shape", lambda self, scan=False: None)
    return str(request.param)


@pytest.mark.parametrize("compress", ["fast", "best", "none"])
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("size", [(7, 5), (300, 41), (9, 1), (1, 6)])
def test_full_grid_fast_path_equals_oracle(tmp_path, small_pieces, inflater, compress, threads, size) -> None:  # type: ignore[no-untyped-def]
    n, m = size
    g = _grades(n, m)
    caps, vids = _ids(n, m)
    p = tmp_path / "g.npz"
    meta = {"proxy": "bow", "agg": "max"}
    write_graded_dense(
        p,
        g,
        source="proxy:bow",
        caption_ids=caps,
        video_ids=vids,
        meta=meta,
        compress=compress,
        threads=threads,
    )
    with GradedNpz(p) as z:
        assert z.grid_shape() == (n, m)
        pieces = json.loads(str(z[labels_mod.GRID_MEMBER]))["grades"]["pieces"]
        # float grades at "fast" (level 1) go parallel from a quarter of _PARALLEL_MIN_BYTES
        limit = 64 // 4 if compress == "fast" else 64
        assert (pieces is not None) == (compress != "none" and threads > 1 and g.nbytes >= limit)
        for t in (1, 2):
            assert z.grid(threads=t).tobytes() == g.tobytes()
    rel = ProxyRelevance.load(p)
    assert rel.grades.dtype == np.float32 and rel.grades.tobytes() == _oracle_dense(p).tobytes()
    assert rel.caption_ids == tuple(caps) and rel.video_ids == tuple(vids)
    assert rel.meta == {**meta, "path": str(p)}
    coll = _collection(caps, vids)
    _same_judgments(read_graded_labels(p, coll), _oracle_judgments(p, coll))
    # ids in another order: the grid is permuted, entries sorted in the collection's order
    rng = np.random.default_rng(1)
    other = _collection([caps[i] for i in rng.permutation(n)], [vids[j] for j in rng.permutation(m)])
    _same_judgments(read_graded_labels(p, other), _oracle_judgments(p, other))


def test_fast_path_reads_no_index_array(tmp_path, small_pieces, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    g = _grades(40, 9)
    caps, vids = _ids(40, 9)
    p = tmp_path / "g.npz"
    write_graded_dense(p, g, source="proxy:bow", caption_ids=caps, video_ids=vids, threads=2)

    def boom(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("the general path was taken")

    monkeypatch.setattr(GradedNpz, "triples", boom)
    real_getitem = GradedNpz.__getitem__

    def getitem(self, name):  # type: ignore[no-untyped-def]
        assert name not in ("rows", "cols", "grades"), name
        return real_getitem(self, name)

    monkeypatch.setattr(GradedNpz, "__getitem__", getitem)
    assert ProxyRelevance.load(p).grades.tobytes() == g.tobytes()
    j = read_graded_labels(p, _collection(caps, vids))
    assert np.array_equal(j.matrix().toarray(), g)


@pytest.mark.parametrize("kind", ["sparse", "shuffled", "savez_grid", "unsorted_ids"])
def test_general_path_equals_oracle(tmp_path, small_pieces, kind) -> None:  # type: ignore[no-untyped-def]
    n, m = 120, 23
    g = _grades(n, m, seed=2)
    caps, vids = _ids(n, m)
    p = tmp_path / "g.npz"
    r = np.repeat(np.arange(n, dtype=np.int32), m)
    c = np.tile(np.arange(m, dtype=np.int32), n)
    if kind == "sparse":  # judge_zeros=False: only the non-zero cells
        write_graded_dense(p, g, source="proxy:bow", caption_ids=caps, video_ids=vids, judge_zeros=False)
    elif kind == "shuffled":  # every cell, rows in another order: not the row-major grid
        o = np.random.default_rng(3).permutation(r.size)
        write_graded_arrays(
            p, shape=(n, m), rows=r[o], cols=c[o], grades=g.ravel()[o], source="proxy:bow",
            caption_ids=caps, video_ids=vids, meta={"proxy": "bow"}, threads=2,
        )  # fmt: skip
    elif kind == "savez_grid":  # the layout of older files: a full grid without the marker
        np.savez_compressed(
            p, rows=r, cols=c, grades=g.ravel(), source=np.array("proxy:bow"), shape=np.array([n, m]),
            caption_ids=np.array(caps), video_ids=np.array(vids), meta=np.array(json.dumps({"proxy": "bow"})),
        )  # fmt: skip
    else:  # a full grid written with int64 indices and float64 grades
        write_graded_arrays(
            p, shape=(n, m), rows=r.astype(np.int64), cols=c.astype(np.int64), grades=g.ravel().astype(np.float64),
            source="proxy:bow", caption_ids=caps, video_ids=vids, threads=2,
        )  # fmt: skip
    with GradedNpz(p) as z:
        assert (z.grid_shape() is not None) == (kind == "unsorted_ids")  # marker
        # without a marker, a full grid is found by scanning the index arrays
        assert z.grid_shape(scan=True) == ((n, m) if kind in ("unsorted_ids", "savez_grid") else None)
    assert ProxyRelevance.load(p).grades.tobytes() == _oracle_dense(p).tobytes()
    coll = _collection(caps, vids)
    _same_judgments(read_graded_labels(p, coll), _oracle_judgments(p, coll))


def test_duplicate_pairs_keep_last_grade_and_conflict_in_labels(tmp_path, small_pieces) -> None:  # type: ignore[no-untyped-def]
    caps, vids = _ids(3, 2)
    p = tmp_path / "d.npz"
    write_graded_arrays(
        p, shape=(3, 2), rows=np.array([0, 2, 0], np.int32), cols=np.array([1, 0, 1], np.int32),
        grades=np.array([0.5, 0.25, 0.75], np.float32), source="proxy:bow", caption_ids=caps, video_ids=vids,
    )  # fmt: skip
    assert ProxyRelevance.load(p).grades.tobytes() == _oracle_dense(p).tobytes()
    with pytest.raises(InputError, match="conflicting grades"):
        read_graded_labels(p, _collection(caps, vids))


def _dense_file(tmp_path: Path, n: int = 60, m: int = 11) -> tuple[Path, np.ndarray]:
    g = _grades(n, m, seed=4)
    caps, vids = _ids(n, m)
    p = tmp_path / "g.npz"
    write_graded_dense(
        p, g, source="proxy:bow", caption_ids=caps, video_ids=vids, meta={"proxy": "bow"}, threads=2
    )
    return p, g


def _marker(p: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(str(_members(p)[labels_mod.GRID_MEMBER]))


@pytest.mark.parametrize(
    "damage", ["not json", "version", "shape", "transposed", "rows_crc", "grades_size", "pieces", "no pieces"]
)
def test_damaged_marker_falls_back(tmp_path, small_pieces, inflater, damage) -> None:  # type: ignore[no-untyped-def]
    p, g = _dense_file(tmp_path)
    mk = _marker(p)
    n, m = g.shape
    if damage == "not json":
        text = "{not json"
    else:
        if damage == "version":
            mk["version"] = 99
        elif damage == "shape":
            mk["shape"] = [n - 1, m]
        elif damage == "transposed":  # same n*m: caught by the shape member and the leading entries
            mk["shape"] = [m, n]
        elif damage == "rows_crc":
            mk["rows"]["crc32"] ^= 1
        elif damage == "grades_size":
            mk["grades"]["size"] += 4
        elif damage == "pieces":  # the piece boundaries are wrong: the grid is read in one stream
            mk["grades"]["pieces"][0][1] += 1
            mk["grades"]["pieces"][1][1] -= 1
        else:
            mk["grades"]["pieces"] = None
        text = json.dumps(mk)
    q = tmp_path / "q.npz"
    _rezip(p, q, {"grid.npy": _npy(np.array(text))})
    with GradedNpz(q) as z:
        assert (z.grid_shape() is not None) == (damage in ("pieces", "no pieces"))
        assert z.grid_shape(scan=True) == (n, m)  # the members are still the grid
    assert ProxyRelevance.load(q).grades.tobytes() == g.tobytes()
    coll = _collection(*_ids(n, m))
    _same_judgments(read_graded_labels(q, coll), _oracle_judgments(q, coll))


def test_rewritten_index_member_is_not_trusted(tmp_path, small_pieces) -> None:  # type: ignore[no-untyped-def]
    """A marker copied over index arrays that are no longer the grid: its CRC-32s do not match."""
    p, g = _dense_file(tmp_path)
    n, m = g.shape
    a, b = (int(x) for x in np.flatnonzero(g[-1] != g[-1, 0])[:1].tolist() + [0])
    cols = _members(p)["cols"].copy()
    cols[[(n - 1) * m + a, (n - 1) * m + b]] = [b, a]  # two grades of the last row swapped
    q = tmp_path / "q.npz"
    _rezip(p, q, {"cols.npy": _npy(cols)})
    with GradedNpz(q) as zz:
        assert zz.grid_shape(scan=True) is None
    want = _oracle_dense(q)
    assert want.tobytes() != g.tobytes()
    assert ProxyRelevance.load(q).grades.tobytes() == want.tobytes()
    coll = _collection(*_ids(*g.shape))
    _same_judgments(read_graded_labels(q, coll), _oracle_judgments(q, coll))


def test_corrupt_grades_data_is_an_input_error(tmp_path, small_pieces, inflater) -> None:  # type: ignore[no-untyped-def]
    p, _ = _dense_file(tmp_path)
    with zipfile.ZipFile(p) as zf:
        info = zf.getinfo("grades.npy")
    raw = bytearray(p.read_bytes())
    raw[info.header_offset + 100 + info.compress_size // 2] ^= 0xFF  # inside the deflated grades
    q = tmp_path / "q.npz"
    q.write_bytes(bytes(raw))
    with pytest.raises(InputError, match=r"q\.npz: cannot read proxy relevance \.npz: "):
        ProxyRelevance.load(q)
    with pytest.raises(InputError, match=r"q\.npz: cannot read graded labels: "):
        read_graded_labels(q, _collection(*_ids(60, 11)))


def _with_grades(tmp_path: Path, values: np.ndarray, source: str = "proxy:bow") -> tuple[Path, Collection]:
    n, m = values.shape
    caps, vids = _ids(n, m)
    p = tmp_path / "v.npz"
    write_graded_dense(p, values, source=source, caption_ids=caps, video_ids=vids, threads=2)
    return p, _collection(caps, vids)


@pytest.mark.parametrize("bad", [np.nan, -0.5, 1.5, 101.0])
def test_bad_grades_same_errors_on_both_paths(tmp_path, small_pieces, path_kind, bad) -> None:  # type: ignore[no-untyped-def]
    g = _grades(30, 7, seed=5).astype(np.float64)
    g[17, 3] = bad  # label 17 * 7 + 3 = 122 in file order
    p, coll = _with_grades(tmp_path, g)
    with pytest.raises(InputError) as err:
        ProxyRelevance.load(p)
    assert str(err.value) == f"{p}: proxy grades must lie in [0, 1]"
    if bad == 1.5:  # a proxy grade above 1 is still a valid label grade (<= 100)
        read_graded_labels(p, coll)
        return
    with pytest.raises(InputError) as err:
        read_graded_labels(p, coll)
    want = f"{p}: label 122: grade {bad:g} is not a real number from 0 to 100"
    assert str(err.value) == want


def test_non_integer_human_grades_same_error_on_both_paths(tmp_path, small_pieces, path_kind) -> None:  # type: ignore[no-untyped-def]
    g = np.ones((5, 4))
    g[2, 1] = 0.5
    p, coll = _with_grades(tmp_path, g, source="auto:exact")
    with pytest.raises(InputError) as err:
        read_graded_labels(p, coll)
    assert str(err.value) == (
        f"{p}: label 9: grade 0.5 is not an integer from 0 to 100; "
        "non-integer grades are accepted for proxy labels only"
    )


def test_structural_errors_same_on_both_paths(tmp_path, small_pieces, path_kind) -> None:  # type: ignore[no-untyped-def]
    p, g = _dense_file(tmp_path)
    n, m = g.shape
    coll = _collection(*_ids(n, m))
    q = tmp_path / "q.npz"
    _rezip(p, q, {"grades.npy": None})
    with pytest.raises(InputError) as err:
        ProxyRelevance.load(q)
    assert str(err.value) == f"{q}: not a proxy relevance file: missing grades"
    with pytest.raises(InputError) as err:
        read_graded_labels(q, coll)
    assert str(err.value) == f"{q}: missing array(s) ['grades']; expected rows, cols, grades, source"
    _rezip(p, q, {"shape.npy": _npy(np.array([n + 1, m]))})
    with pytest.raises(InputError) as err:
        ProxyRelevance.load(q)
    assert str(err.value) == f"{q}: shape ({n + 1}, {m}) does not match {n} caption ids x {m} video ids"
    # an id the collection lacks
    small = _collection(*_ids(n - 1, m))
    with pytest.raises(InputError) as err:
        read_graded_labels(p, small)
    assert str(err.value) == f"{p}: label on unknown caption id 'c{n - 1}'"
    # an unknown source kind
    p2, coll2 = _with_grades(tmp_path, np.ones((5, 4)), source="auto:exact")
    _rezip(p2, q, {"source.npy": _npy(np.array("oracle:x"))})
    with pytest.raises(InputError, match="unknown label source 'oracle:x'"):
        read_graded_labels(q, coll2)


def test_general_path_errors(tmp_path, small_pieces) -> None:  # type: ignore[no-untyped-def]
    caps, vids = _ids(4, 3)
    coll = _collection(caps, vids)
    p = tmp_path / "e.npz"

    def write(**kw):  # type: ignore[no-untyped-def]
        base = dict(
            rows=np.array([0, 1]), cols=np.array([1, 2]), grades=np.array([0.5, 1.0]), source=np.array("proxy:bow"),
            shape=np.array([4, 3]), caption_ids=np.array(caps), video_ids=np.array(vids),
        )  # fmt: skip
        np.savez(p, **{**base, **kw})

    write(cols=np.array([1, 3]))
    with pytest.raises(InputError, match=r"e\.npz: label index outside the 4 x 3 grid"):
        ProxyRelevance.load(p)
    write(rows=np.array([0, -1]))
    with pytest.raises(InputError, match="label index outside"):
        ProxyRelevance.load(p)
    write(rows=np.array([0.0, 1.0]))
    with pytest.raises(InputError, match="'rows' and 'cols' must be integer index arrays"):
        ProxyRelevance.load(p)
    with pytest.raises(InputError, match="'rows' and 'cols' must be integer index arrays"):
        read_graded_labels(p, coll)
    write(grades=np.array([0.5, 1.0, 1.0]))
    with pytest.raises(InputError, match="rows, cols and grades differ in length"):
        ProxyRelevance.load(p)
    write(grades=np.array(["a", "b"]))
    with pytest.raises(InputError, match="'grades' must be numbers"):
        ProxyRelevance.load(p)
    np.save(tmp_path / "x.npy", np.zeros(3))
    (tmp_path / "x.npz").write_bytes((tmp_path / "x.npy").read_bytes())
    with pytest.raises(InputError, match=r"x\.npz: cannot read proxy relevance \.npz: not a \.npz"):
        ProxyRelevance.load(tmp_path / "x.npz")
    with pytest.raises(InputError, match=r"x\.npz: cannot read graded labels: not a \.npz"):
        read_graded_labels(tmp_path / "x.npz", coll)


@pytest.mark.parametrize("compress", ["fast", "best", "none"])
@pytest.mark.parametrize("threads", [1, 3])
def test_members_are_the_bytes_numpy_save_writes(
    tmp_path: Path, small_pieces: None, monkeypatch: pytest.MonkeyPatch, compress: str, threads: int
) -> None:
    """Arrays written in place (header, then their memory in pieces) are numpy.save's bytes."""
    monkeypatch.setattr(labels_mod, "_WRITE_BYTES", 1000)  # several writes per member
    rng = np.random.default_rng(3)
    arrays = {
        "f32": rng.random(5000).astype(np.float32),
        "f64_2d": rng.random((70, 33)),
        "big_endian": rng.random(999).astype(">f4"),
        "i64": rng.integers(-9, 9, 1234),
        "u8": rng.integers(0, 255, 3001).astype(np.uint8),
        "bool": rng.random(77) < 0.5,
        "c128": rng.random(50) + 1j * rng.random(50),
        "empty": np.zeros(0, np.float32),
        "fortran": np.asfortranarray(rng.random((20, 30))),  # not C order: numpy's own writer
        "strided": rng.random(400)[::3],
        "strings": np.array(["a", "bc", "ünï"]),
        "scalar": np.array(2.5),
    }
    p = tmp_path / "m.npz"
    labels_mod._write_npz(p, arrays, {}, compress, threads)
    with zipfile.ZipFile(p) as zf:
        assert zf.testzip() is None
        for name, a in arrays.items():
            assert zf.read(f"{name}.npy") == _npy(a), name
    with np.load(p) as z:
        for name, a in arrays.items():
            assert z[name].dtype == a.dtype and np.array_equal(z[name], a), name
