"""`fireval proxies show` (Wray Fig. 3) against BoW written from the definition: IoU of the
surface-word sets (``caption.split(" ")`` minus spaCy's stop words) of the reference caption and
every other caption of the 1k-A videos."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.cli_helpers import exit_code


def _oracle(ref: str, texts: list[str]) -> list[float]:
    from fireval.proxies.text import spacy_stop_words  # data: spaCy's list as shipped

    stop = set(spacy_stop_words())
    a = set(ref.split(" ")) - stop
    out = []
    for t in texts:
        b = set(t.split(" ")) - stop
        out.append(len(a & b) / len(a | b) if a | b else 0.0)
    return out


def test_proxies_show_ranks_other_captions_by_bow(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from fireval.formats.example import load_example
    from fireval.proxies.relevance import ProxyRelevance

    ex = load_example()
    vc = ex.video_captions
    # a proxy file as `proxies build --preset wray2021 -p bow` writes it (grades are not used)
    npz = tmp_path / "bow.npz"
    meta = {"proxy": "bow", "words": "surface", "stop_words": "spacy-3.8.18-en", "agg": "words25"}
    g = np.zeros(ex.collection.shape, dtype=np.float32)
    ProxyRelevance(g, ex.collection.caption_ids, ex.collection.video_ids, meta).save(npz, judge_zeros=False)
    out = tmp_path / "show.json"
    assert exit_code(["proxies", "show", "ret1", "-l", str(npz), "--top", "5", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    ref = ex.collection.captions[ex.collection.caption_index["ret1"]]
    assert doc["reference"] == {"caption_id": "ret1", "caption": ref}
    want = _oracle(ref, list(vc.captions))
    ranked = doc["ranked"]
    assert len(ranked) == vc.n_captions  # ret1 is a query id, not one of the video captions
    got = {r["caption_id"]: r["score"] for r in ranked}
    assert [got[c] for c in vc.caption_ids] == pytest.approx(want, abs=1e-6)
    scores = [r["score"] for r in ranked]
    assert scores == sorted(scores, reverse=True)
    assert ranked[0]["video_id"] == "video9771" and ranked[0]["score"] == 1.0
    printed = capsys.readouterr().out.splitlines()
    assert len([x for x in printed if x.strip().startswith(("1 ", "2 ", "3 ", "4 ", "5 "))]) == 5

    # a video caption as the reference is left out of its own ranking; --proxy without -l works too
    cid = vc.caption_ids[0]
    assert (
        exit_code(["proxies", "show", cid, "--proxy", "bow", "--preset", "wray2021", "--json", str(out)]) == 0
    )
    ranked = json.loads(out.read_text())["ranked"]
    assert len(ranked) == vc.n_captions - 1 and cid not in {r["caption_id"] for r in ranked}


def test_proxies_show_errors(capsys) -> None:  # type: ignore[no-untyped-def]
    assert exit_code(["proxies", "show", "nope", "--proxy", "bow"]) == 2
    assert exit_code(["proxies", "show", "ret1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "'nope'" in err[0] and "-l PROXY.npz or --proxy" in err[1]
