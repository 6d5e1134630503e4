"""The run explorer: query-by-query evidence inside the fireval web app.

Pages (any logged-in user; data from ``WebConfig.collection`` / ``runs`` / ``judgments``, and
the app's own store's labels, kept up to date: :func:`get_data`):

- ``GET /explore``: the t2v query list with filters — caption length (``min_len``/``max_len``),
  ``unjudged`` (some run's top K holds an unjudged video), ``disagreement`` (annotators
  disagreed on one of the query's pairs), ``differ`` (the runs disagree on C@1: one has a
  relevant video first and another does not), and a word search ``q``. Per run it shows C@1,
  the rank of the instance video and unjudged@K (unjudged videos in *that run's* top K).
- ``GET /explore/query/{index}``: the top K of every run side by side, each video with its
  label badge (instance / human / proxy / auto / unjudged / disagreement) and a player whose
  poster is the video's first frame; when the instance video is outside a run's top K it is
  shown below the list with its rank.
- ``POST /explore/queue`` (admin only, CSRF-checked form): sends the selected unjudged
  (caption, video) pairs to the annotation queue with
  :meth:`fireval.judging.store.Store.add_items`; provenance = the runs and ranks that show the pair.

Conventions. Ranks are 1-based in the order the page shows: score descending, ties broken by
ascending video index (:func:`fireval.analysis.overlap.topk_block`); the instance video's rank
is ``1 + #(higher scores) + #(equal scores at a lower video index)``, 0 when the run does not
retrieve it (score ``-inf``). "Unjudged" counts pairs with no label and pairs whose annotators
disagreed (both stay unjudged in evaluation). Search is by whole words on the normalised
caption (lowercase, punctuation removed): ``man`` finds "a man rides" but not "woman" or
"many"; several words must appear consecutively. Poster frames are drawn by the browser
(``preload="metadata"`` and a ``#t=0.1`` media fragment), so no ffmpeg is needed.

Everything shown is precomputed once per app (vectorised top-K, instance ranks, label
look-ups, one search text) and kept on ``app.state``. ``WebConfig.extra["explore_k"]`` sets K
(default 10).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import numpy as np
import numpy.typing as npt
from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from fireval.analysis.overlap import topk_block
from fireval.core import Collection, Direction, Judgments, Run, normalise
from fireval.web.deps import video_url
from fireval.web.security import csrf_token, current_user, require_admin, require_csrf

router = APIRouter()

_LOCK = threading.Lock()
PAGE_SIZE = 50
#: score-block elements read at a time while precomputing (float64: 32 MB)
_BLOCK_ELEMS = 1 << 22
_CSS = """
.explore-filters { display: flex; flex-wrap: wrap; gap: .6em 1.2em; align-items: end; margin: .5em 0 1em; }
.explore-filters label { font-size: 14px; }
.explore-filters input[type=number] { width: 4em; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table.explore { border-collapse: collapse; width: 100%; font-size: 14px; }
table.explore th, table.explore td { border-bottom: 1px solid #e4e4e4; padding: .25em .5em; text-align: left; }
table.explore td.num { text-align: right; font-variant-numeric: tabular-nums; }
.runs { display: flex; gap: 1em; align-items: flex-start; overflow-x: auto; }
.run-col { flex: 1 1 0; min-width: 260px; }
.run-col h2 { margin: .2em 0; font-size: 1.2em; }
.run-meta { margin: 0 0 .5em; font-size: 13px; color: #444; }
.run-col ol { list-style: none; padding: 0; margin: 0; }
.run-col li { border: 1px solid #ddd; border-radius: 6px; margin: 0 0 .6em; padding: .4em; }
.run-col li.instance { border-color: #2a7; border-width: 2px; }
.run-col li.outside { border-style: dashed; }
.outside-note { font-size: 13px; margin: .2em 0 .3em; color: #444; }
.run-col video { width: 100%; aspect-ratio: 16 / 9; max-height: 200px; background: #000; }
.badge { display: inline-block; border-radius: 4px; padding: 0 .4em; font-size: 12px; color: #fff; background: #888; }
.badge-instance { background: #2a7; } .badge-human { background: #27c; } .badge-proxy { background: #a6c; }
.badge-auto { background: #c80; } .badge-unjudged { background: #999; } .badge-disagreement { background: #d33; }
.badge-irrelevant { background: #555; }
.state-irrelevant .badge { text-decoration: line-through; }
.ok { color: #2a7; font-weight: 600; } .miss { color: #c33; }
.rank { color: #666; font-size: 12px; }
.notice { background: #eef8ee; border: 1px solid #2a7; padding: .4em .8em; border-radius: 4px; }
.pager a { margin-right: .8em; }
@media (max-width: 760px) {
  .runs { flex-direction: column; }
  .run-col { min-width: 0; width: 100%; }
  .explore-filters { gap: .4em .8em; }
}
"""


@dataclass
class ExploreData:
    """Precomputed view data over one collection, its runs and labels (t2v; ranks are 1-based)."""

    collection: Collection
    runs: dict[str, Run]
    judgments: Judgments
    k: int
    tops: dict[str, npt.NDArray[np.int64]]  # run -> (Q, K) video indices (-1 = none)
    scores: dict[str, npt.NDArray[np.float64]]  # run -> (Q, K) scores
    state: dict[
        str, npt.NDArray[np.int8]
    ]  # run -> (Q, K): -1 unjudged, 0 irrelevant, 1 relevant, 2 disagreement
    source: dict[str, npt.NDArray[np.int16]]  # run -> (Q, K) source code of the label (-1 none)
    lengths: npt.NDArray[np.int64]
    positives: npt.NDArray[np.int64]
    n_unjudged: dict[str, npt.NDArray[np.int64]]  # run -> (Q,) unjudged videos in that run's top K
    n_disagree: npt.NDArray[np.int64]
    correct1: npt.NDArray[np.bool_]  # (runs, Q): top-1 relevant
    differ: npt.NDArray[np.bool_]
    inst_rank: dict[str, npt.NDArray[np.int64]]  # run -> (Q,) rank of the instance video (0 = not retrieved)
    inst_score: dict[str, npt.NDArray[np.float64]]  # run -> (Q,) its score
    inst_ties: dict[str, npt.NDArray[np.int64]]  # run -> (Q,) other videos with exactly its score
    jkeys: npt.NDArray[np.int64]  # sorted caption * n_videos + video of every label
    jgrade: npt.NDArray[np.float64]
    jsrc: npt.NDArray[np.int16]
    ukeys: npt.NDArray[np.int64]  # sorted keys of the unresolved (disagreement) pairs
    search_text: str  # "\n".join(" " + normalised text + " ") over the distinct normalised texts
    search_starts: npt.NDArray[np.int64]  # offset of each distinct text in search_text
    search_text_id: npt.NDArray[np.int64]  # (Q,) index of each caption's distinct normalised text

    @property
    def any_unjudged(self) -> npt.NDArray[np.bool_]:
        """(Q,) True where some run's top K holds an unjudged video."""
        out = np.zeros(self.collection.n_captions, bool)
        for v in self.n_unjudged.values():
            out |= v > 0
        return out

    def pair_state(self, q: int, v: int) -> tuple[int, int]:
        """``(state, source code)`` of the pair (caption ``q``, video ``v``), as in :attr:`state`."""
        key = np.array([q * self.collection.n_videos + v], np.int64)
        hit, pos = _lookup(self.jkeys, key)
        if hit[0]:
            return int(self.jgrade[pos[0]] > 0), int(self.jsrc[pos[0]])
        dis, _ = _lookup(self.ukeys, key)
        return (2 if dis[0] else -1), -1


def _lookup(
    keys_sorted: npt.NDArray[np.int64], keys: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    if keys_sorted.size == 0:
        return np.zeros(keys.shape, bool), np.zeros(keys.shape, np.int64)
    pos = np.minimum(np.searchsorted(keys_sorted, keys), keys_sorted.size - 1)
    return keys_sorted[pos] == keys, pos


def _run_tables(
    run: Run, caption_video: npt.NDArray[np.int64], k: int
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.int64],
]:
    """Top K, their scores, and the instance video's rank/score/ties, reading the run once in row blocks."""
    nq, nv = run.shape
    step = max(1, _BLOCK_ELEMS // max(nv, 1))
    tops, top_s, rank, inst_s, ties = [], [], [], [], []
    doc = np.arange(nv, dtype=np.int64)[None, :]
    for s in range(0, nq, step):
        block = np.asarray(run.block(Direction.T2V, s, min(s + step, nq)), dtype=np.float64)
        t = topk_block(block, k)
        valid = t >= 0
        tops.append(t)
        top_s.append(np.where(valid, np.take_along_axis(block, np.where(valid, t, 0), axis=1), np.nan))
        g = caption_video[s : s + block.shape[0]]
        gs = block[np.arange(block.shape[0]), g]
        eq = block == gs[:, None]
        r = 1 + (block > gs[:, None]).sum(axis=1) + (eq & (doc < g[:, None])).sum(axis=1)
        retrieved = ~np.isneginf(gs)
        rank.append(np.where(retrieved, r, 0))
        inst_s.append(gs)
        ties.append(np.where(retrieved, eq.sum(axis=1) - 1, 0))
    return (
        np.concatenate(tops),
        np.concatenate(top_s),
        np.concatenate(rank).astype(np.int64),
        np.concatenate(inst_s),
        np.concatenate(ties).astype(np.int64),
    )


def _search_index(collection: Collection) -> tuple[str, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """One text of every distinct normalised caption, each padded by spaces (for whole-word search),
    the offset of each in it, and for each caption the number of its distinct text."""
    index = collection.normalised_index
    texts = [f" {t} " for t in index]
    lengths = np.fromiter((len(t) + 1 for t in texts), np.int64, count=len(texts))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    text_id = np.empty(collection.n_captions, np.int64)
    for i, rows in enumerate(index.values()):
        text_id[rows] = i
    return "\n".join(texts), starts, text_id


def build_data(
    collection: Collection, runs: Mapping[str, Run], judgments: Judgments | None, k: int = 10
) -> ExploreData:
    """Precompute the explorer's tables (see :class:`ExploreData`)."""
    j = judgments if judgments is not None else collection.instance_judgments()
    nq, nv = collection.shape
    order = np.argsort(j.rows * nv + j.cols)
    jkeys = (j.rows * nv + j.cols)[order]
    jgrade = j.grades[order]
    jsrc = j.source_codes[order]
    ukeys = (
        np.unique(j.unresolved[:, 0] * nv + j.unresolved[:, 1])
        if j.unresolved.size
        else np.zeros(0, np.int64)
    )
    tops, scores, state, source, unjudged = {}, {}, {}, {}, {}
    inst_rank, inst_score, inst_ties = {}, {}, {}
    qcol = np.arange(nq, dtype=np.int64)[:, None]
    for name, run in runs.items():
        t, ts, rk, isc, ti = _run_tables(run, collection.caption_video, k)
        valid = t >= 0
        keys = qcol * nv + np.where(valid, t, 0)
        hit, pos = _lookup(jkeys, keys)
        hit &= valid
        dis, _ = _lookup(ukeys, keys)
        st = np.where(hit, (jgrade[pos] > 0).astype(np.int8), np.int8(-1)).astype(np.int8)
        st = np.where(~hit & dis & valid, np.int8(2), st)
        tops[name], state[name], scores[name] = t, st, ts
        source[name] = np.where(hit, jsrc[pos], -1).astype(np.int16)
        # per run: its own top K (an unlisted slot, -1, is not a video)
        unjudged[name] = (valid & ((st == -1) | (st == 2))).sum(axis=1).astype(np.int64)
        inst_rank[name], inst_score[name], inst_ties[name] = rk, isc, ti
    names = list(runs)
    n_disagree = (
        np.bincount(j.unresolved[:, 0], minlength=nq)[:nq] if j.unresolved.size else np.zeros(nq, np.int64)
    )
    correct1 = np.array([state[n][:, 0] == 1 for n in names]) if names else np.zeros((0, nq), bool)
    differ = np.asarray(correct1.any(axis=0) & ~correct1.all(axis=0) if names else np.zeros(nq, bool), bool)
    positives = np.bincount(j.rows[j.grades > 0], minlength=nq)
    text, starts, text_id = _search_index(collection)
    return ExploreData(
        collection=collection,
        runs=dict(runs),
        judgments=j,
        k=k,
        tops=tops,
        scores=scores,
        state=state,
        source=source,
        lengths=collection.caption_lengths(),
        positives=positives,
        n_unjudged=unjudged,
        n_disagree=n_disagree.astype(np.int64),
        correct1=correct1,
        differ=differ,
        inst_rank=inst_rank,
        inst_score=inst_score,
        inst_ties=inst_ties,
        jkeys=jkeys,
        jgrade=np.asarray(jgrade, np.float64),
        jsrc=np.asarray(jsrc, np.int16),
        ukeys=ukeys,
        search_text=text,
        search_starts=starts,
        search_text_id=text_id,
    )


def search(data: ExploreData, text: str) -> npt.NDArray[np.bool_]:
    """(Q,) True for captions whose normalised text holds the normalised ``text`` as whole words."""
    needle = normalise(text)
    if not needle:
        return np.ones(data.collection.n_captions, bool)
    pattern = re.compile(re.escape(f" {needle} "))
    offsets = np.fromiter((m.start() for m in pattern.finditer(data.search_text)), np.int64)
    which = np.searchsorted(data.search_starts, offsets, side="right") - 1
    return np.isin(data.search_text_id, which)


def filter_queries(
    data: ExploreData,
    *,
    min_len: int | None = None,
    max_len: int | None = None,
    unjudged: bool = False,
    disagreement: bool = False,
    differ: bool = False,
    text: str | None = None,
) -> npt.NDArray[np.int64]:
    """Indices of the queries passing every given filter."""
    ok = np.ones(data.collection.n_captions, bool)
    if min_len is not None:
        ok &= data.lengths >= min_len
    if max_len is not None:
        ok &= data.lengths <= max_len
    if unjudged:
        ok &= data.any_unjudged
    if disagreement:
        ok &= data.n_disagree > 0
    if differ:
        ok &= data.differ
    if text:  # whole words of the normalised caption (see the module docstring)
        ok &= search(data, text)
    return np.flatnonzero(ok)


_STATE = {-1: "unjudged", 0: "irrelevant", 1: "relevant", 2: "disagreement"}


def _cell(
    data: ExploreData, q: int, v: int, rank: int, score: float, st: int, code: int, video_url: Any
) -> dict[str, Any]:
    coll = data.collection
    vid = coll.video_ids[v]
    url = video_url(vid)
    kind = data.judgments.sources[code].split(":", 1)[0] if code >= 0 else _STATE[st]
    return {
        "rank": rank,
        "video": v,
        "video_id": vid,
        "score": score,
        "state": _STATE[st],
        "source": data.judgments.sources[code] if code >= 0 else None,
        "badge": kind,
        "selectable": st in (-1, 2),
        "url": url,
        # the media fragment makes the browser show the frame at 0.1 s as the poster
        "player_url": (url if "#" in url else f"{url}#t=0.1") if url else None,
        "instance": v == int(coll.caption_video[q]),
    }


def query_view(data: ExploreData, q: int, video_url: Any) -> dict[str, Any]:
    """Everything the query page shows for caption index ``q``.

    Per run: its top K cells, unjudged@K, and the instance video's rank; ``outside`` is the
    instance video's cell when that rank is beyond K (None when it is inside or not retrieved).
    """
    coll = data.collection
    gt = int(coll.caption_video[q])
    columns = []
    for name in data.runs:
        cells = []
        for r in range(data.k):
            v = int(data.tops[name][q, r])
            if v < 0:
                continue
            st, code = int(data.state[name][q, r]), int(data.source[name][q, r])
            cells.append(_cell(data, q, v, r + 1, float(data.scores[name][q, r]), st, code, video_url))
        rank = int(data.inst_rank[name][q])
        outside = None
        if rank > data.k:
            st, code = data.pair_state(q, gt)
            outside = _cell(data, q, gt, rank, float(data.inst_score[name][q]), st, code, video_url)
        columns.append(
            {
                "run": name,
                "cells": cells,
                "unjudged": int(data.n_unjudged[name][q]),
                "instance_rank": rank,
                "instance_ties": int(data.inst_ties[name][q]),
                "outside": outside,
            }
        )
    return {
        "index": q,
        "caption_id": coll.caption_ids[q],
        "caption": coll.captions[q],
        "length": int(data.lengths[q]),
        "positives": int(data.positives[q]),
        "gt_video": coll.video_ids[gt],
        "columns": columns,
    }


def queue_pairs(data: ExploreData, pairs: list[tuple[int, int]], store: Any, dataset: str) -> tuple[int, int]:
    """Add unjudged ``(caption, video)`` pairs to the annotation queue; ``(added, already there)``.

    Pairs already labelled are refused (they are not unjudged). Each item carries the runs and
    ranks at which they show the pair, and every caption id sharing the normalised text.
    """
    from fireval.judging.pool import PoolItem

    coll = data.collection
    nv = coll.n_videos
    items = []
    for q, v in pairs:
        if not (0 <= q < coll.n_captions and 0 <= v < nv):
            raise HTTPException(status_code=422, detail=f"pair {q}:{v} is outside the collection")
        hit, _ = _lookup(data.jkeys, np.array([q * nv + v]))
        if hit[0]:
            raise HTTPException(
                status_code=422, detail=f"pair {coll.caption_ids[q]}/{coll.video_ids[v]} is already judged"
            )
        runs = {
            name: int(np.flatnonzero(data.tops[name][q] == v)[0]) + 1
            for name in data.runs
            if (data.tops[name][q] == v).any()
        }
        same = coll.normalised_index.get(normalise(coll.captions[q]), [q])
        items.append(PoolItem(coll.captions[q], [coll.caption_ids[i] for i in same], coll.video_ids[v], runs))
    added, present = store.add_items(items, dataset)
    return int(added), int(present)


def get_data(request: Request) -> ExploreData:
    """The app's explorer data (404 when the app was given no collection/runs).

    The labels are ``WebConfig.judgments`` (instance and ``-l`` labels) merged with the app's
    own store's labels (FIRE precedence) when the app has a store and
    ``WebConfig.explore_store_labels`` is on: a pair the store has labelled is never shown as
    unjudged. Built on first use and rebuilt when the store's labels change
    (:func:`fireval.judging.store.labels_version`, one indexed read per page).
    """
    app = request.app
    cfg = app.state.config
    if cfg.collection is None or not cfg.runs:
        raise HTTPException(
            status_code=404, detail="the explorer needs a collection and runs (fireval serve --runs ...)"
        )
    store: Any = getattr(app.state, "store", None)
    own = store is not None and getattr(cfg, "explore_store_labels", True)
    if own:
        from fireval.judging.store import labels_version

        version: int | None = labels_version(store)
    else:
        version = None
    cached = getattr(app.state, "explore_data", None)
    if cached is not None and getattr(app.state, "explore_version", None) == version:
        return cached  # type: ignore[no-any-return]
    with _LOCK:
        cached = getattr(app.state, "explore_data", None)
        if cached is not None and getattr(app.state, "explore_version", None) == version:
            return cached  # type: ignore[no-any-return]
        runs = cfg.runs if isinstance(cfg.runs, Mapping) else {r.name: r for r in cfg.runs}
        judgments = cfg.judgments
        if own:
            from fireval.core.judgments import FIRE_PRECEDENCE, merge
            from fireval.judging.store import store_labels

            base = judgments if judgments is not None else cfg.collection.instance_judgments()
            judgments = merge([base, store_labels(store, cfg.collection)], FIRE_PRECEDENCE)
        cached = build_data(cfg.collection, runs, judgments, int(cfg.extra.get("explore_k", 10)))
        app.state.explore_data, app.state.explore_version = cached, version
    return cached


def _flag(value: str | None) -> bool:
    return value not in (None, "", "0", "false", "off")


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        raise HTTPException(status_code=422, detail=f"expected an integer, got {value!r}") from None


def _render(request: Request, name: str, ctx: dict[str, Any]) -> Response:
    templates = request.app.state.templates
    cfg = request.app.state.config
    return templates.TemplateResponse(
        request, name, {"csrf_token": csrf_token(request), "dataset": cfg.dataset, **ctx}
    )  # type: ignore[no-any-return]


@router.get("/explore/explore.css")
def explore_css() -> Response:
    return Response(_CSS, media_type="text/css")


@router.get("/explore")
def explore_list(request: Request, user: Any = Depends(current_user)) -> Response:
    data = get_data(request)
    qp = request.query_params
    filters = {
        "min_len": _int(qp.get("min_len")),
        "max_len": _int(qp.get("max_len")),
        "unjudged": _flag(qp.get("unjudged")),
        "disagreement": _flag(qp.get("disagreement")),
        "differ": _flag(qp.get("differ")),
        "text": qp.get("q") or None,
    }
    idx = filter_queries(data, **filters)  # type: ignore[arg-type]
    page = max(1, _int(qp.get("page")) or 1)
    shown = idx[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    names = list(data.runs)
    rows = [
        {
            "index": int(q),
            "caption": data.collection.captions[q],
            "length": int(data.lengths[q]),
            "positives": int(data.positives[q]),
            "disagree": int(data.n_disagree[q]),
            "per_run": [
                {
                    "correct": bool(data.correct1[i, q]),
                    "rank": int(data.inst_rank[n][q]),
                    "unjudged": int(data.n_unjudged[n][q]),
                }
                for i, n in enumerate(names)
            ],
            "differ": bool(data.differ[q]),
        }
        for q in shown
    ]
    keep = {k: v for k, v in qp.items() if k != "page"}
    return _render(
        request,
        "explore.html",
        {
            "user": user,
            "rows": rows,
            "runs": names,
            "total": int(idx.size),
            "page": page,
            "pages": max(1, -(-int(idx.size) // PAGE_SIZE)),
            "filters": filters,
            "k": data.k,
            "base_query": urlencode(keep),
            "check_warnings": request.app.state.config.extra.get("check_warnings", []),
        },
    )


@router.get("/explore/query/{index}")
def explore_query(index: int, request: Request, user: Any = Depends(current_user)) -> Response:
    data = get_data(request)
    if not 0 <= index < data.collection.n_captions:
        raise HTTPException(status_code=404, detail="no such query")
    cfg = request.app.state.config
    view = query_view(data, index, lambda vid: video_url(cfg, vid))
    queued = request.query_params.get("queued")
    present = request.query_params.get("present")
    return _render(
        request,
        "explore_query.html",
        {"user": user, "view": view, "k": data.k, "queued": queued, "present": present},
    )


@router.post("/explore/queue", dependencies=[Depends(require_csrf)])
async def explore_queue(request: Request, user: Any = Depends(require_admin)) -> Response:
    data = get_data(request)
    form = await request.form()
    pairs = []
    for raw in form.getlist("pair"):
        try:
            q, v = (int(x) for x in str(raw).split(":"))
        except ValueError:
            raise HTTPException(
                status_code=422, detail=f"malformed pair {raw!r}; expected caption:video"
            ) from None
        pairs.append((q, v))
    if not pairs:
        raise HTTPException(status_code=422, detail="no pairs selected")
    # every field is checked before anything is written: a bad back= must not queue the pairs
    back = _int(str(form.get("back", ""))) if form.get("back") else pairs[0][0]
    if back is None or not 0 <= back < data.collection.n_captions:
        raise HTTPException(status_code=422, detail=f"back: no caption {back!r}")
    cfg = request.app.state.config
    added, present = queue_pairs(data, pairs, request.app.state.store, cfg.dataset or data.collection.name)
    # say how many were already queued, else "0 added" after ticking boxes looks like a failure
    more = f"&present={present}" if present else ""
    return RedirectResponse(f"/explore/query/{back}?queued={added}{more}", status_code=303)
