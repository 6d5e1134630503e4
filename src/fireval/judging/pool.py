"""Depth-k pooling of several runs into judging items (FIRE §3, §4.3).

A *pool item* is one distinct (normalised caption text, video) pair proposed by at least one
run's top ``depth``. Captions whose texts are equal after :func:`fireval.core.normalise` share an
item (FIRE keys its labels by caption text), and the item maps back to every caption id with
that text.

Ties at the cutoff: a run proposes every document whose score is ``>=`` its ``depth``-th
highest finite score, so a tie group that straddles rank ``depth`` is taken whole (the pool
may then hold more than ``depth`` docs for that query; :attr:`PoolResult.tie_extra` counts
them). ``-inf`` scores are never proposed. A proposed doc's *rank* is the optimistic rank of
its tie group: ``1 + #docs with a strictly higher score``.

Top-k is computed per chunk of queries with :func:`numpy.partition` (no full sort).

Hand-out order (:func:`handout_order`, applied by :func:`build_pool` and again when a pool is
loaded, :meth:`fireval.judging.handout.Handout.load_pool`): items are handed out in the order
they are stored, so that order must not be a pattern annotators can read (alphabetical caption
order made a gold item, a caption of its own in the middle of a run, stand out). Captions come
in a seeded pseudo-random order, the items of one caption consecutive (an annotator reads a
caption once and judges its videos: FIRE's workflow), their videos in a seeded pseudo-random
order. Each caption's and each item's place is a keyed hash (BLAKE2b of the seed and the
normalised caption, resp. and the video id), so the order depends only on the seed and the set
of items, not on the order they are read in: the same on every backend and for every copy of
the pool.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fireval.atomic import atomic_write
from fireval.core import Collection, Direction, InputError, Judgments, Run, normalise
from fireval.formats.textio import loads_bounded

POOL_FORMAT = "fireval-pool"
POOL_VERSION = 1


@dataclass
class PoolItem:
    """One (caption text, video) pair to judge, with its provenance.

    ``runs`` maps a run name to the best (smallest, 1-based) rank at which that run proposed
    the pair over all captions sharing the text. ``double`` marks items drawn for a second
    annotator.
    """

    caption: str
    caption_ids: list[str]
    video_id: str
    runs: dict[str, int]
    double: bool = False

    @property
    def norm_caption(self) -> str:
        return normalise(self.caption)

    def to_json(self) -> dict[str, Any]:
        return {
            "caption": self.caption,
            "caption_ids": self.caption_ids,
            "video_id": self.video_id,
            "runs": self.runs,
            "double": self.double,
        }


def _place(seed: int, *parts: str) -> bytes:
    """A pseudo-random sort key: BLAKE2b of the seed and ``parts`` (NUL-separated)."""
    text = "\x00".join((str(int(seed)), *parts))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def handout_order(items: Iterable[PoolItem], seed: int) -> list[PoolItem]:
    """``items`` in hand-out order for ``seed`` (module docstring): captions (normalised text)
    in a seeded pseudo-random order, each caption's items together, their videos in a seeded
    pseudo-random order. Deterministic in ``seed`` and the set of items (input order is irrelevant)."""
    cap_key: dict[str, bytes] = {}

    def key(it: PoolItem) -> tuple[bytes, str, bytes, str]:
        norm = it.norm_caption
        ck = cap_key.get(norm)
        if ck is None:
            ck = cap_key[norm] = _place(seed, norm)
        return ck, norm, _place(seed, norm, it.video_id), it.video_id

    return sorted(items, key=key)


@dataclass
class RunContribution:
    """Per-run pool statistics.

    ``proposed``: (caption row, video) pairs in the run's top-``depth`` (ties included) before
    deduplication and skipping; ``contributed``: pool items the run proposed; ``unique``: pool
    items only this run proposed; ``overlap``: ``contributed - unique``.
    """

    run: str
    proposed: int
    contributed: int
    unique: int

    @property
    def overlap(self) -> int:
        return self.contributed - self.unique


@dataclass
class PoolResult:
    """Pool items plus the report of how they were made."""

    items: list[PoolItem]
    direction: Direction
    depth: int
    runs: list[str]
    per_run: list[RunContribution]
    skipped_judged: int
    tie_extra: int
    queries: int
    seed: int
    double_fraction: float
    dataset: str
    pairwise_overlap: dict[str, dict[str, int]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "items": len(self.items),
            "double": sum(i.double for i in self.items),
            "direction": self.direction.value,
            "depth": self.depth,
            "queries": self.queries,
            "skipped_judged": self.skipped_judged,
            "tie_extra": self.tie_extra,
            "per_run": [
                {
                    "run": c.run,
                    "proposed": c.proposed,
                    "contributed": c.contributed,
                    "unique": c.unique,
                    "overlap": c.overlap,
                }
                for c in self.per_run
            ],
            "pairwise_overlap": self.pairwise_overlap,
        }


def topk_with_ties(block: npt.NDArray[np.floating], k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-``k`` of every row of ``block``, whole tie group at the cutoff included.

    Returns ``(rows, cols, ranks)`` of the selected entries, where ``rank`` is 1 + the number
    of entries of the row with a strictly higher score. ``-inf`` entries are never selected.
    """
    n_rows, n_cols = block.shape
    k = min(k, n_cols)
    b = np.asarray(block, dtype=np.float64)
    # k-th largest per row: partition the negated scores (−inf scores become +inf: sort last)
    kth = -np.partition(-b, k - 1, axis=1)[:, k - 1]
    sel = (b >= kth[:, None]) & np.isfinite(b)
    rows, cols = np.nonzero(sel)
    vals = b[rows, cols]
    # rank within row: sort selected entries by (row, -score); ties share the first position
    order = np.lexsort((-vals, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    idx = np.arange(rows.size)
    new_row = np.ones(rows.size, dtype=bool)
    new_row[1:] = rows[1:] != rows[:-1]
    row_start = np.maximum.accumulate(np.where(new_row, idx, 0)) if rows.size else idx
    new_group = new_row.copy()
    new_group[1:] |= vals[1:] != vals[:-1]
    group_start = np.maximum.accumulate(np.where(new_group, idx, 0)) if rows.size else idx
    ranks = group_start - row_start + 1
    return rows.astype(np.int64), cols.astype(np.int64), ranks.astype(np.int64)


def stratified_query_sample(
    lengths: npt.ArrayLike, n: int, seed: int = 0, n_strata: int = 5
) -> npt.NDArray[np.int64]:
    """Sample ``n`` query indices stratified by caption length (FIRE §4.3 budget mode).

    Queries are binned into at most ``n_strata`` length quantile bins; each bin gets a share of
    ``n`` proportional to its size (largest-remainder rounding) and is sampled without
    replacement with a seeded generator. Returns sorted indices.
    """
    lens = np.asarray(lengths, dtype=np.float64)
    total = lens.size
    if n <= 0:
        raise InputError(f"budget must be a positive number of queries, got {n}")
    if n >= total:
        return np.arange(total, dtype=np.int64)
    edges = np.unique(np.quantile(lens, np.linspace(0, 1, n_strata + 1)[1:-1]))
    strata = np.searchsorted(edges, lens, side="right")
    labels, sizes = np.unique(strata, return_counts=True)
    quota = sizes * n / total
    alloc = np.floor(quota).astype(np.int64)
    rest = n - int(alloc.sum())
    if rest:
        alloc[np.argsort(-(quota - alloc), kind="stable")[:rest]] += 1
    rng = np.random.default_rng(seed)
    picked = [
        rng.choice(np.flatnonzero(strata == lab), size=int(a), replace=False)
        for lab, a in zip(labels, alloc)
        if a
    ]
    return np.sort(np.concatenate(picked)).astype(np.int64)


def build_pool(
    collection: Collection,
    runs: Sequence[Run],
    *,
    depth: int = 10,
    direction: Direction | str = Direction.T2V,
    judged: Iterable[Judgments] = (),
    double_fraction: float = 0.1,
    seed: int = 0,
    budget: int | None = None,
    queries: Sequence[int] | None = None,
    chunk: int = 1024,
    dataset: str | None = None,
) -> PoolResult:
    """Pool the top ``depth`` of every run (see the module docstring for ties and ranks).

    ``judged``: label sources whose pairs are skipped (a pair is skipped when any caption with
    the same normalised text is judged for that video by any source). ``queries`` restricts
    pooling to those query indices (in ``direction``); ``budget`` samples that many of them
    stratified by caption length. A seeded sample of ``double_fraction`` of the items is
    marked for a second annotator.
    """
    d = Direction.parse(direction)
    if depth < 1:
        raise InputError(f"pool depth must be >= 1, got {depth}")
    if not 0.0 <= double_fraction <= 1.0:
        raise InputError(f"double-annotation fraction must lie in [0, 1], got {double_fraction}")
    if not runs:
        raise InputError("pooling needs at least one run")
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise InputError(f"run names must be distinct, got {names}")
    for r in runs:
        if r.shape != collection.shape:
            raise InputError(
                f"run {r.name!r} has shape {r.shape}, expected {collection.shape} (captions x videos)",
                source=r.source,
            )
        if not r.supports(d):
            raise InputError(f"run {r.name!r} has no {d.value} scores", source=r.source)
    n_videos = collection.n_videos
    n_q = collection.n_captions if d is Direction.T2V else n_videos

    # query subset
    qsel = np.arange(n_q, dtype=np.int64) if queries is None else np.asarray(queries, dtype=np.int64)
    if qsel.size and (qsel.min() < 0 or qsel.max() >= n_q):
        raise InputError(f"query index outside 0..{n_q - 1}")
    if budget is not None:
        lengths = collection.caption_lengths().astype(np.float64)
        if d is Direction.V2T:
            sums = np.bincount(collection.caption_video, weights=lengths, minlength=n_videos)
            cnt = np.maximum(np.bincount(collection.caption_video, minlength=n_videos), 1)
            lengths = sums / cnt
        qsel = qsel[stratified_query_sample(lengths[qsel], budget, seed=seed)]

    # caption text groups (one Python pass over captions, not over pairs)
    norm = [normalise(c) for c in collection.captions]
    uniq_text, group = np.unique(np.asarray(norm, dtype=object), return_inverse=True)
    group = group.astype(np.int64)
    n_groups = len(uniq_text)

    # keys of already-judged pairs at text-group level
    skip_keys = [group[j.rows] * n_videos + j.cols for j in judged if len(j)]
    skip = np.unique(np.concatenate(skip_keys)) if skip_keys else np.zeros(0, np.int64)

    all_key, all_run, all_rank, all_cap = [], [], [], []
    proposed = np.zeros(len(runs), dtype=np.int64)
    tie_extra = 0
    for ri, run in enumerate(runs):
        for s in range(0, qsel.size, chunk):
            qs = qsel[s : s + chunk]
            lo, hi = int(qs.min()), int(qs.max()) + 1
            block = run.block(d, lo, hi)[qs - lo]
            rows, cols, ranks = topk_with_ties(block, depth)
            per_row = np.bincount(rows, minlength=qs.size)
            tie_extra += int(np.maximum(per_row - min(depth, block.shape[1]), 0).sum())
            q = qs[rows]
            cap, vid = (q, cols) if d is Direction.T2V else (cols, q)
            all_key.append(group[cap] * n_videos + vid)
            all_cap.append(cap)
            all_rank.append(ranks)
            all_run.append(np.full(rows.size, ri, dtype=np.int64))
            proposed[ri] += rows.size
    key = np.concatenate(all_key) if all_key else np.zeros(0, np.int64)
    run_of = np.concatenate(all_run) if all_run else np.zeros(0, np.int64)
    rank = np.concatenate(all_rank) if all_rank else np.zeros(0, np.int64)
    keep = ~np.isin(key, skip)
    skipped_keys = np.unique(key[~keep])
    key, run_of, rank = key[keep], run_of[keep], rank[keep]

    # best rank per (item, run)
    order = np.lexsort((rank, run_of, key))
    key, run_of, rank = key[order], run_of[order], rank[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = (key[1:] != key[:-1]) | (run_of[1:] != run_of[:-1])
    key, run_of, rank = key[first], run_of[first], rank[first]
    item_keys, item_idx = np.unique(key, return_inverse=True)
    n_items = item_keys.size

    # per-run statistics, vectorised with a sparse item × run incidence
    inc = np.zeros((n_items, len(runs)), dtype=bool)
    inc[item_idx, run_of] = True
    n_runs_per_item = inc.sum(axis=1)
    per_run = [
        RunContribution(
            run=names[r],
            proposed=int(proposed[r]),
            contributed=int(inc[:, r].sum()),
            unique=int((inc[:, r] & (n_runs_per_item == 1)).sum()),
        )
        for r in range(len(runs))
    ]
    co = inc.T.astype(np.int64) @ inc.astype(np.int64)
    pairwise = {names[a]: {names[b]: int(co[a, b]) for b in range(len(runs))} for a in range(len(runs))}

    # double-annotation sample
    rng = np.random.default_rng(seed)
    n_double = int(round(double_fraction * n_items))
    double = np.zeros(n_items, dtype=bool)
    if n_double:
        double[rng.choice(n_items, size=n_double, replace=False)] = True

    # caption ids per text group (only for groups that occur)
    item_group = item_keys // n_videos
    item_video = item_keys % n_videos
    order_g = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order_g], np.arange(n_groups + 1))
    first_in_item = np.searchsorted(item_idx, np.arange(n_items))
    items: list[PoolItem] = []
    for i in range(n_items):
        g = int(item_group[i])
        members = order_g[bounds[g] : bounds[g + 1]]
        lo = first_in_item[i]
        hi = first_in_item[i + 1] if i + 1 < n_items else item_idx.size
        items.append(
            PoolItem(
                caption=collection.captions[int(members[0])],
                caption_ids=[collection.caption_ids[int(m)] for m in members],
                video_id=collection.video_ids[int(item_video[i])],
                runs={names[int(r)]: int(k) for r, k in zip(run_of[lo:hi], rank[lo:hi])},
                double=bool(double[i]),
            )
        )
    return PoolResult(
        items=handout_order(items, seed),
        direction=d,
        depth=depth,
        runs=names,
        per_run=per_run,
        skipped_judged=int(skipped_keys.size),
        tie_extra=tie_extra,
        queries=int(qsel.size),
        seed=seed,
        double_fraction=double_fraction,
        dataset=dataset or collection.name,
        pairwise_overlap=pairwise,
    )


def write_pool(path: str | Path, pool: PoolResult) -> None:
    """Write the pool as JSONL atomically: one header object, then one item per line."""
    header = {
        "format": POOL_FORMAT,
        "version": POOL_VERSION,
        "dataset": pool.dataset,
        "direction": pool.direction.value,
        "depth": pool.depth,
        "runs": pool.runs,
        "seed": pool.seed,
        "double_fraction": pool.double_fraction,
        "summary": pool.summary(),
    }
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header, ensure_ascii=False) + "\n")
        for item in pool.items:
            fh.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")


@dataclass
class PoolFile:
    """A pool read back from disk: its header and items."""

    header: dict[str, Any]
    items: list[PoolItem]

    @property
    def dataset(self) -> str:
        return str(self.header.get("dataset", ""))


def read_pool(path: str | Path) -> PoolFile:
    """Read a pool JSONL written by :func:`write_pool`; errors name the file and line."""
    src = str(path)
    if Path(path).is_dir():
        raise InputError("is a directory; expected a pool file from `fireval pool`", source=src)
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError(
            "not a fireval pool (not UTF-8 JSON lines; write one with `fireval pool`)", source=src
        ) from None
    if not lines or not lines[0].strip():
        raise InputError("file is empty", source=src)
    try:
        header = loads_bounded(lines[0])
    except json.JSONDecodeError as exc:
        raise InputError(f"header is not JSON ({exc.msg})", source=src, line=1) from None
    if not isinstance(header, dict) or header.get("format") != POOL_FORMAT:
        raise InputError(
            f"not a fireval pool (first line must have format={POOL_FORMAT!r})", source=src, line=1
        )
    version = header.get("version", POOL_VERSION)
    # refuse versions this reader does not know: a newer writer's fields could mean otherwise
    if type(version) is not int or not 1 <= version <= POOL_VERSION:
        raise InputError(
            f"pool file version {version!r} is not supported (this fireval reads versions 1 to {POOL_VERSION})",
            source=src,
            line=1,
        )
    items: list[PoolItem] = []
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            rec = loads_bounded(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"item is not JSON ({exc.msg})", source=src, line=no) from None
        items.append(_pool_item(rec, src, no))
    return PoolFile(header=header, items=items)


#: the fields of every pool item (an item without them would load as empty: no caption ids, no runs)
ITEM_FIELDS = ("caption", "caption_ids", "video_id", "runs", "double")


def _pool_item(rec: Any, src: str, no: int) -> PoolItem:
    """One pool line as a :class:`PoolItem`; an incomplete or mistyped record is an error naming
    the file, the line and the field."""

    def bad(what: str) -> InputError:
        return InputError(
            f"malformed pool item: {what} (write pools with `fireval pool`)", source=src, line=no
        )

    if not isinstance(rec, dict):
        raise bad(f"expected a JSON object, got {type(rec).__name__}")
    if missing := [k for k in ITEM_FIELDS if k not in rec]:
        raise bad(f"missing {', '.join(missing)} (every item has {', '.join(ITEM_FIELDS)})")
    caption, video, cids, runs, double = (
        rec[k] for k in ("caption", "video_id", "caption_ids", "runs", "double")
    )
    if not isinstance(caption, str) or not caption.strip() or not isinstance(video, str) or not video:
        raise bad("caption and video_id must be non-empty strings")
    if not isinstance(cids, list) or not cids or not all(isinstance(c, str) and c for c in cids):
        raise bad("caption_ids must be a non-empty list of caption id strings")
    if not isinstance(runs, dict) or not runs or not all(type(v) is int and v >= 1 for v in runs.values()):
        raise bad("runs must map each proposing run's name to its rank (an integer >= 1)")
    if not isinstance(double, bool):
        raise bad(f"double must be true or false, got {double!r}")
    return PoolItem(caption, list(cids), video, {str(k): v for k, v in runs.items()}, double)
