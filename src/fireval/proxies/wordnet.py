"""WordNet 3.0 without a download.

Order of preference:

1. NLTK's own ``corpora/wordnet`` if it is installed (found with :func:`nltk.data.find`).
2. Debian's ``wordnet-base`` + ``wordnet-sense-index`` packages (``/usr/share/wordnet``),
   assembled into a cache directory (``$XDG_CACHE_HOME/fireval/wordnet``, else
   ``~/.cache/fireval/wordnet``) by copying the dictionary files and writing the
   ``lexnames`` file that NLTK's reader needs but Debian does not ship.

Both are read with :class:`nltk.corpus.reader.WordNetCorpusReader`. If neither exists a
:class:`~fireval.core.errors.FirevalError` names the Debian packages to install.
"""

from __future__ import annotations

import functools
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

from fireval.atomic import atomic_write
from fireval.core.errors import FirevalError

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")

#: The 45 lexicographer files of WordNet 3.0, as listed in the ``lexnames(5WN)`` man page
#: (file number, name, syntactic category: 1 noun, 2 verb, 3 adjective, 4 adverb).
LEXNAMES: tuple[tuple[int, str, int], ...] = (
    (0, "adj.all", 3), (1, "adj.pert", 3), (2, "adv.all", 4), (3, "noun.Tops", 1),
    (4, "noun.act", 1), (5, "noun.animal", 1), (6, "noun.artifact", 1), (7, "noun.attribute", 1),
    (8, "noun.body", 1), (9, "noun.cognition", 1), (10, "noun.communication", 1),
    (11, "noun.event", 1), (12, "noun.feeling", 1), (13, "noun.food", 1), (14, "noun.group", 1),
    (15, "noun.location", 1), (16, "noun.motive", 1), (17, "noun.object", 1),
    (18, "noun.person", 1), (19, "noun.phenomenon", 1), (20, "noun.plant", 1),
    (21, "noun.possession", 1), (22, "noun.process", 1), (23, "noun.quantity", 1),
    (24, "noun.relation", 1), (25, "noun.shape", 1), (26, "noun.state", 1),
    (27, "noun.substance", 1), (28, "noun.time", 1), (29, "verb.body", 2), (30, "verb.change", 2),
    (31, "verb.cognition", 2), (32, "verb.communication", 2), (33, "verb.competition", 2),
    (34, "verb.consumption", 2), (35, "verb.contact", 2), (36, "verb.creation", 2),
    (37, "verb.emotion", 2), (38, "verb.motion", 2), (39, "verb.perception", 2),
    (40, "verb.possession", 2), (41, "verb.social", 2), (42, "verb.stative", 2),
    (43, "verb.weather", 2), (44, "adj.ppl", 3),
)  # fmt: skip

#: Files NLTK's WordNetCorpusReader opens (``lexnames`` is written by us).
_DICT_FILES = (
    "cntlist.rev", "index.sense", "index.adj", "index.adv", "index.noun", "index.verb",
    "data.adj", "data.adv", "data.noun", "data.verb", "adj.exc", "adv.exc", "noun.exc", "verb.exc",
)  # fmt: skip

MISSING_MESSAGE = (
    "WordNet 3.0 not found: neither NLTK data (corpora/wordnet) nor {debian}. Install the Debian "
    "packages 'wordnet-base' and 'wordnet-sense-index' (apt-get install wordnet-base "
    "wordnet-sense-index), or NLTK's wordnet corpus."
)


def lexnames_text() -> str:
    """The ``lexnames`` file as NLTK expects it: ``NN<TAB>name<TAB>category`` per line."""
    return "".join(f"{n:02d}\t{name}\t{cat}\n" for n, name, cat in LEXNAMES)


def default_cache_dir() -> Path:
    """Where the WordNet assembled from Debian's files is kept: ``$XDG_CACHE_HOME/fireval/wordnet``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fireval" / "wordnet"


def _nltk_wordnet_dir() -> Any | None:
    """NLTK's installed ``corpora/wordnet``: a directory :class:`Path`, or NLTK's path pointer
    when it is the zipped download (``wordnet.zip``); ``None`` when not installed."""
    import nltk

    try:
        found = nltk.data.find("corpora/wordnet")
    except LookupError:
        return None
    path = Path(str(found))
    return path if path.is_dir() else found


def assemble_from_debian(source: Path = DEBIAN_WORDNET_DIR, cache_dir: Path | None = None) -> Path:
    """Assemble an NLTK-readable WordNet directory from Debian's files; return its path.

    Dictionary files are copied (NLTK refuses symlinks and hard links, ~35 MB); ``lexnames`` is written
    from :data:`LEXNAMES`. Re-running is cheap: a complete directory is reused.
    """
    missing = [f for f in _DICT_FILES if not (source / f).is_file()]
    if missing:
        raise FirevalError(
            MISSING_MESSAGE.format(debian=f"a complete {source} (missing {', '.join(missing)})")
        )
    target = cache_dir or default_cache_dir()
    target.mkdir(parents=True, exist_ok=True)
    for name in _DICT_FILES:
        dst = target / name
        if dst.is_file() and not dst.is_symlink() and dst.stat().st_nlink == 1:
            continue
        # a real copy, written atomically (safe when two processes assemble at once):
        # NLTK >= 3.9 (nltk.pathsec) refuses symlinks and hard links
        with open(source / name, "rb") as src, atomic_write(dst, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    lex = target / "lexnames"
    if not lex.is_file() or lex.read_text() != lexnames_text():
        with atomic_write(lex) as fh:
            fh.write(lexnames_text())
    return target


def wordnet_dir(cache_dir: Path | None = None, debian_dir: Path = DEBIAN_WORDNET_DIR) -> Any:
    """Where WordNet will be read from (see module docstring for the order): a directory, or
    NLTK's pointer into ``wordnet.zip``."""
    found = _nltk_wordnet_dir()
    if found is not None:
        return found
    if (debian_dir / "data.noun").is_file():
        return assemble_from_debian(debian_dir, cache_dir)
    raise FirevalError(MISSING_MESSAGE.format(debian=str(debian_dir)))


def open_wordnet(root: Any) -> Any:
    """A :class:`nltk.corpus.reader.WordNetCorpusReader` on ``root`` (no multilingual data).

    ``root`` is a directory or an NLTK path pointer (e.g. into ``wordnet.zip``)."""
    import nltk
    from nltk.corpus.reader import WordNetCorpusReader

    # NLTK >= 3.9 only opens files under its data path (nltk.pathsec): authorise the
    # directory.
    if isinstance(root, str | Path):
        allowed = str(Path(root).resolve())
        if allowed not in nltk.data.path:
            nltk.data.path.append(allowed)
        root = str(root)

    class _Reader(WordNetCorpusReader):  # type: ignore[misc]
        def map_wn(self, version: str = "wordnet") -> None:
            # NLTK maps the loaded WordNet onto its own downloaded copy for OMW data; we ship
            # no OMW and *are* WordNet 3.0, so the map is the identity (None in NLTK's terms).
            return None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available"
        return _Reader(root, None)


@functools.lru_cache(maxsize=1)
def load_wordnet() -> Any:
    """The process-wide WordNet reader (cached)."""
    return open_wordnet(wordnet_dir())


#: WordNet's detachment rules (morphy(7WN)): per part of speech, ``(suffix, ending)`` pairs
#: tried in this order on a form that is not an exception.
_DETACH: dict[str, tuple[tuple[str, str], ...]] = {
    "n": (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
          ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}  # fmt: skip
_SUFFIX = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}


class Morphy:
    """WordNet's ``morphy`` alone, read from the dictionary's index and exception files.

    Lemmatising needs only which (lemma, part of speech) pairs exist (first two columns of
    ``index.<pos>``) and the exception lists (``<pos>.exc``), not the synset offsets that
    NLTK's full reader parses at start-up (~2.4 s): this reads them in a fraction of that.
    :meth:`morphy` follows the rule of :meth:`WordNetCorpusReader.morphy` for one part of
    speech: the candidates are the form itself, then its exception bases if it is listed as
    an exception, else the forms from detaching each matching suffix; the first candidate that
    is a lemma of that part of speech is the answer (``None`` if none is).
    """

    def __init__(self, root: Path) -> None:
        self.pos_of: dict[str, set[str]] = {}
        self.exceptions: dict[str, dict[str, list[str]]] = {}
        for pos, suffix in _SUFFIX.items():
            with open(root / f"index.{suffix}", encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith(" "):
                        continue  # licence header
                    parts = line.split(None, 2)
                    if len(parts) >= 2:
                        self.pos_of.setdefault(parts[0], set()).add(parts[1])
            exc: dict[str, list[str]] = {}
            with open(root / f"{suffix}.exc", encoding="utf-8") as fh:
                for line in fh:
                    terms = line.split()
                    if terms:
                        exc[terms[0]] = terms[1:]
            self.exceptions[pos] = exc

    def _candidates(self, form: str, pos: str) -> list[str]:
        """The form itself, then its exception bases or else its detached-suffix forms."""
        exc = self.exceptions[pos].get(form)
        if exc is not None:
            return [form, *exc]
        return [form] + [form[: -len(s)] + e for s, e in _DETACH[pos] if form.endswith(s)]

    def morphy(self, form: str, pos: str) -> str | None:
        """Base form of ``form`` as a ``pos`` (``n``, ``v``, ``a``, ``r``) lemma, or ``None``."""
        return next((c for c in self._candidates(form, pos) if pos in self.pos_of.get(c, ())), None)

    def base_forms(self, form: str, pos: str) -> list[str]:
        """Every base form of ``form`` as a ``pos`` lemma, in :meth:`morphy`'s candidate order
        without repeats (NLTK's ``WordNetCorpusReader._morphy``; :meth:`morphy` is the first)."""
        return [c for c in dict.fromkeys(self._candidates(form, pos)) if pos in self.pos_of.get(c, ())]


@functools.lru_cache(maxsize=1)
def load_morphy() -> Morphy | None:
    """A :class:`Morphy` on the WordNet :func:`load_wordnet` would read; ``None`` when that
    WordNet is NLTK's zipped download (then use the full reader's ``morphy``)."""
    root = wordnet_dir()
    if not isinstance(root, Path):
        return None
    return Morphy(root)
