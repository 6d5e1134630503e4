"""The annotator's campaign tools: guidelines, history, flags, skip reasons; the admin's review queue.

A router included by :func:`install` (one call in :func:`fireval.web.app.create_app`); the work is
done by the store (:mod:`fireval.judging.history`, :mod:`fireval.judging.flags`) and
:mod:`fireval.web.guidelines`. Settings come from ``app.state.config`` (``guidelines``: a
Markdown file or None for the FIRE default; ``open_explore``; ``gold_rate``, handed to the
store's :class:`~fireval.judging.gold.Gold`, which mixes gold items into the queues).

Blind judging: an annotator sees the caption and the video only, and items by opaque handles
(:mod:`fireval.web.handles`): every ``item_id`` below, sent or received, is the session's handle
of the item, never the store's id (gold items have telling ids); an unknown, foreign or raw id
gets 404 as an unknown item. Admin routes keep raw ids. Everything here answers with
the annotator's own answers (caption, video, label) and never with runs, models, scores,
instance labels or other annotators' answers; the explorer (which shows them) is for admins
unless the app runs with ``open_explore`` (:func:`explore_access`).

Pages and endpoints (POSTs check CSRF; form posts redirect back to ``/annotate`` with a status
line, the JSON API answers JSON):

- ``GET /guidelines`` (the rendered guideline; also shown on ``/annotate`` until dismissed),
  ``POST /guidelines/seen`` (dismiss: stored per annotator with the guideline's digest,
  :mod:`fireval.judging.seen`, so the panel appears at an annotator's first login ever and once
  more when the campaign's guideline text changes, not at each new session; the session only
  caches "this digest was acknowledged" to spare a read per page);
- ``GET /api/history?limit=N`` (own last answers, newest first; each with its ``answer`` handle,
  the one ``POST /api/labels`` gave, never a row id), ``POST /api/history/change``
  ``{item_id, label}`` and the form ``POST /annotate/change`` (a new audited event; the answer's
  id is kept). Gold answers are listed, changed and undone exactly as votes are (same fields,
  order, statuses and messages; :mod:`fireval.judging.gold`): a missing answer in the history
  would tell an item was gold. Gold accuracy keeps counting the first answer;
- ``POST /api/flags`` ``{item_id, reason, next}`` and ``POST /annotate/flag``: unsure, flag for
  review (the item is skipped by this annotator);
- ``POST /api/skip`` ``{item_id, reason, time_spent_ms, next}`` and ``POST /annotate/skip``: a
  skip that records why (``video failed`` when the player could not load the video);
- ``GET /api/peek`` (router of :mod:`fireval.web.annotate_prefetch`, installed here): the video
  URL of the item the annotator would be given next, which the page preloads;
- admin: ``GET /admin/review`` (open flags), ``POST /admin/review/resolve`` (``item_id``,
  ``resolution`` relevant | irrelevant | discard), ``GET /api/admin/review``.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, Field

from fireval.judging.flags import MAX_REASON
from fireval.judging.seen import GuidelinesSeen
from fireval.judging.store import Annotator
from fireval.web import annotate_prefetch
from fireval.web import guidelines as G
from fireval.web.deps import (
    answer_json,
    blind_errors,
    handle_of,
    item_from,
    item_json,
    video_of,
    video_url,
)
from fireval.web.security import csrf_token, current_user, require_admin, require_csrf

router = APIRouter()

SEEN_KEY = "guidelines_seen"
FLASH_KEY = "flash"
HISTORY_SHOWN = 10
GOLD_KEY_INFO = b"fireval gold positions v1"  # root of the gold schedule's key (another domain)

# an item handle (web.handles); a JSON integer (a raw id) is taken, then 404 as an unknown handle.
# No length limit here: any string that is not a handle is 404 "unknown item", as on /api/labels
# (the request body limit, WebConfig.max_body_bytes, is the guard against huge input)
Handle = Annotated[str, Field(strict=True)] | Annotated[int, Field(strict=True)]


class ChangeIn(BaseModel):
    item_id: Handle
    label: str


class FlagIn(BaseModel):
    item_id: Handle
    reason: str = Field(default="", max_length=4 * MAX_REASON)
    next: bool = False


class SkipIn(BaseModel):
    item_id: Handle
    reason: str = Field(default="", max_length=4 * MAX_REASON)
    time_spent_ms: int | None = None
    next: bool = False


def install(app: FastAPI) -> None:
    """Render the campaign's guideline once and add this router to ``app``."""
    cfg = app.state.config
    app.state.guidelines = G.load(getattr(cfg, "guidelines", None))
    app.state.guidelines_seen = GuidelinesSeen(app.state.store.db)
    app.state.store.gold.rate = float(getattr(cfg, "gold_rate", 0.0))
    # gold items at positions drawn per annotator, unknown to them (judging.gold._gold_turn): a
    # fixed spacing (every 1/rate-th item) would tell which items are gold. Keyed by the session
    # secret, so every --workers process draws the same positions.
    app.state.store.gold.key = hmac.new(str(cfg.secret_key).encode(), GOLD_KEY_INFO, hashlib.sha256).digest()
    app.include_router(router)
    app.include_router(annotate_prefetch.router)  # GET /api/peek: the next item's video


def explore_access(request: Request, user: Annotator = Depends(current_user)) -> Annotator:
    """Dependency of the explorer: admins only, unless the app was started with ``open_explore``."""
    if not user.is_admin and not getattr(request.app.state.config, "open_explore", False):
        raise HTTPException(status_code=403, detail="the explorer is for admins (annotators judge blind)")
    return user


def flash(request: Request, text: str) -> None:
    """A one-line status shown (in an aria-live region) on the next annotate page."""
    request.session[FLASH_KEY] = text[:300]


def guidelines_acknowledged(request: Request, user: Annotator) -> bool:
    """Whether ``user`` has acknowledged the current guideline (stored per annotator; the
    session caches a positive answer for the current digest)."""
    g: G.Guidelines = request.app.state.guidelines
    if request.session.get(SEEN_KEY) == g.digest:
        return True
    if request.app.state.guidelines_seen.needs(user.id, g.digest):
        return False
    request.session[SEEN_KEY] = g.digest
    return True


def annotate_context(request: Request, user: Annotator) -> dict[str, Any]:
    """Extra context of the annotate page: guideline, first-visit panel, own history, status line."""
    store = request.app.state.store
    g: G.Guidelines = request.app.state.guidelines
    return {
        "guideline": g.rule,
        "guidelines_html": g.html,
        "show_guidelines": not guidelines_acknowledged(request, user),
        "history": store.history.recent(user.id, HISTORY_SHOWN),
        "handle": handle_of(request),  # item ids in the page are the session's handles
        "video": video_of(request),  # history poster frames: videos by session token (judging.blinding)
        "flash": request.session.pop(FLASH_KEY, None),
        "max_reason": MAX_REASON,
        "prefetch": annotate_prefetch.enabled(request),  # the page preloads the next item's video
    }


def _page(request: Request, name: str, ctx: dict[str, Any]) -> Response:
    cfg = request.app.state.config
    return request.app.state.templates.TemplateResponse(  # type: ignore[no-any-return]
        request, name, {"csrf_token": csrf_token(request), "dataset": cfg.dataset, **ctx}
    )


async def _form_int(request: Request, *names: str) -> tuple[Any, list[int]]:
    form = await request.form()
    try:
        values = [int(str(form.get(n) or (0 if n == "time_spent_ms" else ""))) for n in names]
    except ValueError:
        raise HTTPException(status_code=422, detail=f"{', '.join(names)} must be integers") from None
    return form, values


async def _form_item(request: Request, *names: str) -> tuple[Any, int, list[int]]:
    """The form, the item behind its ``item_id`` handle (404 unless this session's) and the
    integer fields ``names`` (422)."""
    form, values = await _form_int(request, *names)
    return form, item_from(request, form.get("item_id")), values


# ---------------------------------------------------------------------- guidelines
@router.get("/guidelines")
def guidelines_page(request: Request, user: Annotator = Depends(current_user)) -> Response:
    g: G.Guidelines = request.app.state.guidelines
    return _page(
        request,
        "guidelines.html",
        {"user": user, "guidelines_html": g.html, "seen": guidelines_acknowledged(request, user)},
    )


@router.post("/guidelines/seen", dependencies=[Depends(require_csrf)])
def guidelines_seen(request: Request, user: Annotator = Depends(current_user)) -> Response:
    g: G.Guidelines = request.app.state.guidelines
    request.app.state.guidelines_seen.mark(user.id, g.digest)
    request.session[SEEN_KEY] = g.digest
    if "application/json" in request.headers.get("accept", ""):
        return Response('{"seen": true}', media_type="application/json")
    return RedirectResponse("/annotate", status_code=303)


# ---------------------------------------------------------------------- history
@router.get("/api/history")
def api_history(
    request: Request, limit: int = HISTORY_SHOWN, user: Annotator = Depends(current_user)
) -> dict[str, Any]:
    answers = request.app.state.store.history.recent(user.id, limit)
    handle, video = handle_of(request), video_of(request)
    out = []
    for a in answers:  # the answer's handle (as /api/labels gave it) in place of its row id
        d = {**a.as_json(), "item_id": handle(a.item_id), "answer": answer_json(request, a)}
        d.pop("label_id", None)
        d.pop("video_id", None)  # the video by its session token only (judging.blinding)
        d["video_url"] = video(a.video_id)
        out.append(d)
    return {"answers": out}


@router.post("/api/history/change", dependencies=[Depends(require_csrf)])
def api_change(request: Request, body: ChangeIn, user: Annotator = Depends(current_user)) -> dict[str, Any]:
    item_id = item_from(request, body.item_id)
    with blind_errors(item_id, str(body.item_id)):
        res = request.app.state.store.history.change(user.id, item_id, body.label)
    return {"status": res.status, "item_id": body.item_id, "label": res.label, "previous": res.previous}


@router.post("/annotate/change", dependencies=[Depends(require_csrf)])
async def annotate_change(request: Request, user: Annotator = Depends(current_user)) -> Response:
    form, item_id, _ = await _form_item(request)
    with blind_errors(item_id, str(form.get("item_id"))):
        res = request.app.state.store.history.change(user.id, item_id, str(form.get("label", "")))
    if res.status == "changed":
        flash(request, f"Changed your answer: {res.previous} → {res.label}.")
    else:
        flash(request, f"Your answer is already {res.label}: nothing changed.")
    return RedirectResponse("/annotate", status_code=303)


# ---------------------------------------------------------------------- flags and skips
@router.post("/api/flags", dependencies=[Depends(require_csrf)])
def api_flag(request: Request, body: FlagIn, user: Annotator = Depends(current_user)) -> dict[str, Any]:
    item_id = item_from(request, body.item_id)
    with blind_errors(item_id, str(body.item_id)):
        _, res = request.app.state.store.flags.flag(user.id, item_id, body.reason, claim_next=body.next)
    # no flag row id: pool and gold flags are numbered in tables of their own, which would tell them apart
    out: dict[str, Any] = {"status": "flagged", "item_id": body.item_id}
    if body.next:
        nxt = res.next if res is not None else request.app.state.store.next_item(user.id)
        out["next"] = item_json(nxt, handle_of(request), video_of(request))
    return out


@router.post("/annotate/flag", dependencies=[Depends(require_csrf)])
async def annotate_flag(request: Request, user: Annotator = Depends(current_user)) -> Response:
    form, item_id, _ = await _form_item(request)
    with blind_errors(item_id, str(form.get("item_id"))):
        request.app.state.store.flags.flag(user.id, item_id, str(form.get("reason", "")))
    flash(request, "Flagged for review; an expert will look at it.")
    return RedirectResponse("/annotate", status_code=303)


@router.post("/api/skip", dependencies=[Depends(require_csrf)])
def api_skip(request: Request, body: SkipIn, user: Annotator = Depends(current_user)) -> dict[str, Any]:
    store = request.app.state.store
    item_id = item_from(request, body.item_id)
    with blind_errors(item_id, str(body.item_id)):
        res = store.flags.skip(user.id, item_id, body.reason, body.time_spent_ms, claim_next=body.next)
    out: dict[str, Any] = {"status": res.status, "answer": answer_json(request, res), "item_id": body.item_id}
    if body.next:
        out["next"] = item_json(res.next, handle_of(request), video_of(request))
    return out


@router.post("/annotate/skip", dependencies=[Depends(require_csrf)])
async def annotate_skip(request: Request, user: Annotator = Depends(current_user)) -> Response:
    form, item_id, (spent,) = await _form_item(request, "time_spent_ms")
    reason = str(form.get("skip_reason", "") or "")
    with blind_errors(item_id, str(form.get("item_id"))):
        request.app.state.store.flags.skip(user.id, item_id, reason, spent, claim_next=True)
    flash(request, "Skipped" + (f" ({reason[:MAX_REASON]})." if reason else "."))
    return RedirectResponse("/annotate", status_code=303)


# ---------------------------------------------------------------------- admin review queue
@router.get("/admin/review")
def admin_review(request: Request, user: Annotator = Depends(require_admin)) -> Response:
    store = request.app.state.store
    cfg = request.app.state.config
    return _page(
        request,
        "review.html",
        {
            "user": user,
            "queue": store.flags.review_queue(),
            "summary": store.flags.summary(),
            "video_link": lambda vid: video_url(cfg, vid),
            "notice": request.session.pop(FLASH_KEY, None),
        },
    )


@router.get("/api/admin/review")
def api_admin_review(request: Request, user: Annotator = Depends(require_admin)) -> dict[str, Any]:
    store = request.app.state.store
    return {"queue": store.flags.review_queue(), "summary": store.flags.summary()}


@router.post("/admin/review/resolve", dependencies=[Depends(require_csrf)])
async def admin_resolve(request: Request, user: Annotator = Depends(require_admin)) -> Response:
    form, (item_id,) = await _form_int(request, "item_id")
    resolution = str(form.get("resolution", ""))
    n = request.app.state.store.flags.resolve_flagged(user.id, item_id, resolution)
    flash(request, f"Item {item_id}: {n} flag(s) resolved ({resolution}).")
    return RedirectResponse("/admin/review", status_code=303)
