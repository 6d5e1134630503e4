"""The run explorer: query-by-query evidence inside the fireval web app.

Pages (any logged-in user; data from ``WebConfig.collection`` / ``runs`` / ``judgments``):

- ``GET /explore``: the t2v query list with filters — caption length (``min_len``/``max_len``),
  ``unjudged`` (some run's top K holds an unjudged video), ``disagreement`` (annotators
  disagreed on one of the query's pairs), ``differ`` (the runs disagree on C@1: one has a
  relevant video first and another does not), and a text search ``q``.
- ``GET /explore/query/{index}``: the top K of every run side by side, each video with its
  label badge (instance / human / proxy / auto / unjudged / disagreement) and a video player.
- ``POST /explore/queue`` (admin only, CSRF-checked form): sends the selected unjudged
  (caption, video) pairs to the annotation queue with
  :meth:`fireval.judging.store.Store.add_items`; provenance = the runs and ranks that show the pair.

Everything shown is precomputed once per app (vectorised top-K and label look-ups) and kept on
``app.state``. ``WebConfig.extra["explore_k"]`` sets K (default 10).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import numpy as np
import numpy.typing as npt
from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from fireval.analysis.overlap import topk
from fireval.core import Collection, Direction, Judgments, Run, normalise
from fireval.web.security import csrf_token, current_user, require_admin, require_csrf

router = APIRouter()

_LOCK = threading.Lock()
PAGE_SIZE = 50
_CSS = """
.explore-filters { display: flex; flex-wrap: wrap; gap: .6em 1.2em; align-items: end; margin: .5em 0 1em; }
.explore-filters label { font-size: 14px; }
.explore-filters input[type=number] { width: 4em; }
table.explore { border-collapse: collapse; width: 100%; font-size: 14px; }
table.explore th, table.explore td { border-bottom: 1px solid #e4e4e4; padding: .25em .5em; text-align: left; }
.runs { display: flex; gap: 1em; align-items: flex-start; overflow-x: auto; }
.run-col { flex: 1 1 0; min-width: 260px; }
.run-col ol { list-style: none; padding: 0; margin: 0; }
.run-col li { border: 1px solid #ddd; border-radius: 6px; margin: 0 0 .6em; padding: .4em; }
.run-col li.instance { border-color: #2a7; border-width: 2px; }
.run-col video { width: 100%; max-height: 160px; background: #000; }
.badge { display: inline-block; border-radius: 4px; padding: 0 .4em; font-size: 12px; color: #fff; background: #888; }
.badge-instance { background: #2a7; } .badge-human { background: #27c; } .badge-proxy { background: #a6c; }
.badge-auto { background: #c80; } .badge-unjudged { background: #999; } .badge-disagreement { background: #d33; }
.badge-irrelevant { background: #555; }
.state-irrelevant .badge { text-decoration: line-through; }
.ok { color: #2a7; font-weight: 600; } .miss { color: #c33; }
.notice { background: #eef8ee; border: 1px solid #2a7; padding: .4em .8em; border-radius: 4px; }
.pager a { margin-right: .8em; }
"""


@dataclass
class ExploreData:
    """Precomputed view data over one collection, its runs and labels (t2v)."""

    collection: Collection
    runs: dict[str, Run]
    judgments: Judgments
    k: int
    tops: dict[str, npt.NDArray[np.int64]]  # run -> (Q, K) video indices
    scores: dict[str, npt.NDArray[np.float64]]  # run -> (Q, K) scores
    state: dict[
        str, npt.NDArray[np.int8]
    ]  # run -> (Q, K): -1 unjudged, 0 irrelevant, 1 relevant, 2 disagreement
    source: dict[str, npt.NDArray[np.int16]]  # run -> (Q, K) source code of the label (-1 none)
    lengths: npt.NDArray[np.int64]
    positives: npt.NDArray[np.int64]
    n_unjudged: npt.NDArray[np.int64]  # unjudged videos in the union of the runs' top K
    n_disagree: npt.NDArray[np.int64]
    correct1: npt.NDArray[np.bool_]  # (runs, Q): top-1 relevant
    differ: npt.NDArray[np.bool_]


def _lookup(
    keys_sorted: npt.NDArray[np.int64], keys: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    if keys_sorted.size == 0:
        return np.zeros(keys.shape, bool), np.zeros(keys.shape, np.int64)
    pos = np.minimum(np.searchsorted(keys_sorted, keys), keys_sorted.size - 1)
    return keys_sorted[pos] == keys, pos


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
    tops, scores, state, source = {}, {}, {}, {}
    qcol = np.arange(nq, dtype=np.int64)[:, None]
    for name, run in runs.items():
        t = topk(run, Direction.T2V, k)
        valid = t >= 0
        keys = qcol * nv + np.where(valid, t, 0)
        hit, pos = _lookup(jkeys, keys)
        hit &= valid
        dis, _ = _lookup(ukeys, keys)
        st = np.where(hit, (jgrade[pos] > 0).astype(np.int8), np.int8(-1)).astype(np.int8)
        st = np.where(~hit & dis & valid, np.int8(2), st)
        tops[name], state[name] = t, st
        source[name] = np.where(hit, jsrc[pos], -1).astype(np.int16)
        block = np.vstack([run.block(Direction.T2V, s, min(s + 4096, nq)) for s in range(0, nq, 4096)])
        scores[name] = np.where(valid, np.take_along_axis(block, np.where(valid, t, 0), axis=1), np.nan)
    names = list(runs)
    allt = np.concatenate([tops[n] for n in names], axis=1)
    alls = np.concatenate([state[n] for n in names], axis=1)
    # distinct unjudged videos in the union of the top K (sort each row, count new values)
    tu = np.where((alls == -1) | (alls == 2), allt, -1)
    srt = np.sort(tu, axis=1)
    first = np.ones(srt.shape, bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    n_unjudged = ((srt >= 0) & first).sum(axis=1)
    n_disagree = (
        np.bincount(j.unresolved[:, 0], minlength=nq)[:nq] if j.unresolved.size else np.zeros(nq, np.int64)
    )
    correct1 = np.array([state[n][:, 0] == 1 for n in names]) if names else np.zeros((0, nq), bool)
    differ = np.asarray(correct1.any(axis=0) & ~correct1.all(axis=0) if names else np.zeros(nq, bool), bool)
    positives = np.bincount(j.rows[j.grades > 0], minlength=nq)
    return ExploreData(
        collection,
        dict(runs),
        j,
        k,
        tops,
        scores,
        state,
        source,
        collection.caption_lengths(),
        positives,
        n_unjudged.astype(np.int64),
        n_disagree.astype(np.int64),
        correct1,
        differ,
    )


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
        ok &= data.n_unjudged > 0
    if disagreement:
        ok &= data.n_disagree > 0
    if differ:
        ok &= data.differ
    if text:  # substring of the normalised caption; texts are normalised once per collection
        needle = normalise(text)
        hit = np.zeros_like(ok)
        for norm, rows in data.collection.normalised_index.items():
            if needle in norm:
                hit[rows] = True
        ok &= hit
    return np.flatnonzero(ok)


_STATE = {-1: "unjudged", 0: "irrelevant", 1: "relevant", 2: "disagreement"}


def query_view(data: ExploreData, q: int, video_url: Any) -> dict[str, Any]:
    """Everything the query page shows for caption index ``q``."""
    coll = data.collection
    kinds = [s.split(":", 1)[0] for s in data.judgments.sources]
    columns = []
    for name in data.runs:
        cells = []
        for r in range(data.k):
            v = int(data.tops[name][q, r])
            if v < 0:
                continue
            st = int(data.state[name][q, r])
            code = int(data.source[name][q, r])
            vid = coll.video_ids[v]
            cells.append(
                {
                    "rank": r + 1,
                    "video": v,
                    "video_id": vid,
                    "score": float(data.scores[name][q, r]),
                    "state": _STATE[st],
                    "source": data.judgments.sources[code] if code >= 0 else None,
                    "badge": kinds[code] if code >= 0 else _STATE[st],
                    "selectable": st in (-1, 2),
                    "url": video_url(vid),
                    "instance": v == int(coll.caption_video[q]),
                }
            )
        columns.append({"run": name, "cells": cells})
    return {
        "index": q,
        "caption_id": coll.caption_ids[q],
        "caption": coll.captions[q],
        "length": int(data.lengths[q]),
        "positives": int(data.positives[q]),
        "gt_video": coll.video_ids[int(coll.caption_video[q])],
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
    jkeys = np.sort(data.judgments.rows * nv + data.judgments.cols)
    items = []
    for q, v in pairs:
        if not (0 <= q < coll.n_captions and 0 <= v < nv):
            raise HTTPException(status_code=422, detail=f"pair {q}:{v} is outside the collection")
        hit, _ = _lookup(jkeys, np.array([q * nv + v]))
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
    """The app's explorer data, built on first use (404 when the app was given no collection/runs)."""
    app = request.app
    cached = getattr(app.state, "explore_data", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    cfg = app.state.config
    if cfg.collection is None or not cfg.runs:
        raise HTTPException(
            status_code=404, detail="the explorer needs a collection and runs (fireval serve --runs ...)"
        )
    runs = cfg.runs if isinstance(cfg.runs, Mapping) else {r.name: r for r in cfg.runs}
    with _LOCK:
        cached = getattr(app.state, "explore_data", None)
        if cached is None:
            cached = build_data(cfg.collection, runs, cfg.judgments, int(cfg.extra.get("explore_k", 10)))
            app.state.explore_data = cached
    return cached  # type: ignore[no-any-return]


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
            "unjudged": int(data.n_unjudged[q]),
            "disagree": int(data.n_disagree[q]),
            "correct": [bool(data.correct1[i, q]) for i in range(len(names))],
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
        },
    )


@router.get("/explore/query/{index}")
def explore_query(index: int, request: Request, user: Any = Depends(current_user)) -> Response:
    from fireval.web.app import video_url

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
    cfg = request.app.state.config
    added, present = queue_pairs(data, pairs, request.app.state.store, cfg.dataset or data.collection.name)
    back = _int(str(form.get("back", ""))) if form.get("back") else pairs[0][0]
    # say how many were already queued, else "0 added" after ticking boxes looks like a failure
    more = f"&present={present}" if present else ""
    return RedirectResponse(f"/explore/query/{back}?queued={added}{more}", status_code=303)
