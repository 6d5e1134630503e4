"""Prefetch of the next item's video on the annotation page: ``GET /api/peek``.

After an answer the page is reloaded with the item the server hands out; without a prefetch the
annotator then waits for that video to come over the network. While item N is on screen, the
page (``static/annotate.js``) asks ``GET /api/peek`` for the video of the item the hand-out
would give this annotator after N (:meth:`fireval.judging.store.Store.peek_next`) and loads it
into a hidden ``<video preload="auto">``, which puts it in the browser's HTTP cache; the next
page's player then reads it from there.

Correctness, with several annotators:

- The peek is read only: it claims nothing, opens no assignment, marks no gold item shown and
  holds no lease, so the hand-out's rules (votes per item, nobody labels an item twice, lease
  expiry through ``release_stale``, gold mixing) are exactly those without it.
- It is a prediction: another annotator may take the item meanwhile, a lease may expire, an
  undo may reopen an item. The page never answers the predicted item: it shows and answers
  only what ``GET /annotate`` hands out, so a stale prediction costs one wasted download.
- Blind judging: the answer is the video URL alone (the same URL the player would load when
  the item is shown: ``/videos/<token>``, the session's opaque token of the video,
  :mod:`fireval.judging.blinding`): no item id, video id, caption, gold marker, run, score or
  anyone's answer, and the same shape for gold and pool items.
- A GET that changes nothing: no CSRF token needed; ``Cache-Control: no-store`` like every API
  answer. Videos are still served only by the app's ``/videos`` route (or the configured URL
  template, which the CSP's ``media-src`` already allows).

Turned off by ``WebConfig.prefetch = False`` (the page then has no ``data-prefetch``).

The page asks once per item, so the route is answered before the middleware stack
(:func:`peek_fast_path`, :class:`fireval.web.app.FirevalApp`): one statement on the event loop's
connections on PostgreSQL, one worker-thread call (session check and peek) otherwise; the
route below is the same answer through the full stack.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool
from starlette.requests import cookie_parser
from starlette.types import Receive, Scope, Send

from fireval.judging.blinding import VideoTokens
from fireval.web.deps import blind_video_url, video_of
from fireval.web.fastpath import UNAVAILABLE, cookie_reader, detail, json_responder, unavailable
from fireval.web.security import SESSION_ID, current_user

if TYPE_CHECKING:
    from fireval.judging.store import Store
    from fireval.web.config import WebConfig

log = logging.getLogger("fireval.web")

router = APIRouter()


def enabled(request: Request) -> bool:
    """Whether the app prefetches (``WebConfig.prefetch``, on by default)."""
    return bool(getattr(request.app.state.config, "prefetch", True))


@router.get("/api/peek")
async def api_peek(request: Request) -> dict[str, Any]:
    """``{"video_url": ...}`` of the item the annotator would be given after the current one
    (``null`` when none would follow, no video source is configured or prefetch is off); 401
    without a live session.

    On PostgreSQL with no gold item due, one statement on a connection the event loop drives
    (:meth:`fireval.judging.store.Store.peek_next_async`: the page asks this once per item, and
    a worker thread per request cost more than the answer itself under load); otherwise
    :meth:`~fireval.judging.store.Store.peek_next` in a worker thread, as before."""
    store = request.app.state.store
    sid = request.session.get(SESSION_ID)
    if isinstance(sid, str) and enabled(request) and store.can_peek_async():
        live, video = await store.peek_next_async(sid)
        if not live:
            raise HTTPException(status_code=401, detail="login required")
    else:
        user = await run_in_threadpool(current_user, request)  # 401 without a live session
        if not enabled(request):
            return {"video_url": None}
        item = await run_in_threadpool(store.peek_next, user.id)
        video = item.video_id if item else None
    return {"video_url": video_of(request)(video) if video else None}


def peek_fast_path(
    store: Store, config: WebConfig, csp: bytes
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """``GET /api/peek`` as a bare ASGI callable: the same answers as :func:`api_peek` through
    the full stack (401 ``login required`` without a live session, ``{"video_url": null}``
    when prefetch is off, 503 with ``Retry-After`` when the store is unreachable), with the
    headers :func:`fireval.web.fastpath.json_responder` gives."""
    import sqlalchemy as sa  # the exception types only

    from fireval.core import FirevalError

    respond = json_responder(csp)
    read_cookie = cookie_reader(config)
    on = bool(getattr(config, "prefetch", True))
    tokens = VideoTokens(config.secret_key)  # same secret, same tokens as app.state.video_tokens

    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        session: dict[str, Any] = {}
        for k, v in scope["headers"]:
            if k == b"cookie":
                value = cookie_parser(v.decode("latin-1")).get("fireval_session")
                if value is not None:
                    session = read_cookie(value)
                break
        sid = session.get(SESSION_ID)
        if not isinstance(sid, str):
            await respond(send, 401, detail("login required"))
            return
        try:
            if not on:
                live, video = await run_in_threadpool(store.session_user, sid) is not None, None
            elif store.can_peek_async():
                live, video = await store.peek_next_async(sid)
            elif store.can_peek_on_loop():  # SQLite: ~0.1 ms, cheaper than a thread hop
                live, video = store.peek_in_session(sid, on_loop=True)
            else:
                live, video = await run_in_threadpool(store.peek_in_session, sid)
        except (FirevalError, sa.exc.SQLAlchemyError, OSError) as exc:
            if not unavailable(store, exc):
                raise
            log.error("storage error on GET /api/peek: %s", exc)
            await respond(send, 503, detail(UNAVAILABLE), [(b"retry-after", b"5")])
            return
        if not live:
            await respond(send, 401, detail("login required"))
            return
        body = {"video_url": blind_video_url(config, tokens, sid, video) if video else None}
        await respond(send, 200, json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())

    return handle
