"""TREC qrels/run: round trips, interop with ranx and ir_measures, bad input."""

from __future__ import annotations

import ir_measures
import numpy as np
import pytest
import ranx

from fireval.core import Collection, ConflictError, InputError, Judgments, Run
from fireval.formats import read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run


def _coll(nc=40, nv=15) -> Collection:
    pairs = [(f"q{i}", f"d{i % nv}", f"t {i}") for i in range(nc)]
    return Collection.from_pairs("x", pairs, video_ids=[f"d{j}" for j in range(nv)])


def _random_judgments(coll, rng) -> Judgments:
    n = 120
    key = rng.choice(coll.n_captions * coll.n_videos, n, replace=False)
    grades = rng.integers(0, 4, n).astype(float)
    return Judgments.from_arrays(coll.shape, key // coll.n_videos, key % coll.n_videos, grades, "human")


@pytest.mark.parametrize("direction", ["t2v", "v2t"])
def test_qrels_round_trip_and_ir_measures(tmp_path, rng, direction):
    coll = _coll()
    j = _random_judgments(coll, rng)
    path = tmp_path / "x.qrels"
    write_trec_qrels(path, j, coll, direction)
    back = read_trec_qrels(path, coll, direction)
    a = j.matrix("t2v").toarray()
    assert np.array_equal(back.matrix("t2v").toarray(), a)
    assert np.array_equal(back.matrix("t2v", judged=True).toarray(), j.matrix("t2v", judged=True).toarray())
    # independent reader: ir_measures yields every line as (qid, docid, rel)
    q: dict[str, dict[str, int]] = {}
    for r in ir_measures.read_trec_qrels(str(path)):
        q.setdefault(r.query_id, {})[r.doc_id] = r.relevance
    qids, dids = coll.query_ids(direction), coll.doc_ids(direction)
    expected: dict[str, dict[str, int]] = {}
    m = a if direction == "t2v" else a.T
    jm = j.matrix(direction, judged=True).toarray()
    for qi, di in zip(*np.nonzero(jm), strict=True):
        expected.setdefault(qids[qi], {})[dids[di]] = int(m[qi, di])
    assert q == expected


def test_run_round_trip_ranx_and_ir_measures(tmp_path, rng):
    coll = _coll()
    scores = rng.standard_normal(coll.shape).astype(np.float32)
    scores[:, 3] = scores[:, 4]  # ties
    scores[0, :] = 0.5  # one query all tied
    scores[1, 7] = -np.inf
    run = Run("sys", scores=scores)
    path = tmp_path / "x.run"
    write_trec_run(path, run, coll, "t2v", depth=10)
    lines = path.read_text().splitlines()
    assert len(lines) == coll.n_captions * 10
    first = [ln.split() for ln in lines if ln.startswith("q0 ")]
    # all-tied query: ties broken by collection doc order, ranks 1..10
    assert [f[2] for f in first] == [f"d{i}" for i in range(10)] and [f[3] for f in first] == [
        str(i) for i in range(1, 11)
    ]
    back = read_trec_run(path, coll)
    assert back.name == "sys" and back.lists is not None
    again = tmp_path / "again.run"
    write_trec_run(again, back, coll, "t2v", depth=10)  # ranked lists write back byte for byte
    assert again.read_text() == path.read_text()
    # scores survive exactly; the top 10 of each query by brute force
    for qi in (1, 5, 39):
        order = sorted(range(coll.n_videos), key=lambda d: (-float(scores[qi, d]), d))[:10]
        lo, hi = back.lists.indptr[qi], back.lists.indptr[qi + 1]
        assert list(back.lists.docs[lo:hi]) == order
        assert np.array_equal(back.lists.scores[lo:hi], scores[qi, order].astype(np.float64))
    # ir_measures reads the same pairs and scores
    got = {(r.query_id, r.doc_id): r.score for r in ir_measures.read_trec_run(str(path))}
    dense = back.lists.dense(0, coll.n_captions)
    want = {
        (coll.caption_ids[q], coll.video_ids[d]): float(dense[q, d])
        for q, d in zip(*np.nonzero(dense > -np.inf), strict=True)
    }
    assert got == want
    # ranx reads the same
    r = ranx.Run.from_file(str(path), kind="trec").to_dict()
    assert sum(len(v) for v in r.values()) == len(want) and r["q5"] == {
        d: s for (q, d), s in want.items() if q == "q5"
    }


def test_run_v2t_and_metric_parity(tmp_path, rng):
    coll = _coll()
    scores = rng.standard_normal(coll.shape)
    path = tmp_path / "v.run"
    write_trec_run(path, Run("s", scores=scores), coll, "v2t", depth=5)
    back = read_trec_run(path, coll, "v2t")
    assert back.lists.shape == (15, 40) and back.lists.depth() == 5
    qrels = tmp_path / "v.qrels"
    write_trec_qrels(qrels, coll.instance_judgments(), coll, "v2t")
    # P@5 from ir_measures on our files vs by hand
    res = ir_measures.calc_aggregate(
        [ir_measures.P @ 5], ir_measures.read_trec_qrels(str(qrels)), ir_measures.read_trec_run(str(path))
    )
    inst = coll.instance_judgments().matrix("v2t").toarray()
    top5 = np.argsort(-scores.T, axis=1, kind="stable")[:, :5]
    assert res[ir_measures.P @ 5] == pytest.approx(np.take_along_axis(inst, top5, 1).sum(1).mean() / 5)


def test_qrels_negative_and_float_grades(tmp_path):
    """Negative integers are pooled but not judged (trec_eval's RELVALUE_UNJUDGED); a non-integer
    grade is refused unless proxy labels."""
    coll = _coll()
    p = tmp_path / "x.qrels"
    p.write_text("q0 0 d0 2\nq1 0 d1 -1\nq2 Q0 d2 0.5\n")
    with pytest.raises(InputError, match=r"x.qrels:3: grade 0.5 is not an integer .*proxy labels only"):
        read_trec_qrels(p, coll)
    j = read_trec_qrels(p, coll, source="proxy:bow")
    m = j.matrix().toarray()
    assert m[0, 0] == 2 and m[2, 2] == 0.5 and len(j) == 2
    assert j.pooled.tolist() == [[1, 1]]  # unjudged, marked pooled


@pytest.mark.parametrize("grade", ["101", "1024", "1e308", "-0.5"])
def test_qrels_grade_out_of_range(tmp_path, grade):
    p = tmp_path / "x.qrels"
    p.write_text(f"q0 0 d0 1\nq1 0 d1 {grade}\n")
    with pytest.raises(InputError, match=r"x.qrels:2: grade .* is not an integer <= 100"):
        read_trec_qrels(p, _coll())


def test_bad_trec_input(tmp_path):
    coll = _coll()
    p = tmp_path / "x.qrels"
    p.write_text("q0 0 d0 1\n\nq1 0 dX 1\n")
    with pytest.raises(InputError, match=r"x.qrels:3: unknown video \(doc\) id 'dX'"):
        read_trec_qrels(p, coll)
    p.write_text("q0 0 d0 1\nq1 0 d1 1\nq0 0 d0 1\n")
    with pytest.raises(InputError, match=r"x.qrels:3: duplicate judgment .* lines 1 and 3"):
        read_trec_qrels(p, coll)
    p.write_text("q0 0 d0 1\nq1 0 d1 1\nq0 0 d0 0\n")
    with pytest.raises(ConflictError, match=r"conflicting grades 1 and 0 .* lines 1 and 3"):
        read_trec_qrels(p, coll)
    p.write_text("q0 0 d0 1\nq1 0 d1\n")
    with pytest.raises(InputError, match=r"x.qrels:2: expected 4 fields .* found 3"):
        read_trec_qrels(p, coll)
    p.write_text("q0 0 d0 1\nq1 0 d1 1 extra\n")
    with pytest.raises(InputError, match=r"x.qrels:2: expected 4 fields .* found 5"):
        read_trec_qrels(p, coll)
    p.write_text("q0 0 d0 yes\n")
    with pytest.raises(InputError, match=r"x.qrels:1: qrels value 'yes' is not a number"):
        read_trec_qrels(p, coll)
    p.write_text("\n\n")
    with pytest.raises(InputError, match="file is empty"):
        read_trec_qrels(p, coll)
    r = tmp_path / "x.run"
    r.write_text("q0 Q0 d0 1 0.5 t\nq0 Q0 d0 2 0.4 t\n")
    with pytest.raises(InputError, match=r"x.run:2: document 'd0' listed twice"):
        read_trec_run(r, coll)
    r.write_text("q0 Q0 d0 1 nan t\n")
    with pytest.raises(InputError, match=r"x.run:1: score nan is not allowed"):
        read_trec_run(r, coll)
    r.write_text("qX Q0 d0 1 0.5 t\n")
    with pytest.raises(InputError, match=r"x.run:1: unknown caption \(query\) id 'qX'"):
        read_trec_run(r, coll)


def test_writer_is_atomic_and_rejects_bad_ids(tmp_path):
    pairs = [("has space", "v0", "t")]
    coll = Collection.from_pairs("x", pairs)
    p = tmp_path / "x.qrels"
    p.write_text("old\n")
    with pytest.raises(InputError, match="whitespace"):
        write_trec_qrels(p, coll.instance_judgments(), coll)
    assert p.read_text() == "old\n" and [f.name for f in tmp_path.iterdir()] == ["x.qrels"]
