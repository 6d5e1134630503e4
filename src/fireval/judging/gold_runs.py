"""Where gold items go in an annotator's queue: caption runs like the pool's (pure, no database).

Mixing, as caption runs that look like the pool's (blind judging): pool items reach an annotator
in runs of one caption (:func:`fireval.judging.pool.handout_order`), so gold items do too. Gold
pairs are grouped by normalised caption; :func:`plan_runs` fixes each annotator's order
(:meth:`fireval.judging.gold.Gold.plan`): for run ``r`` a length ``L`` is drawn (``HMAC(key,
who:run:r)``) uniformly among the pool's per-caption item counts (the run lengths a lone
annotator sees), and the run is the first ``L`` videos of the first unused gold caption with at
least ``L`` pairs (every video a gold pair with a known answer: nothing is padded or invented),
or, when none has that many, the unused caption with the most pairs, whole (a shorter run:
documented). "First" is in the annotator's own order of the gold captions, sorted by ``HMAC(key,
who:caption:<normalised caption>)`` (load order without a key): annotators comparing notes do
not see the same gold captions in the same order. :func:`gold_fit`
(:meth:`fireval.judging.gold.Gold.fit`) says whether the gold set can hide at all: the expected
share of gold runs shorter than drawn, and the pairs per gold caption that would keep it at most
:data:`FIT_THRESHOLD` (``fireval judgments load`` and ``fireval serve`` print
:meth:`GoldFit.warning`).

- :func:`_gold_turn` is the position rule: whether the next run is gold, by the fixed rule
  ``shown + 1 <= rate * (answers + shown + 1)`` or, with a key, at a position drawn within each
  stretch of about ``1/rate`` captions.
- :func:`caption_boundary`: gold runs come only between two pool captions' runs.

:class:`fireval.judging.gold.Gold` applies these rules to the store (and re-exports these names);
see its module docstring for the whole hand-out rule.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fireval.core import normalise

#: the expected share of gold runs shorter than drawn above which the gold set is said not to
#: hide among the pool's runs (:meth:`GoldFit.warning`)
FIT_THRESHOLD = 0.1


def caption_boundary(last_caption: str | None, next_caption: str | None) -> bool:
    """Whether a gold item may come between the annotator's last pool item (caption
    ``last_caption``) and their next one (``next_caption``): not in the middle of one caption's
    run, i.e. when the captions differ after :func:`fireval.core.normalise` (how pool items
    are grouped), or either is ``None`` (nothing answered yet, or no pool item left)."""
    if last_caption is None or next_caption is None:
        return True
    return normalise(last_caption) != normalise(next_caption)


@dataclass(frozen=True)
class GoldPlan:
    """The order in which one annotator is shown gold items: ``rows`` (gold rows ``id, caption,
    video_id``), ``ids`` their ids, ``run`` the run (gold caption) each belongs to, ``index``
    gold id -> position."""

    rows: list[Any]
    ids: list[int]
    run: list[int]
    index: dict[int, int]


def _ids(groups: list[list[Any]]) -> list[list[int]]:
    """The gold ids of each caption group."""
    return [[int(r.id) for r in g] for g in groups]


def _draw(key: bytes | None, who: int, what: str) -> int:
    """A keyed pseudo-random 64-bit number (HMAC-SHA256 of ``who:what``; key ``b""`` when unset)."""
    return int.from_bytes(
        hmac.new(key or b"", f"{int(who)}:{what}".encode(), hashlib.sha256).digest()[:8], "big"
    )


def plan_runs(groups: list[list[Any]], lengths: list[int], key: bytes | None, who: int) -> GoldPlan:
    """The annotator's gold runs: for run ``r`` a length ``L`` is drawn (keyed: ``HMAC(key,
    who:run:r)``) uniformly among ``lengths`` (the pool's per-caption run lengths, so gold runs
    are as long as pool runs); the run is the first ``L`` videos (in id order) of the first
    gold caption not used yet with at least ``L`` videos, or, when none has that many, all the
    videos of the unused caption with the most (the first of those): a run shorter than drawn.
    No ``lengths`` (no pool): whole captions. Every gold caption gives one run; the videos of a
    caption beyond its run are not shown to this annotator.

    "First" is in the annotator's order of the captions: with ``key``, sorted by ``HMAC(key,
    who:caption:<normalised caption of the group's first row>)`` (a keyed permutation per
    annotator, stable when other captions are added); without it, ``groups`` order (load order).

    Cost O(m log m + m·W) for m gold captions and W distinct drawn lengths: for each length a
    cursor walks the captions (in order) that are large enough, for the fallback one walks them
    by size, largest first; each cursor skips used captions and only moves forward."""
    order = list(range(len(groups)))
    if key is not None:  # each annotator's own order of the gold captions
        order.sort(key=lambda g: (_draw(key, who, "caption:" + normalise(str(groups[g][0].caption))), g))
    size = [len(groups[g]) for g in order]  # by position in the annotator's order
    used = [False] * len(order)
    fits: dict[int, tuple[list[int], list[int]]] = {}  # length -> (positions large enough, cursor)
    largest = sorted(range(len(order)), key=lambda i: (-size[i], i))  # the fallback's order
    cursor_l = 0
    rows: list[Any] = []
    run: list[int] = []
    for r in range(len(order)):
        want = lengths[_draw(key, who, f"run:{r}") % len(lengths)] if lengths else None
        pick = None
        if want is None:
            pick = r  # whole captions, in order (every earlier one is used)
        else:
            if want not in fits:
                fits[want] = ([i for i in range(len(order)) if size[i] >= want], [0])
            cand, cur = fits[want]
            while cur[0] < len(cand) and used[cand[cur[0]]]:
                cur[0] += 1
            if cur[0] < len(cand):
                pick = cand[cur[0]]
        if pick is None:  # no unused caption is large enough: the first of the largest, in order
            while used[largest[cursor_l]]:
                cursor_l += 1
            pick = largest[cursor_l]
        used[pick] = True
        group = groups[order[pick]]
        take = group if want is None else group[:want]
        rows += take
        run += [r] * len(take)
    ids = [int(x.id) for x in rows]
    return GoldPlan(rows, ids, run, {g: k for k, g in enumerate(ids)})


@dataclass(frozen=True)
class GoldFit:
    """Whether a gold set's captions are large enough to come in runs like the pool's
    (:func:`gold_fit`): pairs per gold caption (``gold_min``..``gold_max`` over
    ``gold_captions``), the pool's items per caption (``pool_min``, ``pool_median``,
    ``pool_max`` over ``pool_captions``), ``short_share``: the expected share of an
    annotator's gold runs shorter than their drawn length, and ``need``: the pairs per gold
    caption with which that share is at most ``threshold`` (the smallest pool caption size
    that at most ``threshold`` of the pool's captions exceed)."""

    gold_captions: int
    gold_min: int
    gold_max: int
    pool_captions: int
    pool_min: int
    pool_median: int
    pool_max: int
    short_share: float
    need: int
    threshold: float

    @property
    def hides(self) -> bool:
        return self.short_share <= self.threshold

    def warning(self) -> str | None:
        """One line for the operator when the gold set cannot hide (``None`` when it can)."""
        if self.hides:
            return None
        if self.gold_min == self.gold_max:
            sizes = f"{self.gold_min} pair{'s' if self.gold_min > 1 else ''} each"
        else:
            sizes = f"{self.gold_min} to {self.gold_max} pairs"
        return (
            f"warning: gold items can be told from pool items: {self.short_share:.0%} of gold caption "
            f"runs would be shorter than drawn (gold captions have {sizes}, pool captions "
            f"{self.pool_min} to {self.pool_max} items, median {self.pool_median}); use gold captions "
            f"with at least {self.need} pairs each (at most {self.threshold:.0%} short runs then)"
        )


def gold_fit(
    gold_sizes: list[int], pool_lengths: list[int], threshold: float = FIT_THRESHOLD, seed: int = 0
) -> GoldFit | None:
    """How well gold captions of ``gold_sizes`` pairs fit the pool's per-caption run lengths
    ``pool_lengths`` (:class:`GoldFit`); ``None`` without gold or without a pool.

    ``short_share`` is estimated by simulating :func:`plan_runs` on the sizes alone over whole
    plans (every gold caption used once): the captions in a random order (as the keyed order
    is), each run draws ``L`` uniformly among ``pool_lengths`` and takes the first unused
    caption with at least ``L`` pairs, or, when none has, the first of the largest (a short
    run). The first unused caption of a size is always the earliest of its size class, so each
    class is a queue of positions and a step compares the classes' heads. (Picking uniformly
    among the large-enough captions instead is not the same: a caption passed over once
    tends to come late, and the estimate was 0.02 too high.) Seeded (``seed``): the same
    answer every time; about 20,000 runs in all (at least one whole plan, at most 200 plans)."""
    if not gold_sizes or not pool_lengths:
        return None
    lengths = np.sort(np.asarray(pool_lengths, np.int64))
    sizes = np.asarray(gold_sizes, np.int64)
    vals, cls = np.unique(sizes, return_inverse=True)
    m, d = int(sizes.size), int(vals.size)
    rng = np.random.default_rng(seed)
    trials = min(200, max(1, 20_000 // m))
    short = 0
    for _ in range(trials):
        pos = rng.permutation(m)  # each caption's place in the annotator's order
        order = np.lexsort((pos, cls))  # by class, then place
        start = np.searchsorted(cls[order], np.arange(d + 1))  # each class's slice of ``order``
        queue = pos[order].astype(np.float64)
        ptr = start[:-1].copy()
        head = queue[ptr]  # the earliest unused caption of each class (inf: none left)
        want = np.searchsorted(vals, rng.choice(lengths, size=m))  # first class with >= L pairs
        for i in want.tolist():
            tail = head[i:]
            if i < d and tail.min() < np.inf:
                c = i + int(np.argmin(tail))
            else:  # no unused caption is large enough: the largest left, whole
                short += 1
                c = int(np.flatnonzero(head < np.inf)[-1])
            ptr[c] += 1
            head[c] = queue[ptr[c]] if ptr[c] < start[c + 1] else np.inf
    uniq = np.unique(lengths)
    above = 1.0 - np.searchsorted(lengths, uniq, side="right") / lengths.size
    need = int(uniq[np.flatnonzero(above <= threshold + 1e-12)[0]])
    return GoldFit(
        gold_captions=m,
        gold_min=int(sizes.min()),
        gold_max=int(sizes.max()),
        pool_captions=int(lengths.size),
        pool_min=int(lengths[0]),
        pool_median=int(np.median(lengths)),
        pool_max=int(lengths[-1]),
        short_share=short / (trials * m),
        need=need,
        threshold=float(threshold),
    )


def _gold_turn(shown: int, answers: int, rate: float, key: bytes | None = None, who: int = 0) -> bool:
    """Whether the next one is gold: ``shown + 1 <= rate * (answers + shown + 1)``. The hand-out
    applies it to runs (:meth:`~fireval.judging.gold.Gold.decide`): ``shown`` gold runs, ``answers``
    pool captions answered; with one video per caption that is gold items and answers.

    With ``key``: gold run ``j = shown + 1`` is due from a position (``answers + shown``, the
    runs seen before it) drawn by ``HMAC(key, who:j)`` among ``last(j - 1) + 1 .. last(j)``,
    ``last(j) = ceil(j / rate) - 1`` being the position the fixed rule gives it."""
    if key is None:
        return shown + 1 <= rate * (answers + shown + 1)
    j = shown + 1
    last = math.ceil(j / rate - 1e-9) - 1
    first = math.ceil((j - 1) / rate - 1e-9)
    draw = hmac.new(key, f"{int(who)}:{j}".encode(), hashlib.sha256).digest()
    return answers + shown >= first + int.from_bytes(draw[:8], "big") % max(1, last - first + 1)
