"""`fireval collection stats` against counts written from the definitions (Wray Table 1, FIRE §2.1)."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from pathlib import Path

import pytest
from tests.cli_helpers import exit_code, write_csv_collection

ROWS = [
    ("video0", "A man rides a horse."),
    ("video0", "a man rides a horse"),
    ("video0", "A man rides a horse."),
    ("video1", "a woman  cooks pasta"),
    ("video1", "A man rides a horse."),
    ("video2", "dogs run"),
]


@pytest.fixture()
def csv_path(tmp_path: Path) -> Path:
    return write_csv_collection(tmp_path / "toy.csv", ROWS)


def _oracle(rows: list[tuple[str, str]]) -> dict:
    per_video = Counter(v for v, _ in rows)
    words = [len(t.split()) for _, t in rows]
    chars = [len(t) for _, t in rows]

    def norm(t: str) -> str:
        return " ".join(re.findall(r"[a-z0-9]+", t.lower()))

    def rep(key) -> dict:  # type: ignore[no-untyped-def]
        c = Counter(key(t) for _, t in rows)
        vids: dict[str, set[str]] = {}
        for v, t in rows:
            vids.setdefault(key(t), set()).add(v)
        return {
            "distinct": len(c),
            "repeated_texts": sum(1 for n in c.values() if n > 1),
            "repeated_captions": sum(n for n in c.values() if n > 1),
            "across_videos": sum(1 for k in c if len(vids[k]) > 1),
            "captions_across_videos": sum(c[k] for k in c if len(vids[k]) > 1),
        }

    def summ(x: list[int]) -> dict:
        return {"min": min(x), "mean": sum(x) / len(x), "median": statistics.median(x), "max": max(x)}

    return {
        "videos": len(per_video),
        "captions": len(rows),
        "captions_per_video": summ(list(per_video.values())),
        "caption_words": summ(words),
        "caption_characters": summ(chars),
        "vocabulary": len({w for _, t in rows for w in norm(t).split()}),
        "repeated": {"exact": rep(lambda t: t), "normalised": rep(norm)},
    }


def test_collection_stats_match_definitions(csv_path: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "stats.json"
    assert exit_code(["collection", "stats", "-c", str(csv_path), "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    want = _oracle(ROWS)
    for key, value in want.items():
        assert got[key] == pytest.approx(value) if not isinstance(value, dict) else got[key] == value, key
    text = capsys.readouterr().out
    assert "3 videos, 6 captions" in text and "repeated (normalised): 4 captions share 1 texts" in text


def test_collection_stats_real_msrvtt_test(shared_data: Path) -> None:
    """The MSR-VTT test split: 2,990 videos x 20 captions (Wray Table 1 / FIRE §2.1 counts)."""
    from fireval import api
    from fireval.analysis.collection_stats import collection_stats

    coll = api.load_collection(shared_data / "msrvtt" / "official_test" / "test.json")
    st = collection_stats(coll)
    assert (st["videos"], st["captions"]) == (2990, 59800)
    assert st["captions_per_video"] == {"min": 20.0, "mean": 20.0, "median": 20.0, "max": 20.0}
    texts = Counter(coll.captions)
    assert st["repeated"]["exact"]["repeated_captions"] == sum(n for n in texts.values() if n > 1)
