"""Words of a caption before any parsing: stop lists, tokens, class lists, text options.

- Stop lists: :data:`STOP_WORDS` (Glasgow, 318 words) and spaCy's English list shipped as data
  (:func:`spacy_stop_words`); :func:`stop_words` picks one by name (:data:`STOP_LISTS`).
- Tokens: :func:`tokenize` (lowercase ``[a-z0-9]+`` runs, the lemma pipeline's and the tagger's
  tokens) and Wray et al.'s surface words (:func:`split_words`: ``text.split(" ")`` exactly;
  :func:`surface_content_words` minus a stop list).
- Class lists (:class:`ClassMap`, :func:`read_class_csv`: EPIC-Kitchens-100's ``id,key,instances``
  CSV), which replace WordNet/Lesk for the SYN proxy.
- :class:`TextOptions`: word form (:data:`WORD_FORMS`) and stop list, with the two presets
  :data:`LEMMA_TEXT` and :data:`WRAY2021_TEXT`; :data:`UPOS_TO_WN` maps tags to WordNet parts of
  speech.

The parsing pipeline that uses them is :mod:`fireval.proxies.text`, which re-exports these names.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fireval.core.errors import FirevalError, InputError

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

#: spaCy's stop-word list, shipped as data (MIT licence; see ``data/spacy_LICENSE.txt``)
SPACY_STOP_WORDS_PATH = Path(__file__).parent / "data" / "spacy_en_stop_words.txt"

STOP_LISTS = ("glasgow", "spacy")
WORD_FORMS = ("surface", "lemma")


@functools.lru_cache(maxsize=1)
def spacy_stop_words() -> frozenset[str]:
    """spaCy's default English stop words (``spacy.lang.en.stop_words.STOP_WORDS``, 3.8.18).

    Extracted once from the spaCy wheel and shipped as ``data/spacy_en_stop_words.txt`` with
    its MIT licence, so spaCy is not a dependency. 326 entries, including the contractions
    ``n't``, ``'s``, ... in ASCII and curly apostrophes.
    """
    lines = SPACY_STOP_WORDS_PATH.read_text(encoding="utf-8").splitlines()
    return frozenset(w for w in lines if w and not w.startswith("#"))


def stop_words(name: str) -> frozenset[str]:
    """The stop list called ``name``: ``glasgow`` (:data:`STOP_WORDS`) or ``spacy``."""
    if name == "glasgow":
        return STOP_WORDS
    if name == "spacy":
        return spacy_stop_words()
    raise FirevalError(f"unknown stop-word list {name!r}; expected one of {', '.join(STOP_LISTS)}")


def split_words(text: str) -> list[str]:
    """Wray's surface words: ``text.split(" ")``, exactly (empty strings included)."""
    return text.split(" ")


def surface_content_words(text: str, stop: frozenset[str]) -> list[str]:
    """BoW items as published: :func:`split_words` minus the stop list (no lemmas)."""
    return [w for w in split_words(text) if w not in stop]


@dataclass(frozen=True)
class ClassMap:
    """Word → class of a class list such as EPIC-Kitchens-100's verb or noun classes.

    ``index`` maps each instance (surface form) to its class id; :meth:`item` gives the item
    a word stands for in the SYN proxy: ``"#<id>"`` for a listed word (tried as written,
    then as its lemma), else the word itself.
    """

    name: str
    index: dict[str, str] = field(default_factory=dict)
    n_classes: int = 0

    def item(self, word: str, lemma: str | None = None) -> str:
        cid = self.index.get(word)
        if cid is None and lemma is not None:
            cid = self.index.get(lemma)
        return word if cid is None else f"#{cid}"


def read_class_csv(path: str | Path) -> ClassMap:
    """Read a class CSV with columns ``id``, ``key``, ``instances`` (others ignored).

    ``instances`` is a Python-list string of surface forms, e.g. ``"['take', 'grab']"``
    (EPIC-Kitchens-100 ``EPIC_100_verb_classes.csv`` / ``EPIC_100_noun_classes.csv``). The key
    itself also maps to its class. A word listed under two classes keeps the first.
    :class:`InputError` names the file and line of anything malformed.
    """
    import ast
    import csv

    src = str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError("class list not found", source=src)
    index: dict[str, str] = {}
    n = 0
    import io

    from fireval.formats.textio import read_text  # binary, non-UTF-8, gzip, empty: one line naming it

    with io.StringIO(read_text(p), newline="") as fh:
        reader = csv.DictReader(fh)
        need = {"id", "key", "instances"}
        if not reader.fieldnames or not need <= set(reader.fieldnames):
            raise InputError(
                f"expected a header with columns id, key, instances; got {reader.fieldnames}",
                source=src,
                line=1,
            )
        for row in reader:
            line = reader.line_num
            cid, key = (row["id"] or "").strip(), (row["key"] or "").strip()
            if not cid or not key:
                raise InputError("empty id or key", source=src, line=line)
            try:
                inst = ast.literal_eval(row["instances"] or "[]")
            except (ValueError, SyntaxError):
                inst = None
            if not isinstance(inst, list | tuple) or not all(isinstance(x, str) for x in inst):
                raise InputError(
                    f"instances must be a Python list of strings, got {row['instances']!r}",
                    source=src,
                    line=line,
                )
            n += 1
            for w in (key, *inst):
                index.setdefault(w, cid)
    if n == 0:
        raise InputError("class list has no rows", source=src)
    return ClassMap(p.name, index, n)


@dataclass(frozen=True)
class TextOptions:
    """How captions become item sets (see the module docstring).

    ``words``: ``surface`` or ``lemma``; ``stop``: ``spacy`` or ``glasgow``; ``verb_classes`` /
    ``noun_classes``: class lists for the SYN proxy (WordNet/Lesk when None).
    """

    words: str = "lemma"
    stop: str = "glasgow"
    verb_classes: ClassMap | None = None
    noun_classes: ClassMap | None = None

    def __post_init__(self) -> None:
        if self.words not in WORD_FORMS:
            raise FirevalError(f"unknown word form {self.words!r}; expected one of {', '.join(WORD_FORMS)}")
        stop_words(self.stop)  # validates the name

    def describe(self) -> dict[str, Any]:
        """Provenance for the proxy file's ``meta``."""
        return {
            "words": self.words,
            "stop_words": "spacy-3.8.18-en" if self.stop == "spacy" else "glasgow-318",
            "tokens": 'text.split(" ") (BoW); tagger tokens [a-z0-9]+ (PoS/SYN)'
            if self.words == "surface"
            else "[a-z0-9]+ lowercase, WordNet morphy lemmas",
            "syn_lemma": "nltk WordNetLemmatizer (shortest base form)"
            if self.words == "surface"
            else "wordnet morphy (first base form)",
            "verb_classes": None if self.verb_classes is None else self.verb_classes.name,
            "noun_classes": None if self.noun_classes is None else self.noun_classes.name,
        }


#: fireval's lemma pipeline (the default of ``proxies build`` without a preset)
LEMMA_TEXT = TextOptions("lemma", "glasgow")
#: Wray et al. 2021 as published (``--preset wray2021``)
WRAY2021_TEXT = TextOptions("surface", "spacy")

#: UPOS → WordNet part of speech (for morphy and Lesk).
UPOS_TO_WN = {"NOUN": "n", "PROPN": "n", "VERB": "v", "AUX": "v", "ADJ": "a", "ADV": "r"}


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens: maximal runs of ``[a-z0-9]`` after lowercasing.

    Punctuation splits words (``"it's"`` → ``it``, ``s``), the same convention as
    :func:`fireval.core.normalise` and CLIP4Clip's MSVD captions.
    """
    return _TOKEN.findall(text.lower())
