"""Gold pairs (pairs with known answers) and their file: the ids they are shown with.

- :data:`GOLD_BASE`: a gold item is shown with the id ``GOLD_BASE + gold id``; pool items' ids
  stay below it (:func:`is_gold_id`).
- :func:`read_gold`: the gold file, one JSON object per line: ``{"caption": ..., "video_id":
  ..., "answer": ...}`` with ``answer`` one of :data:`ANSWERS`; a pair given twice with two
  answers is refused, naming both lines.

The gold workflow itself (tables, hand-out, answers, accuracy) is :mod:`fireval.judging.gold`,
which re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fireval.core import normalise
from fireval.judging.errors import valid_id

#: gold items are shown with ids above every pool item's id
GOLD_BASE = 2_000_000_000
DEFAULT_RATE = 0.1
ANSWERS = ("relevant", "irrelevant")


def is_gold_id(item_id: int) -> bool:
    """True for the ids gold items are shown with (ids no row can have are not gold: 404 as usual)."""
    return valid_id(item_id) and item_id > GOLD_BASE


@dataclass(frozen=True)
class GoldPair:
    caption: str
    video_id: str
    answer: str
    line: int = field(default=0, compare=False)  # its line in the gold file (0: not from a file)


#: the fields of one gold line
GOLD_KEYS = ("caption", "video_id", "answer")


def read_gold(path: str | Path) -> list[GoldPair]:
    """Gold pairs from a JSON-lines file; a bad line raises :class:`InputError` naming it."""
    from fireval.core import InputError
    from fireval.formats.textio import jsonl_records

    src = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read the gold file: {getattr(exc, 'strerror', None) or exc}", source=src
        ) from None
    out: list[GoldPair] = []
    first: dict[tuple[str, str], tuple[int, str]] = {}  # (normalised caption, video) -> (line, answer)
    for k, rec in jsonl_records(text, src, GOLD_KEYS):
        for key in GOLD_KEYS:
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise InputError(f"{key!r} missing or not a non-empty string", source=src, line=k)
        if rec["answer"] not in ANSWERS:
            raise InputError(
                f"answer must be 'relevant' or 'irrelevant', got {rec['answer']!r}", source=src, line=k
            )
        pair = GoldPair(rec["caption"].strip(), rec["video_id"].strip(), rec["answer"], line=k)
        key_ = (normalise(pair.caption), pair.video_id)
        if key_ in first and first[key_][1] != pair.answer:
            raise InputError(
                f"gold pair ({pair.caption!r}, {pair.video_id!r}) has two answers: {first[key_][1]!r} on "
                f"line {first[key_][0]} and {pair.answer!r} on line {k}; keep one",
                source=src,
            )
        first.setdefault(key_, (k, pair.answer))
        out.append(pair)
    if not out:
        raise InputError("no gold pairs in the file", source=src)
    return out
