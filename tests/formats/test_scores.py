"""Score matrices: .npy memmap, .npz with ids, id files, v2t, 3-D MSVD layout, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from fireval.core import Collection, InputError
from fireval.formats import read_msrvtt_jsfusion, read_scores, write_scores


def test_shared_npy_reads_as_run(shared_data):
    coll = read_msrvtt_jsfusion(shared_data / "msrvtt" / "MSRVTT_JSFUSION_test.csv")
    path = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    run = read_scores(path, coll)
    assert run.shape == (1000, 1000) and run.name == "clip4clip_msrvtt"
    assert isinstance(run.scores, np.memmap) and not run.scores.flags.writeable
    raw = np.load(path)
    # diagonal ground truth: C@1 as documented in SOURCES.md (34.4%)
    diag = np.diag(raw)
    assert round(float(((raw > diag[:, None]).sum(1) == 0).mean()) * 100, 1) == 34.4
    assert np.array_equal(run.block("t2v", 0, 1000), raw)
    # Fortran-ordered GRAM matrix and v2t over the same file (transpose is a view)
    gram = shared_data / "msrvtt" / "sims" / "GRAM_msrvtt.npy"
    v2t = read_scores(gram, coll, direction="v2t")
    assert isinstance(v2t.scores, np.memmap) and not v2t.scores.flags.writeable  # lazy view, no copy
    assert np.array_equal(v2t.scores, np.load(gram).T)


def _coll(nc=6, nv=3) -> Collection:
    pairs = [(f"c{i}", f"v{i % nv}", f"text {i}") for i in range(nc)]
    return Collection.from_pairs("t", pairs, video_ids=[f"v{j}" for j in range(nv)])


def test_npz_with_ids_reorders(tmp_path, rng):
    coll = _coll()
    truth = rng.standard_normal(coll.shape).astype(np.float32)
    qp, dp = rng.permutation(6), rng.permutation(3)
    np.savez(
        tmp_path / "s.npz",
        scores=truth[qp][:, dp],
        query_ids=np.array(coll.caption_ids)[qp],
        doc_ids=np.array(coll.video_ids)[dp],
    )
    run = read_scores(tmp_path / "s.npz", coll)
    assert np.array_equal(run.scores, truth)
    # id files, v2t orientation (rows = videos)
    np.save(tmp_path / "v.npy", truth.T[dp][:, qp])
    (tmp_path / "q.txt").write_text("\n".join(np.array(coll.video_ids)[dp]))
    (tmp_path / "d.txt").write_text("\n".join(np.array(coll.caption_ids)[qp]) + "\n")
    run = read_scores(
        tmp_path / "v.npy", coll, direction="v2t", query_ids=tmp_path / "q.txt", doc_ids=tmp_path / "d.txt"
    )
    assert np.array_equal(run.scores, truth)


def test_ids_in_order_do_not_copy(tmp_path, rng):
    coll = _coll()
    np.save(tmp_path / "s.npy", rng.standard_normal(coll.shape))
    run = read_scores(
        tmp_path / "s.npy", coll, query_ids=list(coll.caption_ids), doc_ids=list(coll.video_ids)
    )
    assert isinstance(run.scores, np.memmap)


def test_3d_msvd_layout(tmp_path, rng):
    # videos with 3, 1, 2 captions, listed in collection order v0 v0 v1 v2 v0 v2
    pairs = [
        ("a", "v0", "x"),
        ("b", "v0", "x"),
        ("c", "v1", "x"),
        ("d", "v2", "x"),
        ("e", "v0", "x"),
        ("f", "v2", "x"),
    ]
    coll = Collection.from_pairs("msvd", pairs, video_ids=["v0", "v1", "v2"])
    truth = rng.standard_normal(coll.shape)
    cube = np.full((3, 3, 3), -np.inf)
    # hand layout: caption j of video v (collection order) -> cube[v, j]
    slots = {"a": (0, 0), "b": (0, 1), "e": (0, 2), "c": (1, 0), "d": (2, 0), "f": (2, 1)}
    for i, cid in enumerate(coll.caption_ids):
        cube[slots[cid]] = truth[i]
    np.save(tmp_path / "cube.npy", cube)
    run = read_scores(tmp_path / "cube.npy", coll)
    assert np.array_equal(run.scores, truth)
    with pytest.raises(InputError, match="ids cannot be combined with a 3-D matrix"):
        read_scores(tmp_path / "cube.npy", coll, doc_ids=["v0", "v1", "v2"])
    # too few caption slots
    np.save(tmp_path / "small.npy", cube[:, :2])
    with pytest.raises(InputError, match=r"shape \(3, 2, 3\).*expects \(3, >= 3, 3\)"):
        read_scores(tmp_path / "small.npy", coll)
    # a real caption row that is padding means the layout does not match
    cube[1, 0] = -np.inf
    np.save(tmp_path / "bad.npy", cube)
    with pytest.raises(InputError, match="caption 'c'.*only -inf"):
        read_scores(tmp_path / "bad.npy", coll)


def test_shape_mismatch_names_file_and_shapes(tmp_path):
    coll = _coll()
    np.save(tmp_path / "s.npy", np.zeros((5, 3)))
    with pytest.raises(InputError, match=r"s.npy: score matrix has shape \(5, 3\).*expects \(6, 3\)"):
        read_scores(tmp_path / "s.npy", coll)
    np.save(tmp_path / "t.npy", np.zeros((3, 6)))
    with pytest.raises(
        InputError,
        match="looks transposed: read it with direction .v2t.; on the command line that is --run-direction v2t",
    ):
        read_scores(tmp_path / "t.npy", coll)


def test_nan_is_error_neg_inf_allowed(tmp_path):
    coll = _coll()
    m = np.zeros(coll.shape)
    m[2, 1] = -np.inf
    np.save(tmp_path / "ok.npy", m)
    assert np.isneginf(read_scores(tmp_path / "ok.npy", coll).scores[2, 1])
    m[4, 2] = np.nan
    np.save(tmp_path / "nan.npy", m)
    with pytest.raises(InputError, match=r"nan.npy: score is NaN at row 4 \('c4'\), column 2 \('v2'\)"):
        read_scores(tmp_path / "nan.npy", coll)
    np.savez(tmp_path / "nan.npz", scores=m)
    with pytest.raises(InputError, match="NaN"):
        read_scores(tmp_path / "nan.npz", coll)


def test_bad_ids(tmp_path):
    coll = _coll()
    np.save(tmp_path / "s.npy", np.zeros(coll.shape))
    (tmp_path / "q.txt").write_text("c0\nc1\nc2\nc3\nc4\ncX\n")
    with pytest.raises(InputError, match=r"unknown caption id 'cX' \(entry 6"):
        read_scores(tmp_path / "s.npy", coll, query_ids=tmp_path / "q.txt")
    (tmp_path / "q.txt").write_text("c0\nc1\nc2\nc3\nc4\nc0\n")
    with pytest.raises(InputError, match="duplicate id 'c0'"):
        read_scores(tmp_path / "s.npy", coll, query_ids=tmp_path / "q.txt")
    np.save(tmp_path / "five.npy", np.zeros((5, 3)))
    (tmp_path / "q.txt").write_text("c0\nc1\nc2\nc3\nc4\n")
    with pytest.raises(
        InputError, match=r"lists 5 caption ids but the collection has 6; e.g. missing \['c5'\]"
    ):
        read_scores(tmp_path / "five.npy", coll, query_ids=tmp_path / "q.txt")
    np.savez(tmp_path / "k.npz", sims=np.zeros(coll.shape))
    with pytest.raises(InputError, match="expected 'scores'"):
        read_scores(tmp_path / "k.npz", coll)
    (tmp_path / "e.npy").write_bytes(b"")
    with pytest.raises(InputError, match="file is empty"):
        read_scores(tmp_path / "e.npy", coll)
    (tmp_path / "g.npy").write_bytes(b"garbage")
    with pytest.raises(InputError, match="cannot read score matrix"):
        read_scores(tmp_path / "g.npy", coll)


@pytest.mark.parametrize(("name", "direction"), [("s.npz", "v2t"), ("s.npy", "t2v"), ("t.npy", "v2t")])
def test_write_scores_round_trip(tmp_path, rng, name, direction):
    coll = _coll()
    truth = rng.standard_normal(coll.shape).astype(np.float32)
    write_scores(tmp_path / name, truth, coll, direction=direction)
    raw = np.load(tmp_path / name)
    stored = raw["scores"] if name.endswith(".npz") else raw
    assert stored.shape == (coll.shape if direction == "t2v" else coll.shape[::-1])
    back = read_scores(tmp_path / name, coll, direction=direction)
    assert np.array_equal(back.scores, truth)


@pytest.mark.parametrize(
    ("name", "expected"), [("scores.npy", "not a NumPy .npy file"), ("scores.npz", "not an .npz archive")]
)
def test_non_numpy_file_is_named_for_what_it_is(tmp_path, tiny, name, expected):
    """A text file named .npy/.npz used to be reported as 'pickled (object) data' (QA)."""
    p = tmp_path / name
    p.write_text("video1 0.5\nvideo2 0.4\n")
    with pytest.raises(InputError) as exc:
        read_scores(p, tiny)
    msg = str(exc.value)
    assert expected in msg and name in msg
    assert "pickle" not in msg


def test_npz_with_repeated_id_is_an_error(tmp_path):
    # a repeated id with the right count used to leave one collection row unmapped (np.empty)
    coll = _coll()
    vids = list(coll.video_ids)
    np.savez(tmp_path / "d.npz", scores=np.zeros(coll.shape), doc_ids=np.array([vids[0], vids[1], vids[0]]))
    with pytest.raises(
        InputError, match=r"duplicate video id '.+' \(entries 1 and 3 of the .npz 'doc_ids'\)"
    ):
        read_scores(tmp_path / "d.npz", coll)
