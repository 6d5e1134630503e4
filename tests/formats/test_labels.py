"""Graded-label .npz and the read_labels dispatcher."""

from __future__ import annotations

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
