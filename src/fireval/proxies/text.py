"""Offline caption text pipeline: tokens, stop words, UPOS tags, WordNet lemmas, synsets.

Everything here runs without a download: the tagger ships with the package
(:mod:`fireval.proxies.tagger`) and WordNet comes from NLTK data or Debian's packages
(:mod:`fireval.proxies.wordnet`), both loaded lazily. Each distinct normalised caption (its
tokens) is parsed once per pipeline, and optionally once ever: an on-disk parse cache
(:mod:`fireval.proxies.cache`) keeps analyses between runs. The distinct captions are tagged
together with vectorised scoring (:func:`fireval.proxies.tagger.tag_batch`); lemmas
come from a light reader of WordNet's index and exception files
(:class:`fireval.proxies.wordnet.Morphy`) unless a WordNet reader is given.

:meth:`TextPipeline.analyse_columns` gives the analyses of a caption list in columns
(:class:`Analyses`: one vocabulary and int32 id arrays, no Python object per caption), cached
as one blob per list (keyed by a digest of the texts and the pipeline version): the input of
the numpy BoW path of :func:`fireval.proxies.relevance.video_relevance`.

Two word forms (:class:`TextOptions`), each a separable stage:

* ``surface`` (Wray et al. 2021 as published, the ``wray2021`` preset): BoW items are the
  caption split on single spaces (``text.split(" ")``: no lowercasing, punctuation stays
  attached, consecutive spaces give an empty-string word) minus spaCy's default English
  stop-word list (:func:`spacy_stop_words`, shipped as data); PoS items are the token texts
  tagged ``VERB`` / ``NOUN`` by our UPOS tagger;
* ``lemma`` (fireval's default before the preset): lowercase ``[a-z0-9]+`` tokens, WordNet
  ``morphy`` lemmas, the Glasgow stop list (:data:`STOP_WORDS`).

Optional verb/noun class lists (:class:`ClassMap`, EPIC-Kitchens-100's ``id,key,instances``
CSV layout) replace WordNet/Lesk for the SYN proxy.

Stop lists, tokens, class lists and :class:`TextOptions` live in :mod:`fireval.proxies.words`
(re-exported here); this module holds the parsing: :class:`Analysis`, :class:`Analyses`, the
parse cache's keys and :class:`TextPipeline`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fireval.proxies.words import _TOKEN as _TOKEN
from fireval.proxies.words import LEMMA_TEXT as LEMMA_TEXT
from fireval.proxies.words import SPACY_STOP_WORDS_PATH as SPACY_STOP_WORDS_PATH
from fireval.proxies.words import STOP_LISTS as STOP_LISTS
from fireval.proxies.words import STOP_WORDS as STOP_WORDS
from fireval.proxies.words import UPOS_TO_WN as UPOS_TO_WN
from fireval.proxies.words import WORD_FORMS as WORD_FORMS
from fireval.proxies.words import WRAY2021_TEXT as WRAY2021_TEXT
from fireval.proxies.words import ClassMap as ClassMap
from fireval.proxies.words import TextOptions as TextOptions
from fireval.proxies.words import read_class_csv as read_class_csv
from fireval.proxies.words import spacy_stop_words as spacy_stop_words
from fireval.proxies.words import split_words as split_words
from fireval.proxies.words import stop_words as stop_words
from fireval.proxies.words import surface_content_words as surface_content_words
from fireval.proxies.words import tokenize as tokenize


@dataclass(frozen=True)
class Analysis:
    """One caption, analysed: tokens, their UPOS tags and WordNet lemmas."""

    tokens: tuple[str, ...]
    tags: tuple[str, ...]
    lemmas: tuple[str, ...]

    def content_lemmas(self, stop: frozenset[str] = STOP_WORDS) -> list[str]:
        """Lemmas of the non-stop-word tokens (the BoW proxy's set)."""
        return [lem for tok, lem in zip(self.tokens, self.lemmas) if tok not in stop]

    def words_tagged(self, upos: str) -> list[str]:
        """Surface text of the tokens tagged ``upos`` (the published PoS proxy's sets)."""
        return [tok for tag, tok in zip(self.tags, self.tokens) if tag == upos]

    def lemmas_tagged(self, upos: str) -> list[str]:
        """Lemmas of the tokens tagged ``upos`` (``"VERB"``/``"NOUN"``; the PoS proxy's sets)."""
        return [lem for tag, lem in zip(self.tags, self.lemmas) if tag == upos]


@dataclass(frozen=True, eq=False)
class Analyses:
    """The analyses of a list of captions in columns (what :meth:`TextPipeline.analyse_columns`
    gives): caption ``i`` has tokens ``vocab[tokens[offsets[i]:offsets[i + 1]]]``, with tags and
    lemmas at the same positions of ``tags`` and ``lemmas`` (int32 ids into ``vocab``, one
    vocabulary for the three). No Python object per caption: a warm build decodes it from one
    cache blob."""

    vocab: tuple[str, ...]
    offsets: Any  # int64, n + 1
    tokens: Any  # int32 ids
    tags: Any
    lemmas: Any

    def __len__(self) -> int:
        return int(self.offsets.size) - 1

    @classmethod
    def from_list(cls, analyses: Sequence[Analysis]) -> Analyses:
        """Columns of per-caption :class:`Analysis` objects."""
        import numpy as np

        ids: dict[str, int] = {}
        add = ids.setdefault

        def col(seqs: Any) -> Any:
            return np.array([add(w, len(ids)) for s in seqs for w in s], dtype=np.int32)

        tokens = col(a.tokens for a in analyses)
        tags = col(a.tags for a in analyses)
        lemmas = col(a.lemmas for a in analyses)
        offsets = np.zeros(len(analyses) + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(a.tokens) for a in analyses), np.int64, len(analyses)), out=offsets[1:])
        return cls(tuple(ids), offsets, tokens, tags, lemmas)

    @classmethod
    def from_blob(cls, blob: bytes, n_texts: int) -> Analyses | None:
        """Decode :meth:`to_blob`'s bytes; ``None`` unless they hold ``n_texts`` valid captions."""
        import numpy as np

        from fireval.proxies.cache import decode_columns

        got = decode_columns(blob, 4)
        if got is None:
            return None
        vocab, (off, tokens, tags, lemmas) = got
        n_tok = tokens.size
        if (
            off.size != n_texts + 1
            or tags.size != n_tok
            or lemmas.size != n_tok
            or off[0] != 0
            or off[-1] != n_tok
            or (off.size > 1 and (np.diff(off) < 0).any())
        ):
            return None
        if n_tok and (
            min(a.min() for a in (tokens, tags, lemmas)) < 0
            or max(a.max() for a in (tokens, tags, lemmas)) >= len(vocab)
        ):
            return None
        return cls(tuple(vocab), off.astype(np.int64), tokens, tags, lemmas)

    def to_blob(self) -> bytes:
        """The compact encoding stored in the parse cache (:func:`fireval.proxies.cache.encode_columns`)."""
        from fireval.proxies.cache import encode_columns

        return encode_columns(self.vocab, (self.offsets, self.tokens, self.tags, self.lemmas))

    def content_lemma_ids(self, stop: frozenset[str] = STOP_WORDS) -> tuple[Any, Any]:
        """:meth:`Analysis.content_lemmas` of every caption as ``(lengths, lemma ids)``: the
        number of kept tokens per caption and their lemmas' ids into ``vocab``, in order."""
        import numpy as np

        is_stop = np.fromiter((w in stop for w in self.vocab), bool, len(self.vocab))
        keep = ~is_stop[self.tokens] if self.tokens.size else np.zeros(0, bool)
        row = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))
        lengths = np.bincount(row[keep], minlength=len(self)).astype(np.int64)
        return lengths, self.lemmas[keep].astype(np.int64)


def _blake2b(digest_size: int) -> Any:
    """A BLAKE2b hash object, from CPython's built-in ``_blake2`` when present (``hashlib``
    loads OpenSSL first, 5-15 ms of a CLI start)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b
    return blake2b(digest_size=digest_size)


def texts_digest(texts: Sequence[str]) -> str:
    """A key of an ordered list of texts: BLAKE2b of the texts and of their lengths."""
    import numpy as np

    h = _blake2b(20)
    h.update("\0".join(texts).encode("utf-8", "surrogatepass"))
    h.update(np.fromiter(map(len, texts), np.int64, len(texts)).tobytes())
    h.update(str(len(texts)).encode())
    return h.hexdigest()


def pipeline_version() -> str:
    """Identity of the default analysis pipeline, the version key of the parse cache.

    A BLAKE2b hash of the analysis code version (:data:`fireval.proxies.cache.PIPELINE_CODE_VERSION`),
    the shipped tagger weights (their bytes), the NLTK version (its perceptron features and
    ``morphy``) and the WordNet release (3.0, from NLTK data or Debian). Any change gives a
    new key, so stale analyses are never used.
    """
    from fireval.proxies.cache import PIPELINE_CODE_VERSION
    from fireval.proxies.tagger import WEIGHTS_PATH

    nltk_v = _nltk_version()
    h = _blake2b(16)
    for part in (PIPELINE_CODE_VERSION, nltk_v, "wordnet-3.0", _TOKEN.pattern):
        h.update(part.encode() + b"\0")
    h.update(WEIGHTS_PATH.read_bytes() if WEIGHTS_PATH.is_file() else b"no-weights")
    return h.hexdigest()


def _nltk_version() -> str:
    """NLTK's version, read from the ``VERSION`` file NLTK ships in its package (found without
    importing NLTK); else from the distribution metadata (``importlib.metadata`` pulls in the
    ``email`` parser, tens of ms at start-up); ``"unknown"`` when NLTK is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nltk")
    except (ImportError, ValueError):
        spec = None
    for loc in (spec.submodule_search_locations or []) if spec is not None else []:
        try:
            v = (Path(loc) / "VERSION").read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if v:
            return v
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nltk")
    except PackageNotFoundError:
        return "unknown"


def default_parse_cache(enabled: bool = True) -> Any | None:
    """The user's parse cache for the default pipeline (``None`` when ``enabled`` is false)."""
    if not enabled:
        return None
    from fireval.proxies.cache import ParseCache

    return ParseCache(version=pipeline_version())


class TextPipeline:
    """Tokenise, tag, lemmatise and disambiguate captions, caching every result.

    ``wordnet`` and ``tagger`` default to the offline ones of this package (loaded lazily, on
    first use). ``cache``: an on-disk :class:`~fireval.proxies.cache.ParseCache` whose version
    describes this pipeline (:func:`default_parse_cache` for the default components); none by
    default.
    """

    def __init__(
        self, wordnet: Any | None = None, tagger: Any | None = None, cache: Any | None = None
    ) -> None:
        self._wn = wordnet
        self._tagger = tagger
        self._cache = cache  # a fireval.proxies.cache.ParseCache, or None
        self._analyses: dict[str, Analysis] = {}  # by normalised text (tokens joined by " ")
        self._morphy_fn: Any | None = None
        self._base_forms_fn: Any | None = None
        self._lemma: dict[tuple[str, str | None], str] = {}
        self._defs: dict[tuple[str, str], list[tuple[str, frozenset[str]]]] = {}

    @property
    def cache(self) -> Any | None:
        """The on-disk parse cache given at construction, or ``None``."""
        return self._cache

    @property
    def wordnet(self) -> Any:
        """The WordNet reader (loaded offline on first use)."""
        if self._wn is None:
            from fireval.proxies.wordnet import load_wordnet

            self._wn = load_wordnet()
        return self._wn

    @property
    def tagger(self) -> Any:
        """The UPOS tagger (the shipped one unless given; loaded on first use)."""
        if self._tagger is None:
            from fireval.proxies.tagger import load_tagger

            self._tagger = load_tagger()
        return self._tagger

    def _light(self) -> Any:
        """The light index reader (:class:`fireval.proxies.wordnet.Morphy`: WordNet's answers
        without loading all of it), or ``None`` when a WordNet reader was given (or none is found)."""
        if self._wn is not None:
            return None
        from fireval.proxies.wordnet import load_morphy

        return load_morphy()

    def _morphy(self) -> Any:
        """``morphy(word, pos)``: the light reader's, else the given WordNet's."""
        if self._morphy_fn is None:
            light = self._light()
            self._morphy_fn = light.morphy if light is not None else self.wordnet.morphy
        return self._morphy_fn

    def lemma(self, word: str, wn_pos: str | None) -> str:
        """WordNet ``morphy`` base form of ``word`` for ``wn_pos`` (the word itself if unknown)."""
        key = (word, wn_pos)
        out = self._lemma.get(key)
        if out is None:
            base = self._morphy()(word, wn_pos) if wn_pos else None
            out = base if base else word
            self._lemma[key] = out
        return out

    def wray_lemma(self, word: str, wn_pos: str) -> str:
        """Wray et al.'s lemma for SYN: NLTK's ``WordNetLemmatizer().lemmatize(word, pos)``.

        That is the *shortest* of all WordNet base forms of ``word`` for ``wn_pos`` (NLTK's
        ``_morphy``: the form itself and its exception bases or detached-suffix forms that are
        lemmas; the first on equal length), else the word. It differs from :meth:`lemma`
        (``morphy``: the *first* base form) when the form is a lemma itself: "talks" → "talk"
        (morphy: "talks"), "glasses" → "glass", "riding" (verb) → "rid" (morphy: "ride").
        """
        key = (word, "wray:" + wn_pos)
        out = self._lemma.get(key)
        if out is None:
            forms = self._base_forms()(word, wn_pos)
            out = min(forms, key=len) if forms else word
            self._lemma[key] = out
        return out

    def _base_forms(self) -> Any:
        """``base_forms(word, pos)``: every WordNet base form (NLTK's ``_morphy``), from the light
        index reader unless a WordNet reader was given."""
        if self._base_forms_fn is None:
            light = self._light()
            self._base_forms_fn = light.base_forms if light is not None else self.wordnet._morphy
        return self._base_forms_fn

    def _parse_all(self, sentences: Sequence[Sequence[str]]) -> list[Analysis]:
        """Tag (all sentences at once, :func:`fireval.proxies.tagger.tag_batch`) and lemmatise."""
        from fireval.proxies.tagger import tag_batch

        out = []
        for toks, tags in zip(sentences, tag_batch(self.tagger, sentences)):
            lemmas = [self.lemma(w, UPOS_TO_WN.get(t)) for w, t in zip(toks, tags)]
            out.append(Analysis(tuple(toks), tuple(tags), tuple(lemmas)))
        return out

    def analyse(self, text: str) -> Analysis:
        """Tokens, UPOS tags and lemmas of one caption (cached by normalised text)."""
        return self.analyse_all([text])[0]

    def analyse_all(self, texts: Sequence[str]) -> list[Analysis]:
        """:meth:`analyse` of each text; each distinct normalised text is parsed once.

        The analysis depends on the ``[a-z0-9]+`` tokens only, so texts are keyed by their
        tokens joined with one space. Keys not yet seen by this pipeline are looked up in the
        on-disk :class:`~fireval.proxies.cache.ParseCache` (when one was given), and only the
        rest are tagged and lemmatised (then stored). The tagger and WordNet are loaded
        only if something has to be parsed.
        """
        keys = [" ".join(tokenize(t)) for t in texts]
        known = self._analyses
        todo = list(dict.fromkeys(k for k in keys if k not in known))
        if todo and self._cache is not None:
            for k, (tags, lemmas) in self._cache.get_many(todo).items():
                known[k] = Analysis(tuple(k.split(" ")) if k else (), tags, lemmas)
            todo = [k for k in todo if k not in known]
        if todo:
            fresh = list(zip(todo, self._parse_all([k.split(" ") if k else [] for k in todo])))
            known.update(fresh)
            if self._cache is not None:
                self._cache.put_many((k, (a.tags, a.lemmas)) for k, a in fresh)
        return [known[k] for k in keys]

    def analyse_columns(self, texts: Sequence[str]) -> Analyses:
        """:meth:`analyse_all` of ``texts`` in columns (:class:`Analyses`).

        With a parse cache, the whole list is looked up first as one blob keyed by
        :func:`texts_digest` (a warm run over the same collection: one row, decoded with
        ``numpy.frombuffer``); otherwise the texts go through :meth:`analyse_all` (per-text
        cache, then the tagger) and the columns are stored for next time.
        """
        cache = self._cache
        key = None
        if cache is not None and hasattr(cache, "get_columns"):
            key = texts_digest(texts)
            blob = cache.get_columns(key)
            if blob is not None:
                got = Analyses.from_blob(blob, len(texts))
                if got is not None:
                    return got
        out = Analyses.from_list(self.analyse_all(texts))
        if key is not None and cache is not None:
            try:
                blob = out.to_blob()
            except ValueError:  # a vocabulary entry holds the separator: not cached
                return out
            cache.put_columns(key, blob)
        return out

    def _definitions(self, lemma: str, wn_pos: str) -> list[tuple[str, frozenset[str]]]:
        key = (lemma, wn_pos)
        got = self._defs.get(key)
        if got is None:
            got = [
                (ss.name(), frozenset(ss.definition().split()))
                for ss in self.wordnet.synsets(lemma)
                if str(ss.pos()) == wn_pos
            ]
            self._defs[key] = got
        return got

    def lesk(self, context: Sequence[str], lemma: str, wn_pos: str) -> str | None:
        """Simplified Lesk, exactly as :func:`nltk.wsd.lesk` (NLTK 3.9+):

        among the synsets of ``lemma`` with part of speech ``wn_pos``, the one whose
        definition (split on whitespace) shares the most words with the context set; the
        first in WordNet order on ties. ``None`` when WordNet has no such synset. Same
        algorithm as NLTK's, with synset definitions cached per (lemma, pos).
        """
        cands = self._definitions(lemma, wn_pos)
        if not cands:
            return None
        ctx = set(context)
        best, best_n = cands[0][0], -1
        for name, words in cands:
            n = len(ctx.intersection(words))
            if n > best_n:
                best, best_n = name, n
        return best

    def synsets_tagged(
        self, analysis: Analysis, upos: str, surface: bool = False, context: Sequence[str] | None = None
    ) -> list[str]:
        """Lesk synset names of the tokens tagged ``upos`` (Wray's SYN proxy sets).

        As in Wray et al.'s ``create_synsets.py``: the context is the caption's words, the
        target is the word's lemma, the part of speech is fixed by the tag; a word without
        a WordNet synset stands for itself (its surface text when ``surface``, else its lemma).
        With ``surface`` (Wray as published) the target is NLTK ``WordNetLemmatizer``'s lemma
        (:meth:`wray_lemma`, the shortest base form), else the pipeline's ``morphy`` lemma.
        ``context``: Lesk's context words (Wray: ``caption.split(" ")``); default the tokens.
        """
        wn_pos = UPOS_TO_WN[upos]
        ctx = analysis.tokens if context is None else context
        out = []
        for tag, tok, lem in zip(analysis.tags, analysis.tokens, analysis.lemmas):
            if tag == upos:
                target = self.wray_lemma(tok, wn_pos) if surface else lem
                out.append(self.lesk(ctx, target, wn_pos) or (tok if surface else lem))
        return out

    def classes_tagged(
        self, analysis: Analysis, upos: str, classes: ClassMap, surface: bool = False
    ) -> list[str]:
        """Class items (:meth:`ClassMap.item`) of the tokens tagged ``upos`` (SYN with class lists).

        Lemma pipeline (``surface`` False): each word is looked up as written, then as its
        lemma; an unlisted word stands for its lemma. Wray as published (``surface``), as in
        their class script: only the word's ``WordNetLemmatizer`` lemma (:meth:`wray_lemma`) is
        looked up, and an unlisted lemma gets a class of its own, i.e. stands for itself (so
        "chopping" and "chops" share one item).
        """
        wn_pos = UPOS_TO_WN[upos]
        if surface:
            return [
                classes.item(self.wray_lemma(tok, wn_pos))
                for tag, tok in zip(analysis.tags, analysis.tokens)
                if tag == upos
            ]
        return [
            classes.item(tok, lem) if (tok in classes.index or lem in classes.index) else lem
            for tag, tok, lem in zip(analysis.tags, analysis.tokens, analysis.lemmas)
            if tag == upos
        ]
