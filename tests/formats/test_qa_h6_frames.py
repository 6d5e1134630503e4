"""QA regressions (fresh-eyes pass h6): DataFrame labels that are also positions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fireval
from fireval.core import Collection, InputError
from fireval.formats.scores import frame_scores


def _coll_numeric_ids() -> Collection:
    """Caption ids "0".."4" in a non-numeric collection order (as a JSONL collection may have)."""
    order = [3, 1, 4, 0, 2]
    pairs = [(str(k), f"v{i}", f"caption {i}") for i, k in enumerate(order)]
    return Collection.from_pairs("numeric", pairs)


def test_integer_labels_that_are_ids_in_another_order_are_not_read_as_positions() -> None:
    """pd.read_csv(..., index_col=0) turns caption ids "0".."n-1" into int64 labels; they used
    to be taken as collection positions, which silently scored each caption on another's row."""
    coll = _coll_numeric_ids()
    n = coll.n_captions
    # row for caption id k holds a perfect ranking for that caption
    ids_sorted = sorted(int(x) for x in coll.caption_ids)
    rows = [coll.caption_index[str(k)] for k in ids_sorted]
    scores = np.eye(n)[[coll.caption_video[r] for r in rows]]
    frame = pd.DataFrame(scores, index=pd.Index(ids_sorted, dtype="int64"), columns=list(coll.video_ids))
    # by label the frame is perfect (C@1 = 1); by position it would give 1/5
    with pytest.raises(InputError, match="both caption positions and caption ids"):
        frame_scores(frame, coll)
    # as str labels it is read by label, and is perfect
    framed = frame.copy()
    framed.index = framed.index.astype(str)
    assert fireval.evaluate(framed, collection=coll, measures="C@1", direction="t2v").value("C@1") == 1.0


def test_default_range_index_still_means_collection_order() -> None:
    coll = _coll_numeric_ids()
    scores = np.eye(coll.n_videos)[coll.caption_video]
    frame = pd.DataFrame(scores, columns=list(coll.video_ids))  # RangeIndex
    assert np.array_equal(frame_scores(frame, coll), scores)


def test_integer_positions_still_work_when_ids_are_not_integers() -> None:
    pairs = [(f"c{i}", f"v{i}", f"caption {i}") for i in range(4)]
    coll = Collection.from_pairs("x", pairs)
    scores = np.eye(4)
    perm = np.array([2, 0, 3, 1])
    frame = pd.DataFrame(scores[perm], index=pd.Index(perm, dtype="int64"), columns=list(coll.video_ids))
    assert np.array_equal(frame_scores(frame, coll), scores)


def test_integer_labels_equal_to_positions_are_unambiguous() -> None:
    pairs = [(str(i), f"v{i}", f"caption {i}") for i in range(4)]
    coll = Collection.from_pairs("y", pairs)
    scores = np.eye(4)
    perm = np.array([1, 3, 0, 2])
    frame = pd.DataFrame(scores[perm], index=pd.Index(perm, dtype="int64"), columns=list(coll.video_ids))
    assert np.array_equal(frame_scores(frame, coll), scores)


def _small() -> tuple[Collection, np.ndarray]:
    coll = Collection.from_pairs("s", [(f"c{i}", f"vid{i}", f"caption {i}") for i in range(5)])
    rng = np.random.default_rng(1)
    s = rng.normal(size=(5, 5))
    s[np.arange(5), np.arange(5)] += 0.5
    return coll, s


def test_npz_bytes_ids_are_read_as_text(tmp_path) -> None:
    """ids saved as dtype 'S' (h5py, np.array(ids, dtype='S')) used to become "b'c0'" and fail."""
    from fireval.formats import read_scores

    coll, s = _small()
    perm = np.array([3, 0, 4, 1, 2])
    path = tmp_path / "b.npz"
    ids = np.array([coll.caption_ids[i] for i in perm], dtype="S")
    np.savez(path, scores=s[perm], query_ids=ids, doc_ids=np.array(coll.video_ids, dtype="S"))
    run = read_scores(path, coll)
    assert np.array_equal(np.asarray(run.scores), s)


@pytest.mark.parametrize("mmap", [True, False])
def test_npy_of_python_objects_gets_the_save_hint(tmp_path, mmap) -> None:
    from fireval.formats import read_scores

    coll, s = _small()
    path = tmp_path / "o.npy"
    np.save(path, s.astype(object), allow_pickle=True)
    with pytest.raises(InputError, match="never unpickles"):
        read_scores(path, coll, mmap=mmap)


def test_labelled_csv_of_scores_gets_a_hint_that_keeps_the_ids(tmp_path) -> None:
    """The old hint (numpy.loadtxt) fails on a CSV with a header and an id column; the new one,
    run as printed, gives a run that scores as the frame does."""
    import re

    from fireval.formats import read_scores
    from fireval.formats.runs import run_kind

    coll, s = _small()
    perm = np.array([2, 4, 0, 1, 3])
    frame = pd.DataFrame(s[perm], index=[coll.caption_ids[i] for i in perm], columns=list(coll.video_ids))
    csv = tmp_path / "scores.csv"
    frame.to_csv(csv)
    with pytest.raises(InputError) as ei:
        run_kind(csv)
    code = re.search(r"`(df = pandas.*?)`", str(ei.value))
    assert code is not None, str(ei.value)
    out = tmp_path / "run.npz"
    exec(code.group(1).replace("'run.npz'", repr(str(out))), {"pandas": pd, "numpy": np, "path": str(csv)})
    assert np.allclose(np.asarray(read_scores(out, coll).scores), s)
