"""Random-row designs and the zero-relevant rule, against oracles written from Wray et al.'s
definitions (BoW = IoU of surface-word sets minus spaCy's stop words; robust word sets = words in
>= 25% of a video's captions; nDCG@R by enumerating every ranking), not from fireval's kernels."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fireval.core.collection import Collection
from fireval.core.errors import FirevalError

VIDEOS = {
    "v0": ["a man plays guitar", "man playing the guitar on stage", "a person plays music", "guitar solo"],
    "v1": ["a woman cooks pasta", "woman cooking in kitchen", "a chef cooks food"],
    "v2": ["a dog runs in the park", "dog running", "a man walks a dog", "a dog in the park"],
    "v3": ["someone is talking", "a news anchor talks about the weather"],
}
QUERIES = {
    "v0": "a man plays the guitar",
    "v1": "someone cooks pasta",
    "v2": "a dog in the park",
    "v3": "zebra",
}


def _coll(pairs: list[tuple[str, str]], name: str) -> Collection:
    vids = list(VIDEOS)
    return Collection(
        name=name,
        video_ids=tuple(vids),
        caption_ids=tuple(f"{name}{i}" for i in range(len(pairs))),
        captions=tuple(t for _, t in pairs),
        caption_video=np.array([vids.index(v) for v, _ in pairs]),
    )


@pytest.fixture(scope="module")
def colls() -> tuple[Collection, Collection]:
    vc = _coll([(v, t) for v, ts in VIDEOS.items() for t in ts], "vc")
    q = _coll(list(QUERIES.items()), "q")
    return q, vc


def _words(text: str) -> set[str]:
    from fireval.proxies.text import spacy_stop_words  # data: spaCy's list as shipped

    return set(text.split(" ")) - set(spacy_stop_words())


def _iou(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _oracle_grades(queries: list[tuple[str, str]], design: str) -> np.ndarray:
    vids = list(VIDEOS)
    g = np.zeros((len(queries), len(vids)))
    for i, (_, q) in enumerate(queries):
        for j, v in enumerate(vids):
            caps = VIDEOS[v]
            s = [_iou(_words(q), _words(c)) for c in caps]
            if design == "max":
                g[i, j] = max(s)
            elif design == "mean":
                g[i, j] = sum(s) / len(s)
            elif design == "match":
                g[i, j] = (max(s) + sum(s) / len(s)) / 2
            elif design == "single":
                g[i, j] = s[0]
            elif design == "words25":
                sets = [_words(c) for c in caps]
                robust = {w for w in set().union(*sets) if sum(w in x for x in sets) >= 0.25 * len(caps)}
                g[i, j] = _iou(_words(q), robust)
    return g


def _ndcg_at_r(rel_in_rank_order: np.ndarray, rel: np.ndarray) -> float:
    """Wray's nDCG@R for one ranking (R = items with rel > 0; R = 0 is the caller's case)."""
    r = int((rel > 0).sum())
    disc = [1 / math.log2(k + 2) for k in range(r)]
    dcg = sum(rel_in_rank_order[k] * disc[k] for k in range(r))
    idcg = sum(sorted(rel, reverse=True)[k] * disc[k] for k in range(r))
    return dcg / idcg


def _oracle_random(grades: np.ndarray, zero: str) -> float:
    """Eq. 3 of E[nDCG@R] over every ordering of the items (uniformly random ranking)."""
    means = []
    for m in (grades, grades.T):
        vals = []
        for row in m:
            if not (row > 0).any():
                vals.append({"zero": 0.0, "nan": float("nan"), "drop": None}[zero])
                continue
            perms = list(itertools.permutations(range(row.size)))
            vals.append(sum(_ndcg_at_r(row[list(p)], row) for p in perms) / len(perms))
        kept = [v for v in vals if v is not None]
        means.append(sum(kept) / len(kept))
    return (means[0] + means[1]) / 2


QUERY_SETS = {
    "given": list(QUERIES.items()),
    "first": [(v, ts[0]) for v, ts in VIDEOS.items()],
    "nth:2": [(v, ts[1]) for v, ts in VIDEOS.items()],
    "all": [(v, t) for v, ts in VIDEOS.items() for t in ts],
}


@pytest.mark.parametrize("design", ["words25", "max", "mean", "match", "single"])
@pytest.mark.parametrize("qc", list(QUERY_SETS))
def test_design_relevance_matches_definition(colls, pipeline, design: str, qc: str) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.designs import design_relevance

    q, vc = colls
    rel = design_relevance(q, "bow", design, vc, query_captions=qc, pipeline=pipeline)
    want = _oracle_grades(QUERY_SETS[qc], design)
    np.testing.assert_allclose(rel.grades, want, atol=1e-6)
    assert rel.meta["design"] == design and rel.meta["query_captions"] == qc


@pytest.mark.parametrize("zero", ["zero", "drop", "nan"])
def test_random_designs_match_enumeration(colls, pipeline, zero: str) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.designs import random_designs

    q, vc = colls
    table = random_designs(
        q,
        vc,
        proxies=["bow"],
        designs=["words25", "max", "single"],
        query_captions=["given", "first"],
        zero_relevant=zero,
        pipeline=pipeline,
    )
    assert len(table) == 6
    for r in table.itertuples():
        g = _oracle_grades(QUERY_SETS[r.query_captions], r.design)
        assert r.share_positive == pytest.approx((g > 0).mean())
        if zero == "zero":  # a random ranking's nDCG@R is at most the share of relevant items
            assert r.t2v <= r.share_positive + 1e-12 and r.v2t <= r.share_positive + 1e-12
        want = _oracle_random(g, zero)
        if math.isnan(want):
            assert math.isnan(r.mean)
        else:
            assert r.mean == pytest.approx(want, abs=1e-9)
    # "zebra" has no relevant video under every design: nan poisons the given-query means
    given = table[table["query_captions"] == "given"]
    assert (given["zero_t2v"] >= 1).all()
    assert given["mean"].isna().all() == (zero == "nan")


def test_design_errors(colls) -> None:  # type: ignore[no-untyped-def]
    from fireval.core.errors import InputError
    from fireval.proxies.designs import design_relevance

    q, vc = colls
    with pytest.raises(FirevalError, match="robust word set"):
        design_relevance(q, "meteor", "words25", vc)
    with pytest.raises(FirevalError, match="unknown design"):
        design_relevance(q, "bow", "median", vc)
    with pytest.raises(FirevalError, match="nth:K"):
        design_relevance(q, "bow", "max", vc, query_captions="nth:0")
    with pytest.raises(InputError, match="fewer than 3"):
        design_relevance(q, "bow", "max", vc, query_captions="nth:3")


def test_wray_ndcg_zero_relevant_policies() -> None:
    """zero scores an empty query 0, drop leaves it out, nan (JPoSE's nDCG.py) gives NaN."""
    from fireval.core.judgments import Judgments  # noqa: F401  (built through the proxy file)
    from fireval.core.run import Run
    from fireval.proxies.ndcg import wray_ndcg
    from fireval.proxies.relevance import ProxyRelevance

    g = np.array([[1.0, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 0.2, 0.9]], dtype=np.float32)
    s = np.array([[0.9, 0.1, 0.5], [0.3, 0.2, 0.1], [0.8, 0.7, 0.6]])
    j = ProxyRelevance(g, ("c0", "c1", "c2"), ("v0", "v1", "v2"), {"proxy": "bow"}).to_judgments()
    run = Run(name="r", scores=s)
    per_t2v = []
    for row_s, row_g in zip(s, g):
        if (row_g > 0).any():
            per_t2v.append(_ndcg_at_r(row_g[np.argsort(-row_s)], row_g))
    zero = wray_ndcg(run, j, zero_relevant="zero")
    drop = wray_ndcg(run, j, zero_relevant="drop")
    nan = wray_ndcg(run, j, zero_relevant="nan")
    assert zero["t2v"] == pytest.approx(sum(per_t2v) / 3)
    assert drop["t2v"] == pytest.approx(sum(per_t2v) / 2)
    assert math.isnan(nan["t2v"]) and math.isnan(nan["mean"])
    # v2t: column 0 and 1 and 2 all have a positive item, so every policy agrees there
    assert zero["v2t"] == pytest.approx(drop["v2t"]) == pytest.approx(nan["v2t"])
    with pytest.raises(FirevalError, match="zero, drop or nan"):
        wray_ndcg(run, j, zero_relevant="skip")


def test_evaluate_zero_relevant_option(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`evaluate --preset wray2021 --zero-relevant zero|drop|nan` (and the API's ``zero_relevant``)
    give the oracle's means: 0 kept, left out, or NaN (JPoSE's nDCG.py); the JSON's Eq. 3 follows."""
    import json

    from tests.cli_helpers import exit_code

    import fireval
    from fireval.proxies.relevance import ProxyRelevance

    g = np.array([[1.0, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 0.2, 0.9]], dtype=np.float32)
    s = np.array([[0.9, 0.1, 0.5], [0.3, 0.2, 0.1], [0.8, 0.7, 0.6]])
    coll = Collection.from_pairs("toy", [(f"c{i}", f"v{i}", f"caption {i}") for i in range(3)])
    j = ProxyRelevance(g, ("c0", "c1", "c2"), ("v0", "v1", "v2"), {"proxy": "bow"}).to_judgments()
    per = [_ndcg_at_r(rg[np.argsort(-rs)], rg) for rs, rg in zip(s, g) if (rg > 0).any()]
    want = {"zero": sum(per) / 3, "drop": sum(per) / 2, "nan": float("nan")}
    for rule, value in want.items():
        ev = fireval.evaluate(s, coll, j, preset="wray2021", direction="t2v", zero_relevant=rule)
        got = ev.value("nDCG@R", direction="t2v")
        assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value), rule
    # no option: the preset's rule (zero); without the preset: drop
    ev = fireval.evaluate(s, coll, j, preset="wray2021", direction="t2v")
    assert ev.value("nDCG@R", direction="t2v") == pytest.approx(want["zero"])
    ev = fireval.evaluate(s, coll, j, measures="nDCG@R", direction="t2v")
    assert ev.value("nDCG@R", direction="t2v") == pytest.approx(want["drop"])
    with pytest.raises(FirevalError, match="zero_relevant"):
        fireval.evaluate(s, coll, j, preset="wray2021", zero_relevant="skip")
    # the CLI: parse-time refusal, and the JSON's Eq. 3 under nan
    np.save(tmp_path / "r.npy", s)
    csv = tmp_path / "c.csv"
    csv.write_text(
        "key,vid_key,video_id,sentence\n" + "".join(f"c{i},msr{i},v{i},caption {i}\n" for i in range(3))
    )
    ProxyRelevance(g, ("c0", "c1", "c2"), ("v0", "v1", "v2"), {"proxy": "bow"}).save(tmp_path / "bow.npz")
    args = [
        "evaluate",
        str(tmp_path / "r.npy"),
        "-c",
        str(csv),
        "--no-instance",
        "-l",
        str(tmp_path / "bow.npz"),
    ]
    assert exit_code([*args, "--preset", "wray2021", "--zero-relevant", "skip"]) == 2
    assert "--zero-relevant" in capsys.readouterr().err
    out = tmp_path / "e.json"
    assert (
        exit_code(
            [*args, "--preset", "wray2021", "--zero-relevant", "nan", "-d", "both", "-q", "--json", str(out)]
        )
        == 0
    )
    eq3 = json.loads(out.read_text())["wray_eq3"]
    assert eq3 and all(r["t2v"] is None and r["mean"] is None and r["v2t"] > 0 for r in eq3)  # null: NaN


def test_proxies_random_cli_designs(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`proxies random -c` prints and writes one row per proxy x design x query choice; the values
    are the enumeration oracle's on the same captions."""
    import json

    from tests.cli_helpers import exit_code, write_csv_collection

    csv = write_csv_collection(tmp_path / "toy.csv", [(v, t) for v, ts in VIDEOS.items() for t in ts])
    out = tmp_path / "r.json"

    args = ["proxies", "random", "-c", str(csv), "-p", "bow", "--design", "max,single", "--query-captions"]
    assert exit_code([*args, "first,nth:2", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert [(r["design"], r["query_captions"]) for r in got] == [
        ("max", "first"),
        ("max", "nth:2"),
        ("single", "first"),
        ("single", "nth:2"),
    ]
    for r in got:
        want = _oracle_random(_oracle_grades(QUERY_SETS[r["query_captions"]], r["design"]), "zero")
        assert r["mean"] == pytest.approx(want, abs=1e-9)
    assert capsys.readouterr().out.count("Eq.3") == 4
    assert exit_code([*args, "first", "--zero-relevant", "never"]) == 2
    assert exit_code([*args, "first", "-l", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 2
        and "--zero-relevant" in err[0]
        and "zero, drop, nan" in err[0]
        and "either -l" in err[1]
    )
