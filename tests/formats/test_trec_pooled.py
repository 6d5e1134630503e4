"""TREC qrels with ``rel < 0`` lines (trec_eval: in the pool, not judged) read into
``Judgments.pooled``, evaluated from the files against pytrec_eval reading the same files."""

from __future__ import annotations

import numpy as np
import pytest

import fireval
from fireval.core import Collection, InputError
from fireval.formats import read_trec_qrels, read_trec_run, write_trec_qrels
from fireval.metrics import query_values

pytrec_eval = pytest.importorskip("pytrec_eval")


def _coll(nc: int = 12, nv: int = 9) -> Collection:
    pairs = [(f"q{i}", f"d{i % nv}", f"t {i}") for i in range(nc)]
    return Collection.from_pairs("x", pairs, video_ids=[f"d{j}" for j in range(nv)])


def _files(tmp_path, coll, rng):
    """A qrels file with rel in {-2, -1, 0, 1, 3} (every query has a line with rel >= 0) and a
    run file of tied integer scores; returns the paths and the qrels as a dict."""
    qrel: dict[str, dict[str, int]] = {}
    lines, run = [], []
    for q in coll.caption_ids:
        docs = rng.permutation(coll.video_ids)[: rng.integers(2, 8)]
        rels = rng.choice([-2, -1, -1, 0, 1, 3], size=docs.size)
        rels[0] = max(rels[0], 0)
        qrel[q] = {str(d): int(r) for d, r in zip(docs, rels, strict=True)}
        lines += [f"{q} 0 {d} {r}\n" for d, r in qrel[q].items()]
        run += [
            f"{q} Q0 {d} 0 {float(rng.integers(0, 4))} tag\n" for d in coll.video_ids if rng.random() < 0.8
        ]
    qp, rp = tmp_path / "x.qrels", tmp_path / "x.run"
    qp.write_text("".join(lines))
    rp.write_text("".join(run))
    return qp, rp, qrel


def test_reader_marks_negative_lines_pooled(tmp_path) -> None:
    coll = _coll()
    p = tmp_path / "x.qrels"
    p.write_text("q0 0 d0 2\nq0 0 d1 -1\nq1 0 d1 0\nq2 0 d3 -7\nq2 0 d4 1\n")
    j = read_trec_qrels(p, coll)
    assert len(j) == 3 and j.matrix().toarray()[1, 1] == 0  # q1/d1 judged irrelevant
    assert j.pooled.tolist() == [[0, 1], [2, 3]]  # (caption, video): unjudged, in the pool
    p.write_text("d0 0 q0 2\nd1 0 q0 -1\nd3 0 q2 -1\n")
    t = read_trec_qrels(p, coll, "v2t")  # video-query file: pairs stored caption x video
    assert t.pooled.tolist() == [[0, 1], [2, 3]] and len(t) == 1
    p.write_text("q0 0 d0 -1\nq0 0 d0 1\n")
    with pytest.raises(InputError, match=r"x.qrels:2: conflicting grades -1 and 1"):
        read_trec_qrels(p, coll)


def test_writer_keeps_the_pooled_marks(tmp_path) -> None:
    """Written qrels hold the judged pairs and the pooled marks as ``-1`` lines (trec_eval's
    convention), in query then doc order; they read back to the same labels and marks."""
    coll = _coll()
    p = tmp_path / "x.qrels"
    p.write_text("q2 0 d4 1\nq0 0 d1 -1\nq0 0 d0 2\nq2 0 d3 -7\n")
    j = read_trec_qrels(p, coll)
    for d in ("t2v", "v2t"):
        out = tmp_path / f"y_{d}.qrels"
        write_trec_qrels(out, j, coll, d)
        back = read_trec_qrels(out, coll, d)
        assert back.pooled.tolist() == j.pooled.tolist() == [[0, 1], [2, 3]]
        assert (back.matrix().toarray() == j.matrix().toarray()).all() and len(back) == len(j) == 2
    assert (tmp_path / "y_t2v.qrels").read_text() == "q0 0 d0 2\nq0 0 d1 -1\nq2 0 d3 -1\nq2 0 d4 1\n"


@pytest.mark.parametrize("seed", range(3))
def test_files_evaluate_like_pytrec_eval(tmp_path, seed: int) -> None:
    """The same two files through fireval's readers and through pytrec_eval's: every shared
    measure per query (docid ties), with and without -J."""
    rng = np.random.default_rng(seed)
    coll = _coll()
    qp, rp, _ = _files(tmp_path, coll, rng)
    judg, run = read_trec_qrels(qp, coll), read_trec_run(rp, coll)
    pairs = {
        "infAP": "infAP",
        "bpref": "bpref",
        "map": "AP",
        "P_5": "P@5",
        "ndcg": "nDCG",
        "recip_rank": "RR",
    }
    pairs |= {"Rprec": "R-Prec", "recall_5": "Recall@5", "ndcg_cut_3": "nDCG@3"}
    with open(qp) as fq, open(rp) as fr:
        qrel, trec_run = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)
    compared = 0
    for condensed in (False, True):
        got = query_values(
            run,
            judg,
            "t2v",
            list(pairs.values()),
            ties="docid",
            unjudged="condensed" if condensed else "lower",
            collection=coll,
        )
        res = pytrec_eval.RelevanceEvaluator(qrel, set(pairs), judged_docs_only_flag=condensed).evaluate(
            trec_run
        )
        for i, q in enumerate(coll.caption_ids):
            if not any(r > 0 for r in qrel[q].values()):
                assert np.isnan(got["infAP"][i])
                continue
            for tm, fm in pairs.items():
                want = res.get(q, {}).get(tm, 0.0)
                assert got[fm][i] == pytest.approx(want, abs=1e-12), (tm, q)
                compared += 1
    assert compared > 60


def test_instance_labels_override_the_marks(tmp_path) -> None:
    """``fireval.evaluate`` merges the qrels with the instance labels: a caption's own video is
    relevant even where the file says -1 or 0 (FIRE's precedence), and the other -1 lines stay
    pooled for infAP. Oracle: pytrec_eval on the qrels with those pairs made relevant."""
    rng = np.random.default_rng(4)
    coll = _coll()
    qp, rp, qrel = _files(tmp_path, coll, rng)
    for i, q in enumerate(coll.caption_ids):
        own = coll.video_ids[int(coll.caption_video[i])]
        qrel[q][own] = max(qrel[q].get(own, 1), 1)
    run = read_trec_run(rp, coll)
    ev = fireval.evaluate(run, coll, str(qp), measures="infAP,bpref", direction="t2v", ties="docid")
    with open(rp) as fr:
        trec_run = pytrec_eval.parse_run(fr)
    res = pytrec_eval.RelevanceEvaluator(qrel, {"infAP", "bpref"}).evaluate(trec_run)
    for m in ("infAP", "bpref"):
        want = np.mean([res.get(q, {}).get(m, 0.0) for q in coll.caption_ids])
        assert ev.value(m, "t2v") == pytest.approx(want, abs=1e-12), m


def test_cli_evaluates_pooled_qrels_like_trec_eval(tmp_path, monkeypatch, capsys) -> None:
    """``fireval evaluate -l x.qrels`` with rel -1 lines: the augmented infAP and AP are
    pytrec_eval's on the qrels merged with the instance labels; a pair both pooled and judged in
    one file is refused in one line, exit 2."""
    import json

    from tests.cli_helpers import exit_code, refused, write_csv_collection

    monkeypatch.chdir(tmp_path)
    write_csv_collection(tmp_path / "coll.csv", [("v0", "a b"), ("v1", "c d"), ("v2", "e f"), ("v0", "g h")])
    qrels = {  # merged: the instance positives (caption i -> its video) override -1 and 0
        "c0": {"v0": 1, "v1": -1, "v2": 0},
        "c1": {"v1": 1, "v0": -1, "v2": 1},
        "c2": {"v2": 1, "v0": -1},
        "c3": {"v0": 1, "v1": -1},
    }
    (tmp_path / "x.qrels").write_text(
        "c0 0 v1 -1\nc0 0 v2 0\nc1 0 v0 -1\nc1 0 v2 1\nc2 0 v0 -1\nc2 0 v2 -1\nc3 0 v1 -1\n"
    )
    run = {"c0": {"v1": 3, "v0": 2, "v2": 1}, "c1": {"v0": 3, "v1": 2}, "c2": {"v0": 2, "v2": 1}}
    run["c3"] = {"v1": 5.0, "v0": 4.0}
    (tmp_path / "r.run").write_text(
        "".join(f"{q} Q0 {d} 0 {s} t\n" for q, docs in run.items() for d, s in docs.items())
    )
    args = ["evaluate", "r.run", "-c", "coll.csv", "-l", "x.qrels", "-m", "infAP,AP", "-d", "t2v"]
    assert exit_code([*args, "--ties", "docid", "--json", "out.json", "--no-checks"]) == 0
    got = {
        r["measure"]: r["value"]
        for r in json.loads((tmp_path / "out.json").read_text())["results"]
        if r["labels"] == "augmented"
    }
    trec_run = {q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()}
    res = pytrec_eval.RelevanceEvaluator(qrels, {"infAP", "map"}).evaluate(trec_run)
    assert got["infAP"] == pytest.approx(np.mean([res[q]["infAP"] for q in qrels]), abs=1e-12)
    assert got["AP"] == pytest.approx(np.mean([res[q]["map"] for q in qrels]), abs=1e-12)
    assert got["infAP"] > got["AP"] + 0.1  # the pooled docs above c0's and c3's relevant doc
    (tmp_path / "x.qrels").write_text("c0 0 v1 -1\nc0 0 v1 1\n")
    _, err = refused(args, capsys)
    assert "x.qrels:2: conflicting grades -1 and 1 for query 'c0', doc 'v1'" in err
