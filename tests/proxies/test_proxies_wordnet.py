from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from fireval.core.errors import FirevalError
from fireval.proxies import wordnet as W

DEB = Path("/usr/share/wordnet")
needs_debian = pytest.mark.skipif(
    not (DEB / "data.noun").is_file(), reason="Debian wordnet-base not installed"
)


def test_lexnames_constant_matches_man_page() -> None:
    lines = W.lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3" and lines[44] == "44\tadj.ppl\t3"
    man = Path("/usr/share/man/man5/lexnames.5WN.gz")
    if not man.exists():
        pytest.skip("lexnames(5WN) man page not installed")
    text = gzip.decompress(man.read_bytes()).decode("latin-1")
    rows = re.findall(r"^(\d\d)\t(\S+)\s*\t", text, flags=re.M)
    assert [(int(n), name) for n, name in rows] == [(n, name) for n, name, _ in W.LEXNAMES]
    # the category digit agrees with the name's prefix
    cat = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
    assert all(c == cat[name.split(".")[0]] for _, name, c in W.LEXNAMES)


@needs_debian
def test_assemble_from_debian_into_temp_cache(tmp_path: Path) -> None:
    root = W.assemble_from_debian(DEB, tmp_path / "wn")
    assert (root / "lexnames").read_text() == W.lexnames_text()
    wn = W.open_wordnet(root)
    assert wn.get_version() == "3.0"
    assert wn.morphy("dogs", "n") == "dog"
    assert wn.morphy("running", "v") == "run"
    assert "dog.n.01" in [s.name() for s in wn.synsets("dog")]
    assert wn.synset("dog.n.01").lexname() == "noun.animal"
    # re-running reuses the directory
    assert W.assemble_from_debian(DEB, tmp_path / "wn") == root


def test_missing_wordnet_names_debian_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(W, "_nltk_wordnet_dir", lambda: None)
    with pytest.raises(FirevalError) as err:
        W.wordnet_dir(cache_dir=tmp_path / "c", debian_dir=tmp_path / "nowhere")
    msg = str(err.value)
    assert "wordnet-base" in msg and "wordnet-sense-index" in msg


def test_incomplete_debian_dir_is_reported(tmp_path: Path) -> None:
    (tmp_path / "data.noun").write_text("")
    with pytest.raises(FirevalError, match="missing"):
        W.assemble_from_debian(tmp_path, tmp_path / "c")


@needs_debian
def test_nltk_data_is_preferred_when_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    data = tmp_path / "nltk_data"
    W.assemble_from_debian(DEB, data / "corpora" / "wordnet")
    monkeypatch.setattr(nltk.data, "path", [str(data), *nltk.data.path])
    root = W.wordnet_dir(cache_dir=tmp_path / "unused", debian_dir=tmp_path / "nowhere")
    assert Path(root) == data / "corpora" / "wordnet"
    assert not (tmp_path / "unused").exists()
    assert W.open_wordnet(root).morphy("geese", "n") == "goose"
