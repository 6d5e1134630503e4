"""Wray et al. (2021) as published: test-only oracles written from the paper's definitions.

Each oracle below is plain Python over single pairs / single queries on small inputs, written
from the definitions (docs/proxies.md), never from the code under test:

* BoW: ``set(caption.split(" ")) - spaCy stop words``, IoU (0 on an empty union);
* PoS: surface tokens tagged VERB / NOUN by the tagger, mean of the two IoUs;
* SYN with class lists: the class of each VERB/NOUN word from the CSV (else the word);
* words25: items in >= 25% of a video's captions;
* matching kernel: (max + mean) / 2 of per-caption scores;
* nDCG@R with zero-relevant queries scored 0; expected random nDCG@R by enumerating all
  permutations (and Monte Carlo on a larger case).
"""

from __future__ import annotations

import ast
import csv
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from fireval.core.collection import Collection
from fireval.core.errors import FirevalError, InputError
from fireval.core.run import Run

QUERIES = [
    ("q0", "v0", "a man is riding a horse on the beach"),
    ("q1", "v1", "a woman  cooks pasta in a kitchen"),  # double space: an empty-string word
    ("q2", "v2", "dogs are playing with a ball"),
    ("q3", "v3", "the the the"),  # only stop words: empty BoW set
]
DOCS = [
    ("d0", "v0", "a man rides a horse"),
    ("d1", "v0", "a man is riding a horse"),
    ("d2", "v0", "horses running on the beach"),
    ("d3", "v0", "a man riding on the beach"),
    ("d4", "v1", "someone cooks pasta"),
    ("d5", "v1", "a woman  is cooking pasta in a kitchen"),
    ("d6", "v1", "a chef cooks pasta"),
    ("d7", "v2", "dogs play fetch with a ball"),
    ("d8", "v2", "a dog is playing"),
    ("d9", "v3", "a boy plays guitar"),
]


@pytest.fixture(scope="module")
def colls() -> tuple[Collection, Collection]:
    q = Collection.from_pairs("toy", QUERIES)
    d = Collection.from_pairs("toy-caps", DOCS, video_ids=["v0", "v1", "v2", "v3"])
    return q, d


# ------------------------------------------------------------------------------ oracles
def _spacy_stop() -> set[str]:
    p = Path(__file__).resolve().parents[2] / "src/fireval/proxies/data/spacy_en_stop_words.txt"
    return {w for w in p.read_text(encoding="utf-8").splitlines() if w and not w.startswith("#")}


def o_iou(a: set[str], b: set[str]) -> float:
    u = a | b
    return len(a & b) / len(u) if u else 0.0


def o_bow(text: str, stop: set[str]) -> set[str]:
    return {w for w in text.split(" ") if w not in stop}


def o_tagged(text: str, upos: str) -> set[str]:
    from fireval.proxies.tagger import tag

    toks = [t for t in "".join(c if c.isalnum() else " " for c in text.lower()).split()]
    return {w for w, t in zip(toks, tag(toks)) if t == upos}


def o_words25(sets: list[set[str]], presence: float = 0.25) -> set[str]:
    words = set().union(*sets) if sets else set()
    return {w for w in words if sum(w in s for s in sets) >= presence * len(sets)}


def o_ndcg_r(scores: list[float], rel: list[float]) -> float | None:
    """nDCG@R of one query; None when no item has relevance > 0."""
    r = sum(x > 0 for x in rel)
    if r == 0:
        return None
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    dcg = sum(rel[order[k]] / math.log2(k + 2) for k in range(r))
    ideal = sorted(rel, reverse=True)
    idcg = sum(ideal[k] / math.log2(k + 2) for k in range(r))
    return dcg / idcg


def _videos(d: Collection) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for text, v in zip(d.captions, d.caption_video):
        out.setdefault(int(v), []).append(text)
    return out


# ------------------------------------------------------------------------------ tests
def test_spacy_stop_list_shipped_with_attribution() -> None:
    from fireval.proxies.text import STOP_WORDS, spacy_stop_words, stop_words

    sw = spacy_stop_words()
    assert len(sw) == 326 and sw == _spacy_stop()
    assert {"the", "a", "is", "n't", "'s", "’s", "ca", "really"} <= sw
    assert "fire" not in sw and "thin" not in sw and "make" in sw  # the lists differ
    assert stop_words("glasgow") is STOP_WORDS and sw != STOP_WORDS
    lic = Path(__file__).resolve().parents[2] / "src/fireval/proxies/data/spacy_LICENSE.txt"
    assert "MIT" in lic.read_text() and "ExplosionAI" in lic.read_text()
    with pytest.raises(FirevalError, match="stop-word list"):
        stop_words("nltk")


@pytest.mark.parametrize("agg", ["max", "mean", "words25"])
def test_bow_surface_equals_oracle(colls, pipeline, agg: str) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import video_relevance
    from fireval.proxies.text import WRAY2021_TEXT

    q, d = colls
    stop = _spacy_stop()
    rel = video_relevance(q, "bow", agg, d, pipeline=pipeline, options=WRAY2021_TEXT)
    vids = _videos(d)
    for i, qt in enumerate(q.captions):
        a = o_bow(qt, stop)
        for v, caps in vids.items():
            if agg == "words25":
                want = o_iou(a, o_words25([o_bow(c, stop) for c in caps]))
            else:
                vals = [o_iou(a, o_bow(c, stop)) for c in caps]
                want = max(vals) if agg == "max" else sum(vals) / len(vals)
            assert rel.grades[i, v] == pytest.approx(want, abs=1e-6), (i, v, agg)
    # the double space of q1 and d5 is an empty-string word in both sets: {"", woman, cooks, pasta, kitchen}
    # vs {"", woman, cooking, pasta, kitchen}
    assert rel.grades[1, 1] >= (4 / 6 if agg == "max" else 0)
    assert rel.grades[3, 3] == 0.0  # only stop words: empty union counts 0


def test_preset_is_words25_surface_spacy(colls, pipeline) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import video_relevance
    from fireval.proxies.text import WRAY2021_TEXT

    q, d = colls
    a = video_relevance(q, "bow", video_captions=d, pipeline=pipeline, preset="wray2021")
    b = video_relevance(q, "bow", "words25", d, pipeline=pipeline, options=WRAY2021_TEXT)
    np.testing.assert_array_equal(a.grades, b.grades)
    assert a.meta["agg"] == "words25" and a.meta["words"] == "surface" and a.meta["preset"] == "wray2021"
    assert a.meta["stop_words"].startswith("spacy")
    lem = video_relevance(q, "bow", video_captions=d, pipeline=pipeline)  # no preset: lemma, max
    assert lem.meta["agg"] == "max" and lem.meta["words"] == "lemma"
    with pytest.raises(FirevalError, match="preset"):
        video_relevance(q, "bow", video_captions=d, preset="wray2020")


@pytest.mark.parametrize("agg", ["max", "words25"])
def test_pos_surface_equals_oracle(colls, pipeline, agg: str) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import video_relevance
    from fireval.proxies.text import WRAY2021_TEXT

    q, d = colls
    rel = video_relevance(q, "pos", agg, d, pipeline=pipeline, options=WRAY2021_TEXT)
    vids = _videos(d)
    for i, qt in enumerate(q.captions):
        qv, qn = o_tagged(qt, "VERB"), o_tagged(qt, "NOUN")
        for v, caps in vids.items():
            if agg == "words25":
                dv = o_words25([o_tagged(c, "VERB") for c in caps])
                dn = o_words25([o_tagged(c, "NOUN") for c in caps])
                want = (o_iou(qv, dv) + o_iou(qn, dn)) / 2
            else:
                want = max(
                    (o_iou(qv, o_tagged(c, "VERB")) + o_iou(qn, o_tagged(c, "NOUN"))) / 2 for c in caps
                )
            assert rel.grades[i, v] == pytest.approx(want, abs=1e-6), (i, v)
    # surface forms: "riding" (q0) and "rides" (d0) do not match without lemmas
    assert "riding" in o_tagged(QUERIES[0][2], "VERB")


VERB_CSV = """id,key,instances
0,take,"['take', 'grab', 'pick-up']"
1,cook,"['cook', 'cooks', 'cooking', 'fry']"
2,play,"['play', 'playing', 'plays']"
"""
NOUN_CSV = """id,key,instances,category
0,pasta,"['pasta', 'spaghetti', 'noodle']",food
1,person,"['man', 'woman', 'chef', 'someone', 'boy']",people
2,dog,"['dog', 'dogs', 'puppy']",animals
"""


def _o_classes(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            for w in [row["key"], *ast.literal_eval(row["instances"])]:
                out.setdefault(w, row["id"])
    return out


def test_syn_with_class_lists_equals_oracle(colls, pipeline, wn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import resolve_options, video_relevance

    (tmp_path / "verbs.csv").write_text(VERB_CSV)
    (tmp_path / "nouns.csv").write_text(NOUN_CSV)
    vmap, nmap = _o_classes(tmp_path / "verbs.csv"), _o_classes(tmp_path / "nouns.csv")
    opts, agg = resolve_options(
        "syn", "wray2021", agg="max", verb_classes=tmp_path / "verbs.csv", noun_classes=tmp_path / "nouns.csv"
    )
    assert opts.words == "surface" and opts.verb_classes is not None and opts.verb_classes.n_classes == 3
    q, d = colls
    rel = video_relevance(q, "syn", agg, d, pipeline=pipeline, options=opts)

    def lemma(w: str, pos: str) -> str:  # NLTK WordNetLemmatizer().lemmatize: the shortest base form
        forms = wn._morphy(w, pos)
        return min(forms, key=len) if forms else w

    def cls(text: str, upos: str, m: dict[str, str]) -> set[str]:
        # Wray's class script: look the lemma up; an unseen lemma gets a class of its own
        out = set()
        for w in o_tagged(text, upos):
            lem = lemma(w, "v" if upos == "VERB" else "n")
            key = m.get(lem)
            out.add(f"#{key}" if key is not None else lem)
        return out

    for i, qt in enumerate(q.captions):
        for v, caps in _videos(d).items():
            want = max(
                (
                    o_iou(cls(qt, "VERB", vmap), cls(c, "VERB", vmap))
                    + o_iou(cls(qt, "NOUN", nmap), cls(c, "NOUN", nmap))
                )
                / 2
                for c in caps
            )
            assert rel.grades[i, v] == pytest.approx(want, abs=1e-6), (i, v)
    nc, vc = opts.noun_classes, opts.verb_classes
    assert nc is not None and vc is not None
    assert nc.item("woman") == nc.item("chef") == "#1" and nc.item("kitchen") == "kitchen"
    assert vc.item("pick-up") == "#0" and vc.item("cooked", "cook") == "#1"


def test_class_csv_errors(tmp_path: Path) -> None:
    from fireval.proxies.relevance import resolve_options
    from fireval.proxies.text import read_class_csv

    bad = tmp_path / "bad.csv"
    bad.write_text("id,key,instances\n0,take,\"['take', 'grab'\"\n")
    with pytest.raises(InputError) as e:
        read_class_csv(bad)
    assert "bad.csv:2" in str(e.value) and "instances" in str(e.value)
    (tmp_path / "hdr.csv").write_text("id,name\n0,take\n")
    with pytest.raises(InputError, match="id, key, instances"):
        read_class_csv(tmp_path / "hdr.csv")
    with pytest.raises(InputError, match="not found"):
        read_class_csv(tmp_path / "missing.csv")
    (tmp_path / "v.csv").write_text(VERB_CSV)
    with pytest.raises(FirevalError, match="syn proxy"):
        resolve_options("bow", None, verb_classes=tmp_path / "v.csv")


def test_matching_kernel_meteor_equals_oracle(colls, pipeline, wn) -> None:  # type: ignore[no-untyped-def]
    from nltk.translate.meteor_score import single_meteor_score

    from fireval.proxies.relevance import video_relevance

    q, d = colls
    rel = video_relevance(q, "meteor", video_captions=d, pipeline=pipeline, preset="wray2021")
    assert rel.meta["agg"] == "match"
    for i, qt in enumerate(q.captions):
        for v, caps in _videos(d).items():
            s = [single_meteor_score(c.split(), qt.split(), wordnet=wn) for c in caps]
            want = 0.5 * (max(s) + sum(s) / len(s))  # K({q}, Y) = ½[max_y k + mean_y k]
            assert rel.grades[i, v] == pytest.approx(want, abs=1e-6), (i, v)


def test_matching_kernel_set_proxy(colls, pipeline) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import video_relevance

    q, d = colls
    mx = video_relevance(q, "bow", "max", d, pipeline=pipeline)
    mn = video_relevance(q, "bow", "mean", d, pipeline=pipeline)
    m = video_relevance(q, "bow", "match", d, pipeline=pipeline)
    np.testing.assert_allclose(m.grades, (mx.grades + mn.grades) / 2, atol=1e-6)


# ------------------------------------------------------------------------------ nDCG
def _run_and_rel(seed: int, nq: int, nd: int, zero_rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = rng.random((nq, nd))
    rel = np.where(rng.random((nq, nd)) < 0.3, np.round(rng.random((nq, nd)), 2), 0.0)
    rel[:zero_rows] = 0.0  # queries (t2v) with no relevant item
    rel[:, :1] = 0.0  # and one v2t query with none
    return scores, rel


def _judg(rel: np.ndarray):  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import ProxyRelevance

    caps = tuple(f"c{i}" for i in range(rel.shape[0]))
    vids = tuple(f"v{i}" for i in range(rel.shape[1]))
    return ProxyRelevance(rel.astype(np.float32), caps, vids, {"proxy": "toy"}).to_judgments()


def test_ndcg_at_r_zero_relevant_scored_zero_equals_oracle() -> None:
    from fireval.metrics import evaluate
    from fireval.proxies.ndcg import eq3, wray_ndcg

    scores, rel = _run_and_rel(1, 12, 9, 2)
    rel = rel.astype(np.float32).astype(np.float64)
    run = Run("r", scores=scores)
    j = _judg(rel)
    got = wray_ndcg(run, j)
    dropped = wray_ndcg(run, j, zero_relevant="drop")
    for d, s, r in (("t2v", scores, rel), ("v2t", scores.T, rel.T)):
        per = [o_ndcg_r(list(a), list(b)) for a, b in zip(s, r)]
        assert any(x is None for x in per)
        want_zero = sum(0.0 if x is None else x for x in per) / len(per)
        kept = [x for x in per if x is not None]
        assert got[d] == pytest.approx(want_zero, abs=1e-9)
        assert dropped[d] == pytest.approx(sum(kept) / len(kept), abs=1e-9)
    assert got["mean"] == pytest.approx((got["t2v"] + got["v2t"]) / 2)
    ev = evaluate(run, j, preset="wray2021")
    assert set(ev.table["n"]) == {12, 9}  # every query stays in the mean
    e3 = eq3(ev.table)
    assert len(e3) == 1 and e3["mean"].iloc[0] == pytest.approx(got["mean"], abs=1e-9)


def _brute_random(rel: list[float]) -> float | None:
    """Mean nDCG@R over all N! orderings (each equally likely under a uniform random ranking)."""
    n = len(rel)
    if not any(x > 0 for x in rel):
        return None
    vals = []
    for perm in itertools.permutations(range(n)):
        scores = [0.0] * n
        for rank, item in enumerate(perm):
            scores[item] = float(n - rank)
        v = o_ndcg_r(scores, rel)
        assert v is not None
        vals.append(v)
    return sum(vals) / len(vals)


def test_expected_random_ndcg_equals_enumeration() -> None:
    from fireval.proxies.ndcg import expected_random_ndcg, expected_random_ndcg_per_query

    rows = [
        [1.0, 0.0, 0.0, 0.0, 0.0],
        [0.5, 0.25, 0.0, 0.0, 1.0],
        [0.2, 0.2, 0.2, 0.2, 0.2, 0.2][:5],
        [0.0, 0.0, 0.0, 0.0, 0.0],
        [0.9, 0.1, 0.3, 0.0, 0.7],
        [0.0, 1.0, 0.0, 0.5, 0.0],
    ]
    per = expected_random_ndcg_per_query(np.array(rows))
    for got, r in zip(per, rows):
        want = _brute_random(r)
        if want is None:
            assert np.isnan(got)
        else:
            assert got == pytest.approx(want, abs=1e-12)
    six = [0.3, 0.0, 1.0, 0.0, 0.6, 0.1]
    assert expected_random_ndcg_per_query(np.array([six]))[0] == pytest.approx(_brute_random(six), abs=1e-12)
    g = np.array(rows)  # as caption x video: v2t queries are the columns
    res = expected_random_ndcg(g, "zero")
    brute_t2v = [_brute_random(r) for r in rows]
    assert res["t2v"] == pytest.approx(sum(x or 0.0 for x in brute_t2v) / len(rows), abs=1e-12)
    cols = [list(c) for c in g.T]
    brute_v2t = [_brute_random(c[:6]) for c in cols]  # 6 items: 720 orderings
    kept = [x for x in brute_v2t if x is not None]
    assert expected_random_ndcg(g, "drop")["v2t"] == pytest.approx(sum(kept) / len(kept), abs=1e-12)
    assert res["n_zero_relevant"]["t2v"] == 1 and res["mean"] == pytest.approx((res["t2v"] + res["v2t"]) / 2)


def test_expected_random_ndcg_monte_carlo() -> None:
    from fireval.proxies.ndcg import expected_random_ndcg_per_query

    rng = np.random.default_rng(7)
    rel = np.where(rng.random(40) < 0.4, rng.random(40), 0.0)
    want = expected_random_ndcg_per_query(rel[None, :])[0]
    draws = [o_ndcg_r(list(rng.random(40)), list(rel)) for _ in range(4000)]
    mc = float(np.mean(draws))
    se = float(np.std(draws)) / math.sqrt(len(draws))
    assert abs(mc - want) < 4 * se


# ------------------------------------------------------------------------------ Fig. 4 / App. B
def test_fig4_counts_equal_oracle() -> None:
    from fireval.proxies.analysis import relevant_counts, threshold_curve

    _, rel = _run_and_rel(3, 7, 5, 1)
    ths = [0.0, 0.25, 0.5, 1.0]
    for d, m in (("t2v", rel), ("v2t", rel.T)):
        c = relevant_counts(rel, d, ths)
        for k, t in enumerate(ths):
            for qi, row in enumerate(m):
                want = sum((x > 0) if t == 0 else (x >= t) for x in row)
                assert c[k, qi] == want
    tab = threshold_curve(rel, ths, proxy="toy")
    row = tab[(tab.direction == "t2v") & (tab.threshold == 0.25)].iloc[0]
    counts = [sum(x >= 0.25 for x in r) for r in rel]
    assert row["mean"] == pytest.approx(sum(counts) / len(counts))
    assert row["share_zero"] == pytest.approx(sum(c == 0 for c in counts) / len(counts))
    with pytest.raises(FirevalError, match="thresholds"):
        relevant_counts(rel, "t2v", [1.5])


def test_appendix_b_pearson_equals_scipy() -> None:
    from scipy.stats import pearsonr

    from fireval.proxies.analysis import correlation_table, proxy_correlations

    rng = np.random.default_rng(5)
    a = rng.random((30, 6))
    b = 0.5 * a + rng.random((30, 6))
    b[:, 2] = 0.3  # a constant vector: no correlation for video 2
    r = proxy_correlations(a, b, "v2t")
    for v in range(6):
        if v == 2:
            assert np.isnan(r[v])
        else:
            assert r[v] == pytest.approx(pearsonr(a[:, v], b[:, v])[0], abs=1e-12)
    t = correlation_table({"x": a, "y": b, "z": a}, "v2t")
    assert len(t) == 3
    xz = t[(t.proxy_a == "x") & (t.proxy_b == "z")].iloc[0]
    assert xz["mean"] == pytest.approx(1.0) and xz["n_defined"] == 6
    xy = t[(t.proxy_a == "x") & (t.proxy_b == "y")].iloc[0]
    assert xy["n_defined"] == 5 and xy["mean"] == pytest.approx(np.nanmean(r))


def test_random_sweep_rows(colls) -> None:  # type: ignore[no-untyped-def]
    from fireval.proxies.analysis import random_sweep
    from fireval.proxies.ndcg import expected_random_ndcg
    from fireval.proxies.relevance import video_relevance
    from fireval.proxies.text import TextOptions

    q, d = colls
    seen = []
    t = random_sweep(q, d, proxies=("bow",), aggs={"bow": ("words25", "max")}, on_row=seen.append)
    assert len(t) == len(seen) == 2 * 2 * 2  # 2 text settings x 2 aggregations x zero/drop
    row = t[(t.words == "lemma") & (t["agg"] == "max") & (t.zero_relevant == "drop")].iloc[0]
    want = expected_random_ndcg(video_relevance(q, "bow", "max", d, options=TextOptions()).grades, "drop")
    assert row["t2v"] == pytest.approx(want["t2v"]) and row["mean"] == pytest.approx(want["mean"])
