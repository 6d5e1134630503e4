from __future__ import annotations

from pathlib import Path

import pytest

from fireval.core.errors import InputError
from fireval.proxies import tagger as tg


def test_conllu_reader_skips_multiword_and_empty_nodes(tmp_path: Path) -> None:
    f = tmp_path / "x.conllu"
    rows = [
        "# text = I can't",
        "1\tI\tI\tPRON\t_\t_\t0\t_\t_\t_",
        "2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_",
        "2\tca\tcan\tAUX\t_\t_\t0\t_\t_\t_",
        "3\tn't\tnot\tPART\t_\t_\t0\t_\t_\t_",
        "3.1\tgo\tgo\tVERB\t_\t_\t_\t_\t_\t_",
        "",
        "1\tHi\thi\tINTJ\t_\t_\t0\t_\t_\t_",
    ]
    f.write_text("\n".join(rows) + "\n")
    assert list(tg.read_conllu_upos(f)) == [[("I", "PRON"), ("ca", "AUX"), ("n't", "PART")], [("Hi", "INTJ")]]
    f.write_text("1\tbad\n")
    with pytest.raises(InputError, match="x.conllu:1"):
        list(tg.read_conllu_upos(f))


def test_shipped_weights_are_json_not_pickle() -> None:
    assert tg.WEIGHTS_PATH.name.endswith(".json.gz")
    assert tg.WEIGHTS_PATH.read_bytes()[:2] == b"\x1f\x8b"


@pytest.mark.shared
def test_upos_accuracy_on_ewt_test(shared_data: Path) -> None:
    gold = list(tg.read_conllu_upos(shared_data / "ud_english_ewt" / "en_ewt-ud-test.conllu"))
    acc, n = tg.accuracy(gold)
    assert n > 25000
    print(f"UPOS accuracy on EWT test: {acc:.4f} ({n} tokens)")
    assert acc >= 0.93
    acc_lower, _ = tg.accuracy(gold[:800], lowercase=True)
    assert acc_lower >= 0.90  # captions are lowercase


def test_tags_simple_caption() -> None:
    tags = tg.tag(["a", "man", "is", "riding", "a", "horse"])
    assert tags[1] == "NOUN" and tags[3] == "VERB" and tags[5] == "NOUN"
