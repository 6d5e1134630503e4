"""Graded-label .npz and the read_labels dispatcher."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fireval.core import Collection, ConflictError, InputError, Judgments
from fireval.formats import read_graded_labels, read_labels, write_graded_labels, write_trec_qrels


def test_npz_round_trip_and_remap_by_id(tmp_path, tiny):
    j = Judgments.from_arrays(tiny.shape, [0, 3, 5], [2, 0, 1], [0.25, 1.0, 0.0], "proxy:bow")
    p = tmp_path / "bow.npz"
    write_graded_labels(p, j, tiny)
    back = read_labels(p, tiny)
    assert back.sources == ("proxy:bow",)
    assert np.array_equal(back.matrix().toarray(), j.matrix().toarray())
    assert np.array_equal(back.matrix(judged=True).toarray(), j.matrix(judged=True).toarray())
    # a collection with the same ids in another order: labels follow the ids
    perm = [5, 4, 3, 2, 1, 0]
    other = Collection.from_pairs(
        "o",
        [(tiny.caption_ids[i], tiny.video_ids[tiny.caption_video[i]], tiny.captions[i]) for i in perm],
        video_ids=["v2", "v1", "v0"],
    )
    moved = read_graded_labels(p, other)
    got = {
        (other.caption_ids[r], other.video_ids[c]): g
        for r, c, g in zip(moved.rows, moved.cols, moved.grades, strict=True)
    }
    assert got == {("c0", "v2"): 0.25, ("c3", "v0"): 1.0, ("c5", "v1"): 0.0}
    # unknown ids in labels
    small = Collection.from_pairs("s", [("c0", "v2", "x"), ("c1", "v2", "y")])
    with pytest.raises(InputError, match="label on unknown caption id 'c3'"):
        read_graded_labels(p, small)


def test_npz_without_ids_needs_shape(tmp_path, tiny):
    p = tmp_path / "g.npz"
    np.savez(
        p,
        rows=np.array([0]),
        cols=np.array([1]),
        grades=np.array([1.0]),
        source=np.array("auto:exact"),
        shape=np.array([9, 9]),
    )
    with pytest.raises(InputError, match=r"labels are for a \(9, 9\) collection"):
        read_labels(p, tiny)
    np.savez(
        p,
        rows=np.array([0, 0]),
        cols=np.array([1, 1]),
        grades=np.array([1.0, 0.0]),
        source=np.array("auto:exact"),
        shape=np.array(tiny.shape),
    )
    with pytest.raises(ConflictError, match="g.npz"):
        read_labels(p, tiny)
    np.savez(p, rows=np.array([0]), grades=np.array([1.0]))
    with pytest.raises(InputError, match="missing array"):
        read_labels(p, tiny)


def test_dispatch_qrels_by_extension_and_content(tmp_path, tiny):
    j = tiny.instance_judgments()
    for name in ("a.qrels", "a.txt", "a.unknown"):
        write_trec_qrels(tmp_path / name, j, tiny, "v2t")
        back = read_labels(tmp_path / name, tiny, "v2t")
        assert back.sources == ("human",) and np.array_equal(back.matrix().toarray(), j.matrix().toarray())
    (tmp_path / "e.qrels").write_text("")
    with pytest.raises(InputError, match="file is empty"):
        read_labels(tmp_path / "e.qrels", tiny)
    (tmp_path / "u.qrels").write_text("c0 0 v7 1\n")
    with pytest.raises(InputError, match=r"u.qrels:1: unknown video \(doc\) id 'v7'"):
        read_labels(tmp_path / "u.qrels", tiny)


def test_empty_npz_labels(tmp_path, tiny):
    (tmp_path / "e.npz").write_bytes(b"")
    with pytest.raises(InputError, match="e.npz: file is empty"):
        read_labels(tmp_path / "e.npz", tiny)


@pytest.mark.parametrize("compress", ["fast", "best", "none"])
def test_graded_arrays_npz_is_read_by_np_load(tmp_path, tiny, compress):
    """write_graded_arrays streams each array into a zip member: np.load and read_labels read it back."""
    import zipfile

    from fireval.formats.labels import write_graded_arrays

    rng = np.random.default_rng(0)
    n_c, n_v = tiny.shape
    rows = np.repeat(np.arange(n_c, dtype=np.int32), n_v)
    cols = np.tile(np.arange(n_v, dtype=np.int32), n_c)
    grades = np.where(rng.random(rows.size) < 0.5, 0, rng.random(rows.size)).astype(np.float32)
    p = tmp_path / "g.npz"
    meta = {"proxy": "bow", "k": 3}
    write_graded_arrays(
        p, shape=tiny.shape, rows=rows, cols=cols, grades=grades, source="proxy:bow",
        caption_ids=tiny.caption_ids, video_ids=tiny.video_ids, meta=meta, compress=compress,
    )  # fmt: skip
    with np.load(p) as z:
        # rows/cols are the full grid: the writer adds the grid marker (readers may ignore it)
        assert sorted(z.files) == sorted(
            ["rows", "cols", "grades", "source", "shape", "caption_ids", "video_ids", "meta", "grid"]
        )
        assert np.array_equal(z["rows"], rows) and z["rows"].dtype == np.int32
        assert np.array_equal(z["cols"], cols)
        assert np.array_equal(z["grades"], grades) and z["grades"].dtype == np.float32
        assert str(z["source"]) == "proxy:bow"
        assert list(z["shape"]) == list(tiny.shape)
        assert list(z["caption_ids"]) == list(tiny.caption_ids)
        assert list(z["video_ids"]) == list(tiny.video_ids)
        assert json.loads(str(z["meta"])) == meta
    with zipfile.ZipFile(p) as zf:
        kinds = {i.compress_type for i in zf.infolist()}
        assert zf.testzip() is None  # CRCs are right
    assert kinds == ({zipfile.ZIP_STORED} if compress == "none" else {zipfile.ZIP_DEFLATED})
    back = read_labels(p, tiny)
    want = np.zeros(tiny.shape)
    want[rows, cols] = grades
    assert np.allclose(back.matrix().toarray(), want)
    assert back.matrix(judged=True).nnz == rows.size


def test_graded_arrays_bad_compress_writes_nothing(tmp_path, tiny):
    from fireval.formats.labels import write_graded_arrays

    p = tmp_path / "g.npz"
    with pytest.raises(ValueError, match="compress"):
        write_graded_arrays(
            p, shape=tiny.shape, rows=np.zeros(0, np.int32), cols=np.zeros(0, np.int32),
            grades=np.zeros(0, np.float32), source="proxy:bow", caption_ids=tiny.caption_ids,
            video_ids=tiny.video_ids, compress="max",
        )  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_graded_arrays_failure_leaves_old_file(tmp_path, tiny):
    """A write that fails half way (an object array cannot be written without pickle) keeps the old file."""
    from fireval.formats.labels import write_graded_arrays

    p = tmp_path / "g.npz"
    p.write_bytes(b"old")
    with pytest.raises(ValueError):
        write_graded_arrays(
            p, shape=tiny.shape, rows=np.zeros(1, np.int32), cols=np.zeros(1, np.int32),
            grades=np.array([object()], dtype=object), source="proxy:bow",
            caption_ids=tiny.caption_ids, video_ids=tiny.video_ids,
        )  # fmt: skip
    assert p.read_bytes() == b"old"
    assert [q.name for q in tmp_path.iterdir()] == ["g.npz"]
