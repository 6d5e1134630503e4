"""``POST /api/labels``: the body's rules (:class:`LabelIn`, :func:`parse_label`) and the route
answered before the middleware stack (:func:`label_fast_path`, for requests that carry
``X-CSRF-Token``; :class:`fireval.web.app.FirevalApp` calls it).

:func:`parse_label` accepts and refuses exactly what the Pydantic model :class:`LabelIn` does,
without Pydantic; the route of :func:`fireval.web.app.create_app` and the fast path both use it,
so the two answer alike. Item ids are the page's opaque handles (:mod:`fireval.web.handles`).
All names are re-exported by :mod:`fireval.web.app`.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import cookie_parser
from starlette.types import Receive, Scope, Send

from fireval.core import FirevalError
from fireval.judging.blinding import VideoTokens
from fireval.judging.store import Store, StoreError
from fireval.web import security as sec
from fireval.web.config import WebConfig
from fireval.web.deps import answer_of, blind_message, blind_video_url, item_json
from fireval.web.fastpath import (
    UNAVAILABLE,
    cookie_reader,
    detail,
    json_responder,
    security_headers,
    unavailable,
)
from fireval.web.handles import ANSWER_INFO, UNKNOWN, Handles
from fireval.web.middleware import plain_response

log = logging.getLogger("fireval.web")


# item ids from the annotator's page are opaque handles (web.handles): JSON strings. A JSON integer
# (a raw store id, whatever its value) is well formed but names no item: 404 as an unknown handle,
# like any string that is not one; every other type (true, 1.5, null, [1], {...}) is 422.
StrictHandle = Annotated[str, Field(strict=True)] | Annotated[int, Field(strict=True)]


class LabelIn(BaseModel):
    item_id: StrictHandle
    label: str
    time_spent_ms: int | None = None
    next: bool = False


class UndoIn(BaseModel):
    item_id: StrictHandle | None = None


_TRUE = ("true", "1", "yes", "on", "t", "y")
_FALSE = ("false", "0", "no", "off", "f", "n")


def parse_label(raw: bytes) -> tuple[str | int, str, int | None, bool] | Response:
    """``(item_id, label, time_spent_ms, next)`` from a ``POST /api/labels`` body, or its 422.

    The rules of :class:`LabelIn` under Pydantic (checked by tests against the model):
    ``item_id`` a JSON string (the page's item handle, :mod:`fireval.web.handles`) or integer (a
    raw id: the caller answers 404 as for an unknown handle), not a boolean, float, null, list or
    object; ``label`` a string;
    ``time_spent_ms`` absent/null or an integer (an integral float, a boolean or a numeric
    string is taken, as Pydantic's lax mode does); ``next`` a boolean (also 0/1 and the usual
    words).
    Other keys are ignored.
    """
    problems: list[dict[str, Any]] = []

    def bad(loc: list[str], msg: str, kind: str) -> None:
        problems.append({"loc": loc, "msg": msg, "type": kind})

    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
        bad(["body"], "JSON decode error", "json_invalid")
    if not problems and not isinstance(data, dict):
        bad(["body"], "Input should be a valid dictionary or object", "model_attributes_type")
    if problems:
        return JSONResponse({"detail": problems}, status_code=422)
    item_id, label = data.get("item_id"), data.get("label")
    spent, want_next = data.get("time_spent_ms"), data.get("next", False)
    if "item_id" not in data:
        bad(["body", "item_id"], "Field required", "missing")
    elif type(item_id) not in (str, int):  # a bool is not an int here (strict, as the model)
        bad(["body", "item_id"], "Input should be a valid string or integer", "string_type")
    if "label" not in data:
        bad(["body", "label"], "Field required", "missing")
    elif not isinstance(label, str):
        bad(["body", "label"], "Input should be a valid string", "string_type")
    if spent is not None:
        integral = isinstance(spent, float) and spent.is_integer() and abs(spent) < 2**63
        numeric = isinstance(spent, str) and spent.strip().lstrip("+-").isdigit()
        if integral or numeric or isinstance(spent, bool):
            spent = int(spent)
        elif not isinstance(spent, int):
            bad(["body", "time_spent_ms"], "Input should be a valid integer", "int_type")
    if isinstance(want_next, str) and want_next.strip().lower() in _TRUE + _FALSE:
        want_next = want_next.strip().lower() in _TRUE
    elif type(want_next) in (int, float) and want_next in (0, 1):
        want_next = bool(want_next)
    elif not isinstance(want_next, bool):
        bad(["body", "next"], "Input should be a valid boolean", "bool_type")
    if problems:
        return JSONResponse({"detail": problems}, status_code=422)
    return item_id, label, spent, want_next


def label_fast_path(
    store: Store,
    config: WebConfig,
    csp: bytes,
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """``POST /api/labels`` as a bare ASGI callable (:class:`FirevalApp`), for requests with
    ``X-CSRF-Token``. The same checks, in the same order and with the same answers, as the
    middleware stack and the route: :class:`BodyLimit` (413), the signed session cookie
    (Starlette's ``SessionMiddleware`` format, signer and ``max_age``), CSRF (403,
    constant-time compare), :func:`parse_label` (422), the session id (401), then the store
    call, which checks the session inside its write transaction (401 when not live); store
    errors as the app's exception handlers answer them (503 with ``Retry-After``, the
    :class:`StoreError` status, 400). Responses carry :class:`SecurityHeaders`' headers,
    ``Cache-Control: no-store`` and ``Vary: Cookie`` (the session was read).
    """
    import sqlalchemy as sa  # the exception types only

    handles = Handles(config.secret_key)  # same secret, same handles as app.state.handles
    videos = VideoTokens(config.secret_key)  # as app.state.video_tokens
    answers = Handles(config.secret_key, ANSWER_INFO)  # as app.state.answer_handles
    cookie_name, limit = "fireval_session", config.max_body_bytes
    respond = json_responder(csp)
    read_cookie = cookie_reader(config)
    # the 413 of BodyLimit as SecurityHeaders sends it on the full stack (no session read yet)
    too_large_headers = [*security_headers(csp, config.secure_cookies), (b"cache-control", b"no-store")]

    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        csrf = cookie = None
        for k, v in scope["headers"]:
            if k == b"content-length":
                try:
                    too_big = int(v) > limit
                except ValueError:
                    too_big = True
                if too_big:
                    await plain_response(send, 413, b"request body too large", too_large_headers)
                    return
            elif k == b"x-csrf-token" and csrf is None:
                csrf = v.decode("latin-1")
            elif k == b"cookie" and cookie is None:
                cookie = v.decode("latin-1")
        session: dict[str, Any] = {}
        if cookie is not None:
            value = cookie_parser(cookie).get(cookie_name)
            if value is not None:
                session = read_cookie(value)
        expected = session.get(sec.SESSION_CSRF)
        if not expected or not csrf or not hmac.compare_digest(str(expected), csrf):
            await respond(send, 403, detail("missing or invalid CSRF token"))
            return
        chunks, seen = [], 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":  # the client went away: nothing to answer
                return
            chunk = msg.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                await plain_response(send, 413, b"request body too large", too_large_headers)
                return
            chunks.append(chunk)
            if not msg.get("more_body", False):
                break
        body = parse_label(b"".join(chunks))
        if isinstance(body, Response):
            await respond(send, body.status_code, bytes(body.body))
            return
        handle, label, spent, want_next = body
        sid = session.get(sec.SESSION_ID)
        if not isinstance(sid, str):
            await respond(send, 401, detail("login required"))
            return
        item_id = handles.decode(sid, handle)
        if item_id is None:  # a raw id, another session's handle: as an unknown item
            await respond(send, 404, detail(UNKNOWN))
            return
        try:
            if store.can_submit_async(item_id):
                res = await store.submit_in_session_async(sid, item_id, label, spent, claim_next=want_next)
            else:
                res = await run_in_threadpool(
                    store.submit_in_session, sid, item_id, label, spent, claim_next=want_next
                )
        except (FirevalError, sa.exc.SQLAlchemyError, OSError) as exc:
            if unavailable(store, exc):
                log.error("storage error on POST /api/labels: %s", exc)
                await respond(send, 503, detail(UNAVAILABLE), [(b"retry-after", b"5")])
            elif isinstance(exc, StoreError):  # named by its handle, as web.deps.blind_errors does
                await respond(send, exc.status, detail(blind_message(str(exc), item_id, str(handle))))
            elif isinstance(exc, FirevalError):
                await respond(send, 400, detail(str(exc)))
            else:  # pragma: no cover - not a storage error: the server's 500
                raise
            return
        if res is None:
            await respond(send, 401, detail("login required"))
            return
        out: dict[str, Any] = {
            "status": res.status,
            "answer": answer_of(answers, sid, res),
            "item_id": handle,
        }
        if want_next:
            out["next"] = item_json(
                res.next, handles.encoder(sid), lambda v: blind_video_url(config, videos, sid, v)
            )
        await respond(send, 200, json.dumps(out, separators=(",", ":")).encode())

    return handle
