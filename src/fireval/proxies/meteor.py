"""METEOR exactly as NLTK's ``single_meteor_score``, vectorised over many caption pairs.

NLTK (``nltk.translate.meteor_score``, 3.9+) scores one (reference, hypothesis) pair by:

1. aligning words in three greedy stages on the still-unmatched words —
   *exact* (lowercased word), *stem* (Porter stem) and *WordNet synonym* (the reference word
   is a lemma name, without ``_``, of a synset of the hypothesis word, or the word itself);
2. ``P = m / |hyp|``, ``R = m / |ref|``, ``Fmean = P R / (α P + (1 − α) R)``;
3. ``chunks`` = the fewest runs of matches adjacent in both sentences, penalty
   ``γ (chunks / m)^β``; score ``(1 − penalty) Fmean`` (0 when nothing matches).
   Defaults α = 0.9, β = 3, γ = 0.5 (Lavie & Agarwal 2007).

The greedy stages are order dependent; this module reproduces NLTK's order exactly:

* exact and stem stages: hypothesis positions are visited from last to first and each takes
  the *last* unused reference position holding the same word (stem). Per word this pairs the
  k-th occurrence from the end in the hypothesis with the k-th from the end in the
  reference, which is computed for all pairs at once by comparing "rank from the end" arrays;
* synonym stage: hypothesis positions from last to first each take the *largest* free
  reference position whose word is a synonym. As in NLTK, this stage sees the *stems* left
  over by the stem stage (``making`` → ``make``, which has the lemma ``hold``). This stays a loop over hypothesis positions
  (≤ sentence length), vectorised over all pairs of a batch.

Words are encoded once (ids, stem ids, synonym relation as a boolean matrix over the
stems), so stemming and WordNet look-ups happen once per unique word, not per pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.core.errors import FirevalError

_KEY_MULT = 1 << 12  # rank-from-end < sentence length <= 4096


@dataclass
class _Encoded:
    words: npt.NDArray[np.int32]  # n × L, padded
    stems: npt.NDArray[np.int32]
    rfe: npt.NDArray[np.int16]  # rank of each word among equal words to its right
    lens: npt.NDArray[np.int32]
    keys: npt.NDArray[np.integer]  # word * _KEY_MULT + rfe (pad where empty): the exact-stage key


class MeteorScorer:
    """Batch METEOR over tokenised sentences, equal to NLTK's ``single_meteor_score``.

    ``wordnet`` is an NLTK WordNet reader (default: :func:`fireval.proxies.wordnet.load_wordnet`).
    """

    def __init__(
        self,
        wordnet: Any | None = None,
        alpha: float = 0.9,
        beta: float = 3.0,
        gamma: float = 0.5,
        budget: int = 1_000_000,
    ) -> None:
        from nltk.stem.porter import PorterStemmer

        if wordnet is None:
            from fireval.proxies.wordnet import load_wordnet

            wordnet = load_wordnet()
        self.wn = wordnet
        self.alpha, self.beta, self.gamma = alpha, beta, gamma
        self.budget = budget
        self._stemmer = PorterStemmer()
        self.vocab: dict[str, int] = {}
        self._stem_of: list[int] = []
        self._stems: dict[str, int] = {}
        self._syn: npt.NDArray[np.bool_] | None = None
        self._syn_done = 0

    # ------------------------------------------------------------------ encoding
    def _word_id(self, w: str) -> int:
        i = self.vocab.get(w)
        if i is None:
            i = len(self.vocab)
            self.vocab[w] = i
            s = self._stemmer.stem(w)
            self._stem_of.append(self._stems.setdefault(s, len(self._stems)))
        return i

    def encode(self, sentences: Sequence[Sequence[str]], pad: int) -> _Encoded:
        """Pad to a matrix of word ids (``pad`` marks empty slots; use different pads per side)."""
        toks = [[w.lower() for w in s] for s in sentences]
        lens = np.fromiter((len(t) for t in toks), dtype=np.int32, count=len(toks))
        width = max(1, int(lens.max(initial=0)))
        if width > _KEY_MULT:
            i = int(lens.argmax())
            raise FirevalError(
                f"caption {i} has {width} tokens; METEOR supports captions of up to {_KEY_MULT} tokens"
            )
        words = np.full((len(toks), width), pad, dtype=np.int32)
        for i, t in enumerate(toks):
            if t:
                words[i, : len(t)] = [self._word_id(w) for w in t]
        stem_of = np.asarray(self._stem_of, dtype=np.int32)
        stems = np.where(words >= 0, stem_of[np.maximum(words, 0)] if stem_of.size else pad, pad).astype(
            np.int32
        )
        # rank from the end among equal words (exact stage), per sentence
        later = np.triu(np.ones((width, width), dtype=bool), 1)
        rfe = ((words[:, :, None] == words[:, None, :]) & later[None]).sum(2).astype(np.int16)
        # (word, rfe) -> one integer, with the same multiplier for every encoded side
        key_t: type[np.integer] = np.int32 if (len(self.vocab) + 1) * _KEY_MULT < (1 << 31) else np.int64
        keys: npt.NDArray[np.integer] = np.where(
            words >= 0, words.astype(np.int64) * _KEY_MULT + rfe, pad
        ).astype(key_t)
        if len(self._stems) < (1 << 15):
            stems = stems.astype(np.int16)
        return _Encoded(words, stems, rfe, lens, keys)

    def _synonyms(self) -> npt.NDArray[np.bool_]:
        """``syn[a, b]``: stem b is a lemma name (no ``_``) of a synset of stem a, or b == a.

        NLTK's synonym stage runs on the *stemmed* leftovers of the stem stage (its
        ``_enum_stem_match`` returns stemmed word lists), so the relation is over stems.
        """
        n = len(self._stems)
        if self._syn is not None and self._syn_done == n:
            return self._syn
        stems = list(self._stems)
        syn = np.zeros((n, n), dtype=bool)
        for a, word in enumerate(stems):
            names = {
                lem.name() for ss in self.wn.synsets(word) for lem in ss.lemmas() if "_" not in lem.name()
            }
            names.add(word)
            ids = [self._stems[x] for x in names if x in self._stems]
            syn[a, ids] = True
        self._syn, self._syn_done = syn, n
        return syn

    # ------------------------------------------------------------------ scoring
    def _score_pairs(
        self,
        H: _Encoded,
        hi: npt.NDArray[np.int64],
        R: _Encoded,
        ri: npt.NDArray[np.int64],
        syn: npt.NDArray[np.bool_],
    ) -> npt.NDArray[np.float64]:
        hl, rl = H.lens[hi], R.lens[ri]
        lh, lr = max(1, int(hl.max(initial=0))), max(1, int(rl.max(initial=0)))
        hs, rs = H.stems[hi, :lh], R.stems[ri, :lr]
        vh = np.arange(lh)[None, :] < hl[:, None]
        vr = np.arange(lr)[None, :] < rl[:, None]
        n_pairs = hi.size
        prow = np.arange(n_pairs)[:, None]
        # stage 1: exact. (word, rank from the end) is unique within a sentence, so the
        # k-th-from-the-end pairing is an equality test on one combined key.
        e = H.keys[hi, :lh][:, :, None] == R.keys[ri, :lr][:, None, :]
        j = e.argmax(2)
        got_h = np.take_along_axis(e, j[:, :, None], 2)[:, :, 0]
        mh = np.where(got_h, j, -1)
        used = np.zeros((n_pairs, lr + 1), dtype=bool)
        used[prow, np.where(got_h, j, lr)] = True
        used_r = used[:, :lr]
        # stage 2: stems on the unmatched words, same pairing rule; only pairs where some
        # unmatched stems coincide need the rank computation
        rem_h, rem_r = vh & ~got_h, vr & ~used_r
        sh = np.where(rem_h, hs, -1)
        sr = np.where(rem_r, rs, -2)
        cand = np.flatnonzero((sh[:, :, None] == sr[:, None, :]).reshape(n_pairs, -1).any(1))
        if cand.size:
            later_h = np.triu(np.ones((lh, lh), dtype=bool), 1)
            later_r = np.triu(np.ones((lr, lr), dtype=bool), 1)
            ch, cr = sh[cand], sr[cand]
            rk_h = ((ch[:, :, None] == ch[:, None, :]) & later_h[None]).sum(2)
            rk_r = ((cr[:, :, None] == cr[:, None, :]) & later_r[None]).sum(2)
            e = (ch[:, :, None] == cr[:, None, :]) & (rk_h[:, :, None] == rk_r[:, None, :])
            got2 = e.any(2)
            mh[cand] = np.where(got2, e.argmax(2), mh[cand])
            used_r[cand] |= e.any(1)
            rem_h[cand] &= ~got2
            rem_r = vr & ~used_r
        # stage 3: WordNet synonyms, greedy from the last hypothesis word
        cand = np.flatnonzero(rem_h.any(1) & rem_r.any(1))
        if cand.size:
            s = syn[
                np.maximum(hs[cand], 0).astype(np.intp)[:, :, None],
                np.maximum(rs[cand], 0).astype(np.intp)[:, None, :],
            ]
            s &= rem_h[cand][:, :, None] & rem_r[cand][:, None, :]
            sub = np.flatnonzero(s.any((1, 2)))
            if sub.size:
                s = s[sub]
                rows = cand[sub]
                free = np.ones((sub.size, lr), dtype=bool)
                rev = np.arange(lr - 1, -1, -1)
                for i in range(lh - 1, -1, -1):
                    c = s[:, i, :] & free
                    has = c.any(1)
                    if not has.any():
                        continue
                    j = rev[c[:, ::-1].argmax(1)]
                    k = np.flatnonzero(has)
                    mh[rows[k], i] = j[k]
                    free[k, j[k]] = False
        # chunks and score
        matched = mh >= 0
        m = matched.sum(1).astype(np.float64)
        cont = np.zeros_like(matched)
        cont[:, 1:] = matched[:, :-1] & matched[:, 1:] & (mh[:, 1:] == mh[:, :-1] + 1)
        chunks = (matched & ~cont).sum(1).astype(np.float64)
        out = np.zeros(hi.size, dtype=np.float64)
        ok = (m > 0) & (hl > 0) & (rl > 0)
        if ok.any():
            mm = m[ok]
            p = mm / hl[ok]
            r = mm / rl[ok]
            fmean = (p * r) / (self.alpha * p + (1 - self.alpha) * r)
            frag = chunks[ok] / mm
            out[ok] = (1 - self.gamma * frag**self.beta) * fmean
        return out

    def pairs(
        self, hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]]
    ) -> npt.NDArray[np.float64]:
        """``single_meteor_score(references[k], hypotheses[k])`` for every k."""
        if len(hypotheses) != len(references):
            raise ValueError("hypotheses and references differ in number")
        H, R = self.encode(hypotheses, -1), self.encode(references, -2)
        syn = self._synonyms()
        out = np.zeros(len(hypotheses))
        idx = np.arange(len(hypotheses))
        step = max(1, self.budget // max(1, H.words.shape[1] * R.words.shape[1]))
        for s in range(0, idx.size, step):
            k = idx[s : s + step]
            out[k] = self._score_pairs(H, k, R, k, syn)
        return out

    def _blocks(
        self,
        H: _Encoded,
        R: _Encoded,
        q_rows: npt.NDArray[np.int64],
        syn: npt.NDArray[np.bool_],
        r_order: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.float64]:
        """Scores of hypotheses ``q_rows`` against every reference (references visited by length)."""
        out = np.zeros((q_rows.size, R.lens.size))
        lh = max(1, int(H.lens[q_rows].max(initial=0)))
        start = 0
        n = r_order.size
        while start < n:
            # grow the slice of (length-sorted) references while the tensor budget allows:
            # the longest reference of the slice sets the padded width
            width = max(1, self.budget // (q_rows.size * lh * max(1, int(R.lens[r_order[start]]))))
            stop = min(n, start + width)
            lr = max(1, int(R.lens[r_order[stop - 1]]))
            stop = min(stop, start + max(1, self.budget // (q_rows.size * lh * lr)))
            refs = r_order[start:stop]
            hi = np.repeat(q_rows, refs.size)
            ri = np.tile(refs, q_rows.size)
            out[:, refs] = self._score_pairs(H, hi, R, ri, syn).reshape(q_rows.size, refs.size)
            start = stop
        return out

    def matrix(
        self,
        hypotheses: Sequence[Sequence[str]],
        references: Sequence[Sequence[str]],
        block: int = 8,
        n_jobs: int = 1,
    ) -> npt.NDArray[np.float64]:
        """``M[i, j] = single_meteor_score(references[j], hypotheses[i])`` (dense; modest sizes)."""
        out = np.zeros((len(hypotheses), len(references)))

        def put(rows: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> None:
            out[rows] = scores

        self._each_block(hypotheses, references, put, block, n_jobs)
        return out

    def _each_block(
        self,
        hypotheses: Sequence[Sequence[str]],
        references: Sequence[Sequence[str]],
        put: Callable[[npt.NDArray[np.int64], npt.NDArray[np.float64]], None],
        block: int,
        n_jobs: int,
    ) -> None:
        """Call ``put(rows, scores)`` for blocks of ``block`` hypotheses (of similar length)
        with their scores against every reference, on ``n_jobs`` threads."""
        H, R = self.encode(hypotheses, -1), self.encode(references, -2)
        syn = self._synonyms()
        order = np.argsort(R.lens, kind="stable")
        qs = np.argsort(H.lens, kind="stable")
        blocks = [qs[s : s + block] for s in range(0, qs.size, block)]
        _map(lambda rows: put(rows, self._blocks(H, R, rows, syn, order)), blocks, n_jobs)

    def video_relevance(
        self,
        hypotheses: Sequence[Sequence[str]],
        references: Sequence[Sequence[str]],
        ref_video: npt.NDArray[np.int64],
        n_videos: int,
        agg: str,
        out: npt.NDArray[np.float32] | None = None,
        block: int = 8,
        n_jobs: int = 1,
    ) -> npt.NDArray[np.float32]:
        """Query × video METEOR: ``max``, ``mean`` or ``match`` (``(max + mean) / 2``, the
        matching kernel with one query caption) over each video's reference captions."""
        if agg not in ("max", "mean", "match"):
            raise FirevalError(f"unknown METEOR aggregation {agg!r}; expected max, mean or match")
        by_video = np.argsort(ref_video, kind="stable")
        vids = ref_video[by_video]
        starts = np.flatnonzero(np.r_[True, vids[1:] != vids[:-1]])
        counts = np.diff(np.r_[starts, vids.size])
        res = np.zeros((len(hypotheses), n_videos), dtype=np.float32) if out is None else out

        def put(rows: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> None:
            sc = scores[:, by_video]
            if agg == "max":
                red = np.maximum.reduceat(sc, starts, axis=1)
            elif agg == "mean":
                red = np.add.reduceat(sc, starts, axis=1) / counts
            else:  # matching kernel (Wallraven et al. 2003; Lyu 2005) with X = {query}: (max + mean) / 2
                red = 0.5 * (
                    np.maximum.reduceat(sc, starts, axis=1) + np.add.reduceat(sc, starts, axis=1) / counts
                )
            full = np.zeros((rows.size, n_videos), dtype=np.float32)
            full[:, vids[starts]] = red
            res[rows] = full

        self._each_block(hypotheses, references, put, block, n_jobs)
        return res


def _map(fn: Any, items: list[Any], n_jobs: int) -> None:
    if n_jobs <= 1 or len(items) < 2:
        for it in items:
            fn(it)
        return
    with ThreadPoolExecutor(max_workers=n_jobs) as ex:
        for _ in ex.map(fn, items):
            pass
