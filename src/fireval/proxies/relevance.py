"""Wray et al. (CVPR 2021, "On Semantic Similarity in Video Retrieval") proxy relevance.

Four caption–caption similarities (Wray §4, reference code ``mwray/Semantic-Video-Retrieval``
``create_relevancy_matrix.py``); the word form and stop list come from
:class:`fireval.proxies.text.TextOptions`:

* ``bow``: IoU of the sets of non-stop words (published: surface words ``text.split(" ")`` minus
  spaCy's stop list; ``lemma``: WordNet lemmas of ``[a-z0-9]+`` tokens minus the Glasgow list);
* ``pos``: ``(IoU(verbs) + IoU(nouns)) / 2`` with UPOS tags from the shipped tagger (surface
  token text, or lemmas);
* ``syn``: the same over WordNet synsets chosen by Lesk (:meth:`TextPipeline.lesk`), or over
  the classes of given verb/noun class lists (EPIC-Kitchens-100 CSVs); a word without a synset
  or class stands for itself;
* ``meteor``: NLTK's ``single_meteor_score(reference=doc caption, hypothesis=query caption)``,
  computed by the exact vectorised reimplementation in :mod:`fireval.proxies.meteor`; tokens
  are ``text.split()`` for ``surface`` (the NLTK of 2021 took strings and split them on
  whitespace; later versions require tokenised input) and ``[a-z0-9]+`` tokens for ``lemma``.

IoU with an empty union is 0. Caption × video relevance (the transpose of Wray's videos ×
captions matrix): a video is represented by its captions and the grade of (query caption,
video) is

* ``max`` / ``mean`` of the proxy over the video's captions;
* ``words25`` (set proxies): one IoU against the items present in at least 25% of the video's
  captions (``presence``), the paper's "robust word sets" for MSR-VTT; stop words are already
  removed from the BoW items. A single-caption video keeps its caption's set;
* ``match``: the non-Mercer *matching kernel* between the sets X = {query caption} and
  Y = the video's captions, ``K(X, Y) = ½[(1/|X|) Σ_x max_y k(x, y) + (1/|Y|) Σ_y max_x k(x, y)]``
  (Wallraven, Caputo & Graf 2003; shown not to be a Mercer kernel by Lyu 2005). With one
  query caption this is ``½(max + mean)`` of the proxy over the video's captions; the paper's
  many-to-many METEOR for MSR-VTT.

The ``wray2021`` preset (:func:`preset_defaults`) uses surface words, spaCy's stop list,
``words25`` for the set proxies and ``match`` for METEOR.

Speed (issue 14): BoW with ``max`` runs on numpy alone (:func:`bow_rows`,
:func:`fireval.proxies.iou.video_max_iou`); SciPy is imported only by the functions that build
sparse matrices (:func:`set_relevance` and the other proxies and aggregations), so a warm
``fireval proxies build`` does not pay its import.

The result, :class:`ProxyRelevance` (its file, its judgments) and :func:`load_relevances`, is
in :mod:`fireval.proxies.relevance_file` (re-exported here).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fireval.core.collection import Collection
from fireval.core.errors import FirevalError, InputError
from fireval.proxies.iou import Rows, binary_matrix
from fireval.proxies.relevance_file import ProxyRelevance
from fireval.proxies.relevance_file import _labelled_pairs as _labelled_pairs
from fireval.proxies.relevance_file import load_relevances as load_relevances
from fireval.proxies.text import LEMMA_TEXT, WRAY2021_TEXT, TextOptions, TextPipeline, stop_words, tokenize

if TYPE_CHECKING:  # SciPy is imported where sparse matrices are built (a fresh process pays ~0.2 s)
    import scipy.sparse as sp

PROXIES = ("bow", "pos", "syn", "meteor")
AGGREGATIONS = ("max", "mean", "words25", "match")
PROXY_PRESETS = ("wray2021",)


def preset_defaults(preset: str | None, proxy: str) -> tuple[TextOptions, str]:
    """``(text options, aggregation)`` of a preset for ``proxy``; fireval's own without one.

    ``wray2021``: surface words and spaCy's stop list; ``words25`` for bow/pos/syn and the
    matching kernel (``match``) for meteor. No preset: lemmas, Glasgow list, ``max``.
    """
    if preset is None:
        return LEMMA_TEXT, "max"
    p = preset.strip().lower()
    if p != "wray2021":
        raise FirevalError(f"unknown proxy preset {preset!r}; expected one of {', '.join(PROXY_PRESETS)}")
    return WRAY2021_TEXT, ("match" if proxy == "meteor" else "words25")


def resolve_options(
    proxy: str,
    preset: str | None = None,
    *,
    agg: str | None = None,
    words: str | None = None,
    stop: str | None = None,
    verb_classes: str | Path | None = None,
    noun_classes: str | Path | None = None,
) -> tuple[TextOptions, str]:
    """Text options and aggregation from a preset plus explicit overrides (what the CLI passes).

    Class-list paths are read with :func:`fireval.proxies.text.read_class_csv`; they apply
    to the ``syn`` proxy only (an error for the others, so nothing is silently ignored).
    """
    from dataclasses import replace

    from fireval.proxies.text import read_class_csv

    base, p_agg = preset_defaults(preset, proxy)
    if (verb_classes is not None or noun_classes is not None) and proxy != "syn":
        raise FirevalError(f"--verb-classes/--noun-classes apply to the syn proxy, not {proxy!r}")
    opts = replace(
        base,
        words=base.words if words is None else words.strip().lower(),
        stop=base.stop if stop is None else stop.strip().lower(),
        verb_classes=None if verb_classes is None else read_class_csv(verb_classes),
        noun_classes=None if noun_classes is None else read_class_csv(noun_classes),
    )
    return opts, (p_agg if agg is None else agg.strip().lower())


def meteor_tokens(text: str, options: TextOptions = LEMMA_TEXT) -> list[str]:
    """METEOR's tokens: ``text.split()`` for surface words, ``[a-z0-9]+`` tokens for lemmas."""
    return text.split() if options.words == "surface" else tokenize(text)


def _check(proxy: str, agg: str) -> None:
    if proxy not in PROXIES:
        raise FirevalError(f"unknown proxy {proxy!r}; expected one of {', '.join(PROXIES)}")
    if agg not in AGGREGATIONS:
        raise FirevalError(f"unknown aggregation {agg!r}; expected one of {', '.join(AGGREGATIONS)}")
    if proxy == "meteor" and agg == "words25":
        raise FirevalError("the 25% word-presence rule applies to set proxies (bow, pos, syn), not meteor")


def words_present(
    sets: list[list[str]], doc_video: npt.NDArray[np.int64], n_videos: int, presence: float = 0.25
) -> list[list[str]]:
    """Per video, the items present in at least ``presence`` of its captions (``words25``)."""
    return _words25(sets, doc_video, n_videos, presence)


def caption_sets(
    texts: Sequence[str],
    proxy: str,
    pipeline: TextPipeline | None = None,
    options: TextOptions = LEMMA_TEXT,
) -> list[list[list[str]]]:
    """The item sets the set proxies compare: one list of parts per caption.

    ``bow`` → ``[[words]]``; ``pos`` → ``[[verbs], [nouns]]``; ``syn`` → ``[[verb synsets or
    classes], [noun synsets or classes]]``, words in the form ``options.words``. Returned
    part-major: ``out[part][caption]``. Surface BoW needs no tagging.
    """
    stop = stop_words(options.stop)
    surface = options.words == "surface"
    if proxy == "bow" and surface:
        from fireval.proxies.text import surface_content_words

        return [[surface_content_words(t, stop) for t in texts]]
    if proxy not in ("bow", "pos", "syn"):
        raise FirevalError(f"{proxy!r} is not a set proxy")
    pl = pipeline or TextPipeline()
    an = pl.analyse_all(texts)
    if proxy == "bow":
        return [[a.content_lemmas(stop) for a in an]]
    if proxy == "pos":
        if surface:
            return [[a.words_tagged("VERB") for a in an], [a.words_tagged("NOUN") for a in an]]
        return [[a.lemmas_tagged("VERB") for a in an], [a.lemmas_tagged("NOUN") for a in an]]
    out = []
    for upos, classes in (("VERB", options.verb_classes), ("NOUN", options.noun_classes)):
        if classes is not None:
            out.append([pl.classes_tagged(a, upos, classes, surface) for a in an])
        else:
            # Wray's create_synsets: Lesk's context is the caption split on single spaces
            out.append(
                [
                    pl.synsets_tagged(a, upos, surface, t.split(" ") if surface else None)
                    for t, a in zip(texts, an)
                ]
            )
    return out


def _set_parts(
    q_texts: Sequence[str], d_texts: Sequence[str], proxy: str, pl: TextPipeline, options: TextOptions
) -> list[tuple[sp.csr_matrix, sp.csr_matrix]]:
    return binary_parts(caption_sets(q_texts, proxy, pl, options), caption_sets(d_texts, proxy, pl, options))


def binary_parts(
    q_parts: Sequence[list[list[str]]], d_parts: Sequence[list[list[str]]]
) -> list[tuple[sp.csr_matrix, sp.csr_matrix]]:
    """Per part (BoW; or PoS / SYN classes), the query and doc binary matrices on one shared
    vocabulary (:func:`fireval.proxies.iou.binary_matrix`)."""
    parts = []
    for qp, dp in zip(q_parts, d_parts):
        vocab: dict[str, int] = {}
        qm, vocab = binary_matrix(qp, vocab)
        dm, vocab = binary_matrix(dp, vocab)
        parts.append((qm, dm))
    return parts


def bow_rows(
    q_texts: Sequence[str],
    d_texts: Sequence[str],
    pipeline: TextPipeline | None = None,
    options: TextOptions = LEMMA_TEXT,
) -> tuple[Rows, Rows]:
    """The BoW sets of :func:`caption_sets` for queries and docs, as CSR rows on one vocabulary
    (:data:`fireval.proxies.iou.Rows`; no SciPy).

    Lemma BoW comes from the columnar analyses (:meth:`TextPipeline.analyse_columns`: one
    parse-cache blob per text list, no Python object per caption): the lemmas of the tokens
    not in the stop list; surface BoW from :func:`~fireval.proxies.text.surface_content_words`.

    With a parse cache (``pipeline.cache``), the lemma rows themselves are kept as one more
    blob, keyed by both text lists and the stop list (:func:`bow_rows_key`): a warm build reads
    about a fifth of the bytes of the two analyses blobs and skips the stop-word filter, the
    shared vocabulary and the row sort. A blob that does not decode to valid rows of the right
    sizes is ignored (and replaced).
    """
    from fireval.proxies.iou import binary_rows

    stop = stop_words(options.stop)
    if options.words == "surface":
        from fireval.proxies.text import surface_content_words

        vocab: dict[str, int] = {}
        q, vocab = binary_rows([surface_content_words(t, stop) for t in q_texts], vocab)
        d, vocab = binary_rows([surface_content_words(t, stop) for t in d_texts], vocab)
        return q, d
    pl = pipeline or TextPipeline()
    cache = pl.cache
    key = None
    if cache is not None and hasattr(cache, "get_columns"):
        key = bow_rows_key(q_texts, d_texts, options)
        blob = cache.get_columns(key)
        got = None if blob is None else _rows_from_blob(blob, len(q_texts), len(d_texts))
        if got is not None:
            return got
    q, d = _lemma_bow_rows(q_texts, d_texts, pl, stop)
    if key is not None and cache is not None and max(q[1].size, d[1].size) < 2**31:
        from fireval.proxies.cache import encode_columns

        cache.put_columns(key, encode_columns([], [*q, *d]))
    return q, d


def bow_rows_key(q_texts: Sequence[str], d_texts: Sequence[str], options: TextOptions) -> str:
    """Parse-cache key of :func:`bow_rows`' lemma rows: BLAKE2b of a format tag, the stop list
    (its words) and the :func:`~fireval.proxies.text.texts_digest` of each text list (the
    pipeline version is the cache's)."""
    from fireval.proxies.text import _blake2b, texts_digest

    h = _blake2b(20)
    for part in ("bow-rows-1", options.words, "\x1f".join(sorted(stop_words(options.stop)))):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    h.update(f"{texts_digest(q_texts)}:{texts_digest(d_texts)}".encode())
    return "bow-rows:" + h.hexdigest()


def _rows_from_blob(blob: bytes, n_q: int, n_d: int) -> tuple[Rows, Rows] | None:
    """The ``(q, d)`` rows stored by :func:`bow_rows`, or ``None`` unless the blob holds two
    valid CSR row sets (``indptr`` from 0 to the number of ids, ids >= 0 and strictly
    increasing within each row) of ``n_q`` and ``n_d`` rows."""
    from fireval.proxies.cache import decode_columns

    got = decode_columns(blob, 4)
    if got is None or got[0]:
        return None
    out = []
    for (ptr, idx), n in zip((got[1][:2], got[1][2:]), (n_q, n_d)):
        if ptr.size != n + 1 or ptr[0] != 0 or ptr[-1] != idx.size:
            return None
        if n and (np.diff(ptr) < 0).any():
            return None
        if idx.size:
            starts = np.zeros(idx.size, dtype=bool)
            starts[ptr[:-1][ptr[:-1] < idx.size]] = True  # first id of each non-empty row
            if idx.min() < 0 or not (starts[1:] | (idx[1:] > idx[:-1])).all():
                return None
        out.append((ptr.astype(np.int64), idx.astype(np.int64)))
    return out[0], out[1]


def _lemma_bow_rows(
    q_texts: Sequence[str], d_texts: Sequence[str], pl: TextPipeline, stop: frozenset[str]
) -> tuple[Rows, Rows]:
    """Lemma BoW rows of :func:`bow_rows` from the columnar analyses."""
    from fireval.proxies.iou import csr_rows

    ids: dict[str, int] = {}
    parts = []
    for texts in (q_texts, d_texts):
        an = pl.analyse_columns(texts)
        lengths, lemma = an.content_lemma_ids(stop)
        used = np.zeros(len(an.vocab), dtype=bool)
        used[lemma] = True
        at = np.flatnonzero(used)
        remap = np.zeros(len(an.vocab), dtype=np.int64)
        words = an.vocab
        remap[at] = np.fromiter((ids.setdefault(words[i], len(ids)) for i in at.tolist()), np.int64, at.size)
        parts.append((lengths, remap[lemma]))
    q, d = (csr_rows(lengths, items, len(ids), kind="stable") for lengths, items in parts)
    return q, d


def caption_similarity(
    q_texts: Sequence[str],
    d_texts: Sequence[str],
    proxy: str,
    pipeline: TextPipeline | None = None,
    options: TextOptions = LEMMA_TEXT,
) -> npt.NDArray[np.float32]:
    """Dense query-caption × doc-caption proxy matrix (for modest sizes; see :func:`video_relevance`)."""
    _check(proxy, "max")
    pl = pipeline or TextPipeline()
    if proxy == "meteor":
        from fireval.proxies.meteor import MeteorScorer

        return (
            MeteorScorer(pl.wordnet)
            .matrix(
                [meteor_tokens(t, options) for t in q_texts], [meteor_tokens(t, options) for t in d_texts]
            )
            .astype(np.float32)
        )
    from fireval.proxies.iou import iou_dense

    return iou_dense(_set_parts(q_texts, d_texts, proxy, pl, options))


def _video_matrix(doc_video: npt.NDArray[np.int64], n_videos: int, mean: bool) -> sp.csr_matrix:
    import scipy.sparse as sp

    counts = np.bincount(doc_video, minlength=n_videos).astype(np.float32)
    w = (1.0 / counts[doc_video]) if mean else np.ones(doc_video.size, np.float32)
    return sp.csr_matrix(
        (w.astype(np.float32), (np.arange(doc_video.size), doc_video)), shape=(doc_video.size, n_videos)
    )


def reduce_to_videos(
    block: sp.csr_matrix, doc_video: npt.NDArray[np.int64], n_videos: int, agg: str
) -> npt.NDArray[np.float32]:
    """Aggregate a sparse (queries × doc captions) block to dense (queries × videos).

    ``mean`` divides the sum over a video's captions by its caption count (absent pairs
    are 0); ``max`` takes the largest value (0 if none). Vectorised: a sparse product for
    ``mean``; for ``max`` a ``np.maximum.reduceat`` over entries sorted by (row, video).
    """
    if agg == "mean":
        return np.asarray((block @ _video_matrix(doc_video, n_videos, True)).todense(), dtype=np.float32)
    coo = block.tocoo()
    out = np.zeros((block.shape[0], n_videos), dtype=np.float32)
    if coo.nnz == 0:
        return out
    key = coo.row.astype(np.int64) * n_videos + doc_video[coo.col]
    order = np.argsort(key, kind="stable")
    key, vals = key[order], coo.data[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    best = np.maximum.reduceat(vals, starts)
    k = key[starts]
    out[k // n_videos, k % n_videos] = best
    return out


def _words25(
    sets: list[list[str]], doc_video: npt.NDArray[np.int64], n_videos: int, presence: float
) -> list[list[str]]:
    """Per video, the items present in at least ``presence`` of its captions."""
    m, vocab = binary_matrix(sets)
    counts = np.bincount(doc_video, minlength=n_videos).astype(np.float64)
    per_video = (_video_matrix(doc_video, n_videos, False).T @ m).tocsr()  # videos × items: caption counts
    inv = np.empty(len(vocab), dtype=object)
    for w, i in vocab.items():
        inv[i] = w
    out = []
    for v in range(n_videos):
        lo, hi = per_video.indptr[v], per_video.indptr[v + 1]
        keep = per_video.indices[lo:hi][per_video.data[lo:hi] >= presence * counts[v] - 1e-9]
        out.append(list(inv[keep]))
    return out


def set_relevance(
    q_parts: Sequence[list[list[str]]],
    d_parts: Sequence[list[list[str]]],
    doc_video: npt.NDArray[np.int64],
    n_videos: int,
    agg: str,
    *,
    out: npt.NDArray[np.float32] | None = None,
    chunk: int | None = None,
    n_jobs: int = 1,
) -> npt.NDArray[np.float32]:
    """Query × video relevance of a set proxy: mean over parts of IoU, then max/mean per video.

    Doc captions are reordered so each video's captions are contiguous; blocks of query rows
    (bounded memory, see :func:`fireval.proxies.iou.chunk_rows`) run on ``n_jobs`` threads.
    """
    from concurrent.futures import ThreadPoolExecutor

    from fireval.proxies.iou import chunk_rows, prepare, video_block

    # identical query set tuples are computed once; identical doc set tuples of one video
    # become one column weighted by their multiplicity (exact for max and mean). A set is
    # identified by its row of the binary matrix (sorted distinct item ids on one vocabulary
    # per part), so no Python set is built per caption.
    mats = binary_parts(q_parts, d_parts)
    q_map = _row_classes([qm for qm, _ in mats])
    d_map = _row_classes([dm for _, dm in mats], np.asarray(doc_video, dtype=np.int64))
    n_dk = int(d_map.max()) + 1 if d_map.size else 0
    d_first = np.zeros(n_dk, np.int64)
    d_first[d_map[::-1]] = np.arange(d_map.size)[::-1]
    mult = np.bincount(d_map, minlength=n_dk).astype(np.float32)
    nq = int(q_map.max()) + 1 if q_map.size else 0
    q_first = np.zeros(nq, np.int64)
    q_first[q_map[::-1]] = np.arange(q_map.size)[::-1]
    u_video = doc_video[d_first]
    order = np.argsort(u_video, kind="stable")
    dv = u_video[order]
    parts = [(qm[q_first], dm[d_first[order]]) for qm, dm in mats]
    prepared = prepare(parts)
    starts = np.flatnonzero(np.r_[True, dv[1:] != dv[:-1]]) if dv.size else np.zeros(0, np.int64)
    weights = mult[order]
    counts = np.add.reduceat(weights, starts) if dv.size else np.zeros(0, np.float32)
    vids = dv[starts]
    all_videos = vids.size == n_videos  # vids is sorted and distinct: then it is arange(n_videos)
    doc_group = np.repeat(np.arange(starts.size, dtype=np.int32), np.diff(np.r_[starts, dv.size]))
    res = np.zeros((q_map.size, n_videos), dtype=np.float32) if out is None else out
    if out is not None and not dv.size:
        res[...] = 0
    # the original queries of each distinct query set, grouped by set: a block of distinct
    # sets is written straight to its rows of ``res`` (no distinct-set × videos copy)
    q_order = np.argsort(q_map, kind="stable")
    q_ptr = np.searchsorted(q_map[q_order], np.arange(nq + 1))
    step = chunk or chunk_rows(dv.size)

    def run(s: int) -> None:
        e = min(nq, s + step)
        blk = video_block(
            prepared, s, e, starts, counts, agg, None if agg == "max" else weights, doc_group=doc_group
        )
        if not all_videos:
            full = np.zeros((e - s, n_videos), dtype=np.float32)
            full[:, vids] = blk
            blk = full
        sel = q_order[q_ptr[s] : q_ptr[e]]
        res[sel] = blk[q_map[sel] - s]

    if dv.size:
        if n_jobs > 1:
            with ThreadPoolExecutor(max_workers=n_jobs) as ex:
                list(ex.map(run, range(0, nq, step)))
        else:
            for s in range(0, nq, step):
                run(s)
    return res


def _row_classes(
    mats: Sequence[sp.csr_matrix], prefix: npt.NDArray[np.int64] | None = None
) -> npt.NDArray[np.int64]:
    """Class of each row: rows equal in every matrix (and in ``prefix``) share a class.

    Classes are numbered in order of first appearance. Rows must have sorted indices (as
    :func:`~fireval.proxies.iou.binary_matrix` gives), so equal sets have equal bytes.
    """
    n = mats[0].shape[0]
    cols = [
        [m.indices[a:b].tobytes() for a, b in zip(m.indptr[:-1].tolist(), m.indptr[1:].tolist())]
        for m in mats
    ]
    if prefix is not None:
        cols.insert(0, prefix.tolist())
    keys: dict[Any, int] = {}
    return np.fromiter((keys.setdefault(k, len(keys)) for k in zip(*cols)), np.int64, n)


def doc_captions(
    queries: Collection, video_captions: Collection | None = None
) -> tuple[Collection, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The captions that stand for ``queries``' videos: ``(vc, keep, doc_video)``.

    ``vc`` is ``video_captions`` (or ``queries``); ``keep`` indexes the captions of ``vc``
    whose video is one of ``queries``' videos and ``doc_video[i]`` is that video's index in
    ``queries``. :class:`InputError` when a video of ``queries`` has no caption in ``vc``.
    """
    vc = video_captions or queries
    missing = [v for v in queries.video_ids if v not in vc.video_index]
    if missing:
        raise InputError(
            f"video {missing[0]!r} has no captions in {vc.name!r} ({len(missing)} videos missing)",
            source=vc.source,
        )
    remap = np.full(vc.n_videos, -1, dtype=np.int64)
    remap[[vc.video_index[v] for v in queries.video_ids]] = np.arange(queries.n_videos)
    doc_video_all = remap[vc.caption_video]
    keep = np.flatnonzero(doc_video_all >= 0)
    return vc, keep, doc_video_all[keep]


def video_relevance(
    queries: Collection,
    proxy: str,
    agg: str | None = None,
    video_captions: Collection | None = None,
    *,
    presence: float = 0.25,
    chunk: int | None = None,
    pipeline: TextPipeline | None = None,
    n_jobs: int = 1,
    options: TextOptions | None = None,
    preset: str | None = None,
) -> ProxyRelevance:
    """Proxy relevance of every query caption to every video of ``queries``.

    A video is represented by its captions in ``video_captions`` (e.g. the 20 MSR-VTT
    captions of each 1k-A video), or by its captions in ``queries`` when not given.
    ``preset="wray2021"`` sets the published text processing and aggregation
    (:func:`preset_defaults`); an explicit ``agg`` / ``options`` overrides it. Memory is
    bounded by ``chunk`` query rows at a time (default: a 128 MB dense block).

    BoW with ``max`` (the default proxy of ``fireval proxies build``) takes a numpy-only path:
    :func:`bow_rows` (columnar analyses, one parse-cache blob per caption list) and
    :func:`fireval.proxies.iou.video_max_iou`, equal bit for bit to :func:`set_relevance` on
    :func:`caption_sets` and without importing SciPy (blocks of about 1 M triples bound its
    memory; ``chunk`` does not apply to it).
    """
    p_opts, p_agg = preset_defaults(preset, proxy)
    agg = p_agg if agg is None else agg
    opts = p_opts if options is None else options
    _check(proxy, agg)
    vc, keep, doc_video = doc_captions(queries, video_captions)
    d_texts = [vc.captions[i] for i in keep]
    nv = queries.n_videos
    pl = pipeline or TextPipeline()
    out = np.zeros(queries.shape, dtype=np.float32)
    if proxy == "meteor":
        from fireval.proxies.meteor import MeteorScorer

        scorer = MeteorScorer(pl.wordnet)
        scorer.video_relevance(
            [meteor_tokens(t, opts) for t in queries.captions],
            [meteor_tokens(t, opts) for t in d_texts],
            doc_video,
            nv,
            agg,
            out=out,
            n_jobs=n_jobs,
        )
    elif proxy == "bow" and agg == "max":
        # numpy only (no SciPy import), equal bit for bit to set_relevance (tests/proxies)
        from fireval.proxies.iou import video_max_iou

        q_rows, d_rows = bow_rows(queries.captions, d_texts, pl, opts)
        video_max_iou(q_rows, d_rows, doc_video, nv, out=out)
    else:
        q_parts = caption_sets(queries.captions, proxy, pl, opts)
        d_parts = caption_sets(d_texts, proxy, pl, opts)
        if agg == "words25":
            d_parts = [_words25(p, doc_video, nv, presence) for p in d_parts]
            set_relevance(q_parts, d_parts, np.arange(nv), nv, "max", out=out, chunk=chunk, n_jobs=n_jobs)
        elif agg == "match":
            mean = set_relevance(q_parts, d_parts, doc_video, nv, "mean", chunk=chunk, n_jobs=n_jobs)
            set_relevance(q_parts, d_parts, doc_video, nv, "max", out=out, chunk=chunk, n_jobs=n_jobs)
            out += mean
            out *= np.float32(0.5)
        else:
            set_relevance(q_parts, d_parts, doc_video, nv, agg, out=out, chunk=chunk, n_jobs=n_jobs)
    meta = {
        "proxy": proxy,
        "agg": agg,
        "preset": preset,
        "presence": presence if agg == "words25" else None,
        "collection": queries.name,
        "video_captions": vc.name,
        "n_doc_captions": int(keep.size),
        "lemmas": opts.words == "lemma",
        **opts.describe(),
        "tagger": "nltk-perceptron-ud-ewt-upos",
        "wordnet": "3.0",
        "meteor": {
            "alpha": 0.9,
            "beta": 3.0,
            "gamma": 0.5,
            "hypothesis": "query caption",
            "reference": "video caption",
        }
        if proxy == "meteor"
        else None,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "reference": "Wray, Doughty, Damen. On Semantic Similarity in Video Retrieval. CVPR 2021",
    }
    return ProxyRelevance(out, queries.caption_ids, queries.video_ids, meta)
