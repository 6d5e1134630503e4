"""Offline caption text pipeline: tokens, stop words, UPOS tags, WordNet lemmas, synsets.

Everything here runs without a download: the tagger ships with the package
(:mod:`fireval.proxies.tagger`) and WordNet comes from NLTK data or Debian's packages
(:mod:`fireval.proxies.wordnet`). Results are cached per unique caption text / word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: English stop words: the 318-word list of the Glasgow Information Retrieval Group
#: (ir.dcs.gla.ac.uk/resources/linguistic_utils/stop_words), as shipped by scikit-learn
#: (``sklearn.feature_extraction.text.ENGLISH_STOP_WORDS``; copied, and checked equal in the
#: tests, so that the pipeline does not import scikit-learn, ~2 s). Wray et al. used spaCy's list
#: (not installable offline here); both remove function words, they differ on a few
#: content-like entries (this list has e.g. "show", "fire", "move").
STOP_WORDS: frozenset[str] = frozenset(
    {
        "a",
        "about",
        "above",
        "across",
        "after",
        "afterwards",
        "again",
        "against",
        "all",
        "almost",
        "alone",
        "along",
        "already",
        "also",
        "although",
        "always",
        "am",
        "among",
        "amongst",
        "amoungst",
        "amount",
        "an",
        "and",
        "another",
        "any",
        "anyhow",
        "anyone",
        "anything",
        "anyway",
        "anywhere",
        "are",
        "around",
        "as",
        "at",
        "back",
        "be",
        "became",
        "because",
        "become",
        "becomes",
        "becoming",
        "been",
        "before",
        "beforehand",
        "behind",
        "being",
        "below",
        "beside",
        "besides",
        "between",
        "beyond",
        "bill",
        "both",
        "bottom",
        "but",
        "by",
        "call",
        "can",
        "cannot",
        "cant",
        "co",
        "con",
        "could",
        "couldnt",
        "cry",
        "de",
        "describe",
        "detail",
        "do",
        "done",
        "down",
        "due",
        "during",
        "each",
        "eg",
        "eight",
        "either",
        "eleven",
        "else",
        "elsewhere",
        "empty",
        "enough",
        "etc",
        "even",
        "ever",
        "every",
        "everyone",
        "everything",
        "everywhere",
        "except",
        "few",
        "fifteen",
        "fifty",
        "fill",
        "find",
        "fire",
        "first",
        "five",
        "for",
        "former",
        "formerly",
        "forty",
        "found",
        "four",
        "from",
        "front",
        "full",
        "further",
        "get",
        "give",
        "go",
        "had",
        "has",
        "hasnt",
        "have",
        "he",
        "hence",
        "her",
        "here",
        "hereafter",
        "hereby",
        "herein",
        "hereupon",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "hundred",
        "i",
        "ie",
        "if",
        "in",
        "inc",
        "indeed",
        "interest",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "keep",
        "last",
        "latter",
        "latterly",
        "least",
        "less",
        "ltd",
        "made",
        "many",
        "may",
        "me",
        "meanwhile",
        "might",
        "mill",
        "mine",
        "more",
        "moreover",
        "most",
        "mostly",
        "move",
        "much",
        "must",
        "my",
        "myself",
        "name",
        "namely",
        "neither",
        "never",
        "nevertheless",
        "next",
        "nine",
        "no",
        "nobody",
        "none",
        "noone",
        "nor",
        "not",
        "nothing",
        "now",
        "nowhere",
        "of",
        "off",
        "often",
        "on",
        "once",
        "one",
        "only",
        "onto",
        "or",
        "other",
        "others",
        "otherwise",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "part",
        "per",
        "perhaps",
        "please",
        "put",
        "rather",
        "re",
        "same",
        "see",
        "seem",
        "seemed",
        "seeming",
        "seems",
        "serious",
        "several",
        "she",
        "should",
        "show",
        "side",
        "since",
        "sincere",
        "six",
        "sixty",
        "so",
        "some",
        "somehow",
        "someone",
        "something",
        "sometime",
        "sometimes",
        "somewhere",
        "still",
        "such",
        "system",
        "take",
        "ten",
        "than",
        "that",
        "the",
        "their",
        "them",
        "themselves",
        "then",
        "thence",
        "there",
        "thereafter",
        "thereby",
        "therefore",
        "therein",
        "thereupon",
        "these",
        "they",
        "thick",
        "thin",
        "third",
        "this",
        "those",
        "though",
        "three",
        "through",
        "throughout",
        "thru",
        "thus",
        "to",
        "together",
        "too",
        "top",
        "toward",
        "towards",
        "twelve",
        "twenty",
        "two",
        "un",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "very",
        "via",
        "was",
        "we",
        "well",
        "were",
        "what",
        "whatever",
        "when",
        "whence",
        "whenever",
        "where",
        "whereafter",
        "whereas",
        "whereby",
        "wherein",
        "whereupon",
        "wherever",
        "whether",
        "which",
        "while",
        "whither",
        "who",
        "whoever",
        "whole",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "within",
        "without",
        "would",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    }
)

_TOKEN = re.compile(r"[a-z0-9]+")

#: UPOS → WordNet part of speech (for morphy and Lesk).
UPOS_TO_WN = {"NOUN": "n", "PROPN": "n", "VERB": "v", "AUX": "v", "ADJ": "a", "ADV": "r"}


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens: maximal runs of ``[a-z0-9]`` after lowercasing.

    Punctuation splits words (``"it's"`` → ``it``, ``s``), the same convention as
    :func:`fireval.core.normalise` and CLIP4Clip's MSVD captions.
    """
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Analysis:
    """One caption, analysed: tokens, their UPOS tags and WordNet lemmas."""

    tokens: tuple[str, ...]
    tags: tuple[str, ...]
    lemmas: tuple[str, ...]

    def content_lemmas(self) -> list[str]:
        """Lemmas of the non-stop-word tokens (the BoW proxy's set)."""
        return [lem for tok, lem in zip(self.tokens, self.lemmas) if tok not in STOP_WORDS]

    def lemmas_tagged(self, upos: str) -> list[str]:
        """Lemmas of the tokens tagged ``upos`` (``"VERB"``/``"NOUN"``; the PoS proxy's sets)."""
        return [lem for tag, lem in zip(self.tags, self.lemmas) if tag == upos]


class TextPipeline:
    """Tokenise, tag, lemmatise and disambiguate captions, caching every result.

    ``wordnet`` and ``tagger`` default to the offline ones of this package.
    """

    def __init__(self, wordnet: Any | None = None, tagger: Any | None = None) -> None:
        self._wn = wordnet
        self._tagger = tagger
        self._analyses: dict[str, Analysis] = {}
        self._lemma: dict[tuple[str, str | None], str] = {}
        self._defs: dict[tuple[str, str], list[tuple[str, frozenset[str]]]] = {}

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

    def lemma(self, word: str, wn_pos: str | None) -> str:
        """WordNet ``morphy`` base form of ``word`` for ``wn_pos`` (the word itself if unknown)."""
        key = (word, wn_pos)
        out = self._lemma.get(key)
        if out is None:
            base = self.wordnet.morphy(word, wn_pos) if wn_pos else None
            out = base if base else word
            self._lemma[key] = out
        return out

    def analyse(self, text: str) -> Analysis:
        """Tokens, UPOS tags and lemmas of one caption (cached by text)."""
        got = self._analyses.get(text)
        if got is not None:
            return got
        toks = tokenize(text)
        tags = [t for _, t in self.tagger.tag(toks)] if toks else []
        lemmas = [self.lemma(w, UPOS_TO_WN.get(t)) for w, t in zip(toks, tags)]
        got = Analysis(tuple(toks), tuple(tags), tuple(lemmas))
        self._analyses[text] = got
        return got

    def analyse_all(self, texts: Sequence[str]) -> list[Analysis]:
        """:meth:`analyse` of each text."""
        return [self.analyse(t) for t in texts]

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

    def synsets_tagged(self, analysis: Analysis, upos: str) -> list[str]:
        """Lesk synset names of the tokens tagged ``upos`` (Wray's SYN proxy sets).

        As in Wray et al.'s ``create_synsets.py``: the context is the caption's words, the
        target is the word's lemma, the part of speech is fixed by the tag; a word without
        a WordNet synset stands for itself.
        """
        wn_pos = UPOS_TO_WN[upos]
        out = []
        for tag, lem in zip(analysis.tags, analysis.lemmas):
            if tag == upos:
                out.append(self.lesk(analysis.tokens, lem, wn_pos) or lem)
        return out
