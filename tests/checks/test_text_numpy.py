"""The numpy-only text model of the checks against the scipy.sparse implementation it replaced.

The oracle below is the previous code of ``fireval.checks.text`` / ``fireval.checks.alignment``
(scipy.sparse CSR algebra), kept here as a test-only reference: the numpy version must give the
same matrices, positives, pair similarities, baselines and text top-K gain (to 1e-12). The text's
own top-K values come from a full sort of each row (the definition), not from a top-K selection.
"""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

from fireval.checks import alignment as al  # noqa: E402
from fireval.checks import text as tx  # noqa: E402
from fireval.core import Collection, Direction  # noqa: E402
from fireval.core.text import normalise  # noqa: E402

# ---- oracle: the scipy.sparse implementation (test-only) -------------------------------------


def _l2_rows_sp(m):
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ m)


def text_model_sp(collection: Collection):
    vocab: dict[str, int] = {}
    word_ids: list[int] = []
    lengths = np.zeros(collection.n_captions, dtype=np.int64)
    for i, text in enumerate(collection.captions):
        toks = [t for t in normalise(text).split() if t not in tx.STOP_WORDS]
        lengths[i] = len(toks)
        word_ids.extend(vocab.setdefault(t, len(vocab)) for t in toks)
    n_c, n_v = collection.n_captions, collection.n_videos
    rows = np.repeat(np.arange(n_c), lengths)
    cols = np.asarray(word_ids, dtype=np.int64)
    counts = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(n_c, max(len(vocab), 1)))
    counts.sum_duplicates()
    incidence = sp.csr_matrix((np.ones(n_c), (collection.caption_video, np.arange(n_c))), shape=(n_v, n_c))
    video_counts = sp.csr_matrix(incidence @ counts)
    df = np.diff(video_counts.tocsc().indptr)
    keep = np.flatnonzero(df >= 2)
    idf = np.log((1.0 + n_v) / (1.0 + df[keep])) + 1.0
    weight = sp.diags(idf)
    caps = _l2_rows_sp(sp.csr_matrix(counts[:, keep] @ weight))
    vids = _l2_rows_sp(sp.csr_matrix(video_counts[:, keep] @ weight))
    for m in (caps, vids):
        m.sort_indices()
    return caps, vids, int(keep.size)


def positives_sp(collection: Collection, direction: Direction):
    n_c = collection.n_captions
    m = sp.csr_matrix(
        (np.ones(n_c, dtype=bool), (np.arange(n_c), collection.caption_video)),
        shape=(n_c, collection.n_videos),
    )
    return m if direction is Direction.T2V else sp.csr_matrix(m.T)


def baseline_sp(qv, dv, pos, weight):
    total = weight.sum()
    raw = np.asarray(qv @ (dv.T @ weight)).ravel()
    rows = np.repeat(np.arange(pos.shape[0]), np.diff(pos.indptr))
    ps = tx.pair_similarity(qv, dv, rows, pos.indices.astype(np.int64)) * weight[pos.indices]
    pw = np.bincount(rows, weights=weight[pos.indices], minlength=pos.shape[0])
    corr = np.bincount(rows, weights=ps, minlength=pos.shape[0])
    denom = total - pw
    return np.where(denom > 0, (raw - corr) / np.where(denom > 0, denom, 1.0), 0.0)


def oracle_gain_sp(qv, dv, pos, k, u, seed):
    n_q = qv.shape[0]
    rng = np.random.default_rng(seed + 1)
    sample = np.sort(rng.choice(n_q, size=min(n_q, al._ORACLE_SAMPLE), replace=False))
    docs_t = sp.csc_matrix(dv.T)
    gains = []
    step = max(1, (1 << 22) // max(dv.shape[0], 1))
    for lo in range(0, sample.size, step):
        rows = sample[lo : lo + step]
        block = (qv[rows] @ docs_t).toarray()
        p = sp.coo_matrix(pos[rows])
        block[p.row, p.col] = -np.inf  # positives left out
        vals = -np.sort(-block, axis=1)[:, :k]  # the definition: a full sort of each row
        ok = vals > -np.inf
        gains.append(np.where(ok, vals, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1) - u[rows])
    return float(np.concatenate(gains).mean()) if gains else 0.0


# ---- comparisons -------------------------------------------------------------------------------


def _same_csr(ours: tx.Csr, ref) -> None:
    assert ours.shape == ref.shape
    np.testing.assert_array_equal(ours.indptr, ref.indptr)
    np.testing.assert_array_equal(ours.indices, ref.indices)
    np.testing.assert_allclose(ours.data, ref.data, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def vatex_small(vatex: Collection) -> Collection:
    """The first 200 VATEX videos (10 captions each): several captions per video."""
    keep = set(vatex.video_ids[:200])
    pairs = [
        (c, vatex.video_ids[v], t)
        for c, v, t in zip(vatex.caption_ids, vatex.caption_video, vatex.captions)
        if vatex.video_ids[v] in keep
    ]
    return Collection.from_pairs("vatex-200", pairs)


@pytest.fixture(scope="module", params=["one_per_video", "multi_caption", "tiny"])
def collection(request, real, vatex_small) -> Collection:
    if request.param == "one_per_video":
        return real[1]
    if request.param == "multi_caption":
        return vatex_small
    pairs = [("c0", "v0", "a man cooks"), ("c1", "v0", "a man cooks pasta"), ("c2", "v1", "pasta man"),
             ("c3", "v2", "the and of"), ("c4", "v3", "cooks a dog")]  # fmt: skip
    return Collection.from_pairs("tiny", pairs, video_ids=["v0", "v1", "v2", "v3", "v4"])


def test_model_and_positives_equal_scipy(collection):
    model = tx.text_model(collection)
    caps, vids, n_words = text_model_sp(collection)
    assert model.n_words == n_words
    _same_csr(model.captions, caps)
    _same_csr(model.videos, vids)
    for direction in Direction:
        p = positives_sp(collection, direction)
        ours = tx.positives(collection, direction)
        _same_csr(ours, p)
        assert ours.data.dtype == bool


def test_products_equal_scipy(collection, monkeypatch):
    model = tx.text_model(collection)
    caps, vids, _ = text_model_sp(collection)
    rng = np.random.default_rng(0)
    for direction in Direction:
        qv, dv = model.sides(direction)
        qs, ds = (caps, vids) if direction is Direction.T2V else (vids, caps)
        pos, pos_sp = tx.positives(collection, direction), positives_sp(collection, direction)
        for weight in (np.ones(dv.shape[0]), rng.random(dv.shape[0])):
            np.testing.assert_allclose(
                al._baseline(qv, dv, pos, weight), baseline_sp(qs, ds, pos_sp, weight), rtol=0, atol=1e-12
            )
        rows = np.sort(rng.choice(qv.shape[0], size=min(37, qv.shape[0]), replace=False))
        ref = (qs[rows] @ sp.csc_matrix(ds.T)).toarray()
        np.testing.assert_allclose(qv[rows].dot_transposed(dv.transpose()), ref, rtol=0, atol=1e-12)
        monkeypatch.setattr(tx, "_PAIR_CHUNK", 7)  # many small chunks of pairs give the same block
        np.testing.assert_allclose(qv[rows].dot_transposed(dv.transpose()), ref, rtol=0, atol=1e-12)
        monkeypatch.undo()
        np.testing.assert_allclose(
            qv[2:9].dot_transposed(dv.transpose()), (qs[2:9] @ ds.T).toarray(), atol=1e-12
        )
        u = al._baseline(qv, dv, pos, np.ones(dv.shape[0]))
        for k in (1, 5):
            got = al._oracle_gain(qv, dv, pos, k, u, seed=3)
            want = oracle_gain_sp(qs, ds, pos_sp, k, u, seed=3)
            assert got == pytest.approx(want, abs=1e-12)


def test_alignment_figures_equal_scipy_oracle(real):
    """End to end: the alignment check's figures with the numpy model equal those with the oracle."""
    from fireval.checks.scan import scan

    _, coll, runs = real
    run = runs["clip4clip"]
    model = tx.text_model(coll)
    caps, vids, _ = text_model_sp(coll)
    for direction in Direction:
        sc = scan(run, coll, direction, k=10)
        got = al.alignment(sc, coll, model, k=10).figures
        qs, ds = (caps, vids) if direction is Direction.T2V else (vids, caps)
        pos_sp = positives_sp(coll, direction)
        freq = np.bincount(sc.top[sc.valid], minlength=sc.n_docs).astype(np.float64)
        b = baseline_sp(qs, ds, pos_sp, freq)
        u = baseline_sp(qs, ds, pos_sp, np.ones(sc.n_docs))
        has = sc.valid.sum(axis=1) > 0
        assert got["null_similarity"] == pytest.approx(float(b[has].mean()), abs=1e-12)
        assert got["random_similarity"] == pytest.approx(float(u[has].mean()), abs=1e-12)
        assert got["text_top_k_gain"] == pytest.approx(oracle_gain_sp(qs, ds, pos_sp, 10, u, 0), abs=1e-12)


def test_text_top_values_equal_a_full_sort_with_ties() -> None:
    """``_top_values`` (threshold from group maxima, no random draw) against sorting each row,
    on blocks full of ties (many zeros, few distinct values) and rows with few documents left."""
    rng = np.random.default_rng(1)
    for trial in range(300):
        n, d, k = int(rng.integers(1, 30)), int(rng.integers(1, 400)), int(rng.integers(1, 15))
        block = rng.integers(0, 4, (n, d)).astype(float) if trial % 2 else rng.random((n, d))
        if trial % 3 == 0:
            block[rng.random((n, d)) < 0.9] = 0.0
        rows = np.repeat(np.arange(n), rng.integers(0, 3, n))
        key = np.unique(rows * d + rng.integers(0, d, rows.size))
        pos = tx.Csr.from_coo(key // d, key % d, np.ones(key.size, dtype=bool), (n, d))
        ref = block.copy()
        ref[key // d, key % d] = -np.inf
        want = np.full((n, k), -np.inf)
        srt = -np.sort(-ref, axis=1)[:, :k]
        want[:, : srt.shape[1]] = srt
        np.testing.assert_array_equal(
            al._top_values(block.copy(), pos, k), want, err_msg=str((trial, n, d, k))
        )


def test_normal_constants_equal_statistics() -> None:
    """The alignment check's critical value and p-value formula are the standard library's."""
    from statistics import NormalDist

    assert NormalDist().inv_cdf(1.0 - al.ALPHA) == al.Z_ALPHA
    for z in (-3.0, -0.5, 0.0, 0.7, 2.5, 3.09, 5.0, np.float64(1.234)):
        assert al.upper_tail(z) == 1.0 - NormalDist().cdf(z)


def test_tokens_equal_normalise_split() -> None:
    """The one-pass tokenizer gives the words of ``normalise(caption).split()`` (stop words out),
    ids by first appearance, on captions with newlines, underscores, digits and non-ASCII case."""
    captions = [
        "A man_cooks\nPASTA in a kitchen",
        "",
        "ΟΔΟΣ σοφός ΣΟΦΟΣ\n\n",
        "the and of",
        "İstanbul café—naïve 3D-printing, 42 cats!!",
        "\nleading newline and trailing_",
        "pasta pasta man",
    ]
    vocab: dict[str, int] = {}
    want_ids: list[int] = []
    want_len = []
    for text in captions:
        toks = [t for t in normalise(text).split() if t not in tx.STOP_WORDS]
        want_len.append(len(toks))
        want_ids.extend(vocab.setdefault(t, len(vocab)) for t in toks)
    ids, lengths, n_vocab = tx._tokens(captions)
    assert ids.tolist() == want_ids and lengths.tolist() == want_len and n_vocab == len(vocab)
    assert tx._tokens([])[2] == 0


def test_text_gain_shared_by_both_directions_only_when_equal(collection) -> None:
    """With one caption per video (and every query sampled) both directions' text top-K gains are
    one value, computed once: it equals each direction's own computation."""
    model = tx.text_model(collection)
    n_c, n_v = collection.shape
    one_each = n_c == n_v and np.bincount(collection.caption_video, minlength=n_v).max() == 1
    one_each &= n_c <= al._ORACLE_SAMPLE  # larger: each direction samples its own queries
    gains = []
    for direction in Direction:
        qv, dv = model.sides(direction)
        pos = tx.positives(collection, direction)
        u = al._baseline(qv, dv, pos, np.ones(dv.shape[0]))
        gains.append(al._oracle_gain(qv, dv, pos, 10, u, seed=0))
        assert al._oracle_side(collection, direction) == ("both" if one_each else direction)
    if one_each:
        assert gains[0] == pytest.approx(gains[1], rel=1e-14, abs=1e-15)
