"""The fireval web app: annotate, adjudicate, export (and the run explorer router).

``create_app(WebConfig(...))`` builds a FastAPI app over one annotation store. Pages are
server-side Jinja2 templates (autoescaped) with a small vanilla-JS file for keyboard shortcuts;
nothing is loaded from a CDN.

Pages and endpoints
- ``GET/POST /login`` (token, optionally the account name), ``POST /logout`` (ends the
  server-side session: a copy of the cookie stops working too).
- ``GET /annotate``: the current item (claimed from the queue), guideline, video, buttons
  relevant (r) / irrelevant (i) / skip (s), undo (u), progress bar.
  ``POST /annotate/label`` and ``/annotate/undo``: form posts (CSRF field), redirect back.
- JSON API (CSRF via ``X-CSRF-Token``): ``GET /api/session``, ``GET /api/next``,
  ``GET /api/progress``, ``POST /api/labels`` ``{item_id, label, time_spent_ms, next}`` (answers
  ``{status, answer, item_id[, next]}``: ``answer`` is the answer's opaque handle, never its row
  id; with ``next: true`` the next item is claimed in the same transaction and returned; answered
  before the middleware stack when it carries ``X-CSRF-Token``, see :class:`FirevalApp`),
  ``POST /api/undo`` ``{item_id}``.
- ``GET /videos/<token>``: the annotator's videos, by opaque per-session tokens
  (:mod:`fireval.judging.blinding`); ``GET /videos/<file>`` for admins (their pages name
  files). Files under ``video_dir`` only (no traversal, no symlink escape); no
  ``Content-Disposition``, no ``Last-Modified``, an opaque per-token ``ETag``
  (:class:`VideoFileResponse`); range requests as Starlette serves them.
- Admin: ``GET /admin`` (queue status, throughput, agreement by number of labels,
  Krippendorff's α, disagreements), ``POST /admin/adjudicate``, ``POST /admin/annotators``,
  ``POST /admin/annotators/<id>/<action>`` (``revoke`` sessions, ``rotate`` the token,
  ``disable``, ``enable``: each ends the annotator's sessions at once), ``GET /admin/export``
  (the CLI's FIRE JSON export and its provenance sidecar, as one zip; refused with the CLI's
  message where the CLI refuses).

Hardening: bodies above ``max_body_bytes`` get 413 before the app reads them; responses carry
CSP (scripts from self only), ``X-Frame-Options: DENY`` and ``nosniff``; pages and API answers
are ``Cache-Control: no-store``. Sessions are server-side and login attempts throttled per
client address and per (account, address), never per account alone
(:class:`fireval.web.security.LoginThrottle`). Templates print every value with Unicode's bidi embeddings,
overrides and isolates replaced (:data:`BIDI_CONTROLS`): in user text an unclosed one would
reorder the text after it.

Blind judging: the annotator's page and JSON name items only by opaque per-session handles
(:mod:`fireval.web.handles`; gold items' store ids would tell them apart); every ``item_id`` an
annotator sends is such a handle, mapped back at this edge. Videos likewise: by per-session
tokens (:mod:`fireval.judging.blinding`), never by their dataset ids (public: an id leads to
the video's original caption), except where ``video_url_template`` puts the id in the URL.
Admin pages keep raw ids.

Errors: a refused request gets its 4xx (an item handle that is not this session's, a raw id
included, is 404 as an unknown item, whether sent as a string or as a JSON integer of any value;
an ``item_id`` of any other JSON type (boolean, float, list, object, null) or none is 422; a refusal's message
names the item by its handle); a storage failure (database unreachable, disk full) gets 503
with ``Retry-After``: JSON for the API and scripts, a readable page for a browser's form,
never a traceback, and the keep-alive connection stays usable. Nothing is acknowledged
unless committed.

Modules: the settings are :mod:`fireval.web.config`, the middleware :mod:`fireval.web.middleware`,
``POST /api/labels``'s body rules and fast path :mod:`fireval.web.label_api` (their names are
re-exported here); the app and its routes are this module, the top of ``fireval.web``: nothing
below it imports it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import Receive, Scope, Send

from fireval.core import FirevalError
from fireval.judging.blinding import VideoTokens
from fireval.judging.engine import is_storage_error
from fireval.judging.store import Annotator, Store, StoreError, StoreUnavailableError
from fireval.web import annotate_extras, annotate_prefetch
from fireval.web import security as sec
from fireval.web.config import WebConfig as WebConfig
from fireval.web.deps import (
    answer_json,
    blind_errors,
    handle_of,
    item_from,
    item_json,
    video_of,
    video_url,
)
from fireval.web.explore import router as explore_router
from fireval.web.fastpath import UNAVAILABLE
from fireval.web.handles import ANSWER_INFO, Handles
from fireval.web.label_api import LabelIn as LabelIn
from fireval.web.label_api import StrictHandle as StrictHandle
from fireval.web.label_api import UndoIn as UndoIn
from fireval.web.label_api import label_fast_path as label_fast_path
from fireval.web.label_api import parse_label as parse_label
from fireval.web.middleware import BodyLimit as BodyLimit
from fireval.web.middleware import SecurityHeaders as SecurityHeaders
from fireval.web.middleware import _without_cookie as _without_cookie  # tests import it from here

log = logging.getLogger("fireval.web")
HERE = Path(__file__).resolve().parent
TEMPLATES = Jinja2Templates(directory=str(HERE / "templates"))
# Unicode's explicit bidirectional embeddings, overrides and isolates (LRE..RLO, LRI..PDI). In
# user text (a caption, a video id, an annotator's name, a flag reason) an unclosed one reverses
# or reorders the text *after* it on the page (the rest of a vote list, a token): a value
# printed by a template shows each as U+FFFD instead, so the text keeps its logical order (as
# stored, and as models read it) and a name like "ann<RLO>" does not pass for "ann". Marks
# (LRM, RLM, ALM) stay: they affect no text beyond their neighbours.
BIDI_CONTROLS = dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A)], "\ufffd")


def _printable(value: Any) -> Any:
    """Jinja ``finalize``: every printed string with :data:`BIDI_CONTROLS` replaced (escaping follows)."""
    if isinstance(value, str):
        cleaned = str.translate(value, BIDI_CONTROLS)
        return type(value)(cleaned) if isinstance(value, Markup) else cleaned
    return value


TEMPLATES.env.finalize = _printable
GUIDELINE = (
    "Relevant only if every element of the caption is present in the video; when in doubt, not relevant."
)


class FirevalApp(FastAPI):
    """FastAPI with two routes answered before its middleware stack: ``POST /api/labels`` and
    ``GET /api/peek``.

    The hot path (every answer of every annotator, and the page's prefetch request after it)
    costs the server's CPU per label, and the generic stack (proxy/telemetry/session/exception
    middleware, routing, ``Request``, a thread per dependency) costs more than the store's
    work. :attr:`fast_label` (set by :func:`create_app`) answers the label route itself when
    the request carries ``X-CSRF-Token``, :attr:`fast_peek` every ``GET /api/peek``, with the
    same checks in the same order and the same answers; any other request (a form post,
    another method) takes the full stack.
    """

    fast_label: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None
    fast_peek: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.root_path:
            path, method = scope["path"], scope["method"]
            fast = None
            if path == "/api/labels" and method == "POST":
                if any(k == b"x-csrf-token" for k, _ in scope["headers"]):
                    fast = self.fast_label
            elif path == "/api/peek" and method == "GET":
                fast = self.fast_peek
            if fast is not None:
                await fast(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


class VideoFileResponse(FileResponse):
    """A video file without what would name it or date it: no ``Content-Disposition`` (no file
    name is given), no ``Last-Modified``, and the entity tag the route passes in ``headers``
    (:meth:`fireval.judging.blinding.VideoTokens.etag`, opaque per token) instead of Starlette's
    (an MD5 of the file's time and size, alike in every session).

    Written against Starlette's ``FileResponse`` (1.10): :meth:`set_stat_headers` sets only the
    length; ``If-Range`` (:meth:`_should_use_range`, which would look up ``Last-Modified``) is
    honoured only when it is that entity tag, else the whole file is sent (RFC 9110 13.1.5).
    Ranges are served by the parent class (206, 416, multipart).
    """

    def set_stat_headers(self, stat_result: os.stat_result) -> None:
        self.headers.setdefault("content-length", str(stat_result.st_size))

    def _should_use_range(self, http_if_range: str) -> bool:
        etag = self.headers.get("etag")
        return etag is not None and not http_if_range.startswith("W/") and http_if_range == etag


def safe_video_path(video_dir: str | Path, name: str) -> Path | None:
    """``video_dir/name`` if it is a regular file inside ``video_dir`` (after resolving links), else None."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/"):
        return None
    if any(part in ("", ".", "..") for part in name.split("/")):
        return None
    root = Path(video_dir).resolve()
    try:  # a name the file system refuses (too long, ...) names no video: 404, not a storage 503
        target = (root / name).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            return None
    except (OSError, RuntimeError, ValueError):
        return None
    return target


def _wants_html(request: Request) -> bool:
    return request.method == "GET" and "text/html" in request.headers.get("accept", "")


def create_app(config: WebConfig) -> FastAPI:
    """Build the app over ``config.db_url`` (migrating the store to the newest schema)."""
    store = Store(config.db_url, shared=config.workers > 1)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()

    app = FirevalApp(title="fireval", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.config = config
    app.state.store = store
    app.state.templates = TEMPLATES
    app.state.handles = Handles(config.secret_key)  # item ids as annotators see them
    app.state.answer_handles = Handles(config.secret_key, ANSWER_INFO)  # answers as they see them
    video_tokens = VideoTokens(config.secret_key)  # videos as they see them
    app.state.video_tokens = video_tokens
    limiter = sec.LoginThrottle(
        config.login_max_failures, config.login_account_max_failures, config.login_window_seconds
    )
    app.state.login_limiter = limiter

    media = "'self'"
    if config.video_url_template:
        parts = urlsplit(config.video_url_template)
        if parts.scheme and parts.netloc:
            media += f" {parts.scheme}://{parts.netloc}"
    csp = (
        f"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"media-src {media}; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    )
    app.add_middleware(
        SessionMiddleware,
        secret_key=config.secret_key,
        session_cookie="fireval_session",
        max_age=config.session_max_age,
        same_site="strict",
        https_only=config.secure_cookies,
    )
    app.add_middleware(BodyLimit, limit=config.max_body_bytes)
    # outermost: every response, the 413 of BodyLimit too, carries the security headers
    app.add_middleware(SecurityHeaders, csp=csp, hsts=config.secure_cookies)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    def error(
        request: Request,
        status: int,
        detail: Any,
        headers: dict[str, str] | None = None,
        title: str = "Error",
    ) -> Response:
        """JSON for the API and scripts; an error page for a browser (a form post included)."""
        browser = "text/html" in request.headers.get("accept", "")
        if request.url.path.startswith("/api/") or not browser:
            return JSONResponse({"detail": detail}, status_code=status, headers=headers)
        return TEMPLATES.TemplateResponse(
            request,
            "message.html",
            {"title": title, "message": str(detail), "user": None},
            status_code=status,
            headers=headers,
        )

    def unavailable(request: Request, exc: BaseException) -> Response:
        # the details go to the server log; the client learns only that it may retry
        log.error("storage error on %s %s: %s", request.method, request.url.path, exc)
        return error(
            request,
            503,
            UNAVAILABLE,
            {"Retry-After": "5"},
            title="Temporarily unavailable",
        )

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 401 and _wants_html(request):
            return RedirectResponse("/login", status_code=303)
        return error(request, exc.status_code, exc.detail, getattr(exc, "headers", None))

    @app.exception_handler(FirevalError)
    async def _store_error(request: Request, exc: FirevalError) -> Response:
        if isinstance(exc, StoreUnavailableError):
            return unavailable(request, exc)
        return error(request, exc.status if isinstance(exc, StoreError) else 400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> Response:
        # the problems without the rejected input: it may be a NaN or a huge number that JSON
        # cannot carry (FastAPI's default answer would fail to render and become a 500)
        detail = [
            {
                "loc": [str(p) for p in e.get("loc", ())],
                "msg": str(e.get("msg", "")),
                "type": str(e.get("type", "")),
            }
            for e in exc.errors()
        ]
        return error(request, 422, detail)

    async def _raw_storage_error(request: Request, exc: Exception) -> Response:
        """A driver or OS error that escaped the store's translation: still a 503, never a 500."""
        if not is_storage_error(exc, store.engine):  # pragma: no cover - only storage types are registered
            raise exc
        return unavailable(request, exc)

    import sqlalchemy as sa  # the exception types only

    for exc_type in (sa.exc.SQLAlchemyError, OSError):
        app.add_exception_handler(exc_type, _raw_storage_error)

    def page(request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> Response:
        ctx = {
            "csrf_token": sec.csrf_token(request),
            "dataset": config.dataset,
            # where a video can be watched (None without --video-dir / --video-url-template)
            "video_link": lambda video_id: video_url(config, video_id),
            **ctx,
        }
        return TEMPLATES.TemplateResponse(request, name, ctx, status_code=status)

    # ------------------------------------------------------------------ login
    @app.get("/login")
    def login_form(request: Request) -> Response:
        return page(request, "login.html", {"user": None, "error": None})

    @app.post("/login", dependencies=[Depends(sec.require_csrf)])
    async def login_submit(request: Request) -> Response:
        form = await request.form()
        token, name = form.get("token"), form.get("name")
        name = name.strip()[:200] if isinstance(name, str) else ""
        host = request.client.host if request.client else None

        def too_many(wait: int) -> Response:
            resp = page(
                request,
                "login.html",
                {"user": None, "error": f"Too many failed attempts; try again in {wait} s."},
                status=429,
            )
            resp.headers["Retry-After"] = str(wait)
            return resp

        if wait := limiter.retry_after(host, name):  # this address, and this address naming this account
            return too_many(wait)
        user = store.authenticate(token.strip()) if isinstance(token, str) else None
        if user is None or (name and user.name != name):
            limiter.failed(host, name)
            return page(request, "login.html", {"user": None, "error": "Unknown token."}, status=401)
        # no check per account alone: failures naming it elsewhere must not keep its owner out
        sec.login(request, user, config.session_max_age)
        return RedirectResponse("/admin" if user.is_admin else "/annotate", status_code=303)

    @app.post("/logout", dependencies=[Depends(sec.require_csrf)])
    def logout(request: Request) -> Response:
        sec.logout(request)
        return RedirectResponse("/login", status_code=303)

    @app.get("/")
    def root(request: Request) -> Response:
        return RedirectResponse("/annotate", status_code=303)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok", "schema": store.revision or ""}

    # ------------------------------------------------------------------ annotate
    @app.get("/annotate")
    def annotate(request: Request, user: Annotator = Depends(sec.current_user)) -> Response:
        item = store.next_item(user.id)
        prog = store.progress(user.id)
        pct = 100.0 * prog["done"] / prog["needed"] if prog["needed"] else 100.0
        return page(
            request,
            "annotate.html",
            {
                "user": user,
                "item": item,
                "video_url": video_of(request)(item.video_id) if item else None,
                "guideline": GUIDELINE,
                "progress": prog,
                "percent": round(pct, 1),
                **annotate_extras.annotate_context(request, user),  # guidelines, history, status line
            },
        )

    @app.post("/annotate/label", dependencies=[Depends(sec.require_csrf)])
    async def annotate_label(request: Request, user: Annotator = Depends(sec.current_user)) -> Response:
        form = await request.form()
        try:
            spent = int(str(form.get("time_spent_ms") or 0))
        except ValueError:
            raise HTTPException(status_code=422, detail="time_spent_ms must be an integer") from None
        item_id = item_from(request, form.get("item_id"))  # the page's handle; 404 otherwise
        with blind_errors(item_id, str(form.get("item_id"))):
            store.submit(user.id, item_id, str(form.get("label", "")), spent, claim_next=True)
        return RedirectResponse("/annotate", status_code=303)

    @app.post("/annotate/undo", dependencies=[Depends(sec.require_csrf)])
    def annotate_undo(request: Request, user: Annotator = Depends(sec.current_user)) -> Response:
        undone = store.undo(user.id)
        annotate_extras.flash(
            request, "Undone: your last answer is withdrawn." if undone else "Nothing to undo."
        )
        return RedirectResponse("/annotate", status_code=303)

    # ------------------------------------------------------------------ JSON API
    @app.get("/api/session")
    def api_session(request: Request, user: Annotator = Depends(sec.current_user)) -> dict[str, Any]:
        return {"user": user.name, "role": user.role, "csrf_token": sec.csrf_token(request)}

    @app.get("/api/next")
    def api_next(request: Request, user: Annotator = Depends(sec.current_user)) -> dict[str, Any]:
        return {"item": item_json(store.next_item(user.id), handle_of(request), video_of(request))}

    @app.get("/api/progress")
    def api_progress(user: Annotator = Depends(sec.current_user)) -> dict[str, int]:
        return store.progress(user.id)

    async def api_label(request: Request) -> Response:
        """The hot path: one answer, and with ``next`` the next item, in one write transaction.

        A plain Starlette route (FastAPI's dependency solving and Pydantic model cost more CPU
        than the store's work): the CSRF check, then :func:`parse_label` (the same 422 answers
        as a Pydantic model would give), then the session is checked inside the answer's write
        transaction (a revoked session writes nothing). On SQLite the task awaits the group
        writer directly; otherwise the store call runs in a worker thread.
        """
        await sec.require_csrf(request)
        body = parse_label(await request.body())
        if isinstance(body, Response):
            return body
        handle, label, spent, want_next = body
        sid = request.session.get(sec.SESSION_ID)
        if not isinstance(sid, str):
            raise HTTPException(status_code=401, detail="login required")
        item_id = item_from(request, handle)  # 404 for a raw id or another session's handle
        with blind_errors(item_id, str(handle)):
            if store.can_submit_async(item_id):
                res = await store.submit_in_session_async(sid, item_id, label, spent, claim_next=want_next)
            else:
                res = await run_in_threadpool(
                    store.submit_in_session, sid, item_id, label, spent, claim_next=want_next
                )
        if res is None:
            raise HTTPException(status_code=401, detail="login required")
        out: dict[str, Any] = {"status": res.status, "answer": answer_json(request, res), "item_id": handle}
        if want_next:
            out["next"] = item_json(res.next, handle_of(request), video_of(request))
        return Response(json.dumps(out, separators=(",", ":")), media_type="application/json")

    app.router.add_route("/api/labels", api_label, methods=["POST"])
    app.fast_label = label_fast_path(store, config, csp.encode())
    app.fast_peek = annotate_prefetch.peek_fast_path(store, config, csp.encode())

    @app.post("/api/undo", dependencies=[Depends(sec.require_csrf)])
    def api_undo(
        request: Request, body: UndoIn, user: Annotator = Depends(sec.current_user)
    ) -> dict[str, Any]:
        if body.item_id is None:
            undone = store.undo(user.id)
        else:
            with blind_errors(item_id := item_from(request, body.item_id), str(body.item_id)):
                undone = store.undo(user.id, item_id)
        return {"item_id": None if undone is None else handle_of(request)(undone)}

    # ------------------------------------------------------------------ videos
    @app.api_route("/videos/{name:path}", methods=["GET", "HEAD"])
    def videos(request: Request, name: str, user: Annotator = Depends(sec.current_user)) -> Response:
        """A video by this session's token (judging.blinding); by file name for admins only
        (and for everyone with ``open_explore``, whose explorer names files)."""
        if not config.video_dir:
            raise HTTPException(status_code=404, detail="no video directory configured")
        sid = request.session.get(sec.SESSION_ID)
        video_id = video_tokens.decode(sid, name) if isinstance(sid, str) else None
        path = None
        if video_id is not None:
            path = safe_video_path(config.video_dir, video_id + config.video_ext)
        elif user.is_admin or config.open_explore:
            path = safe_video_path(config.video_dir, name)
        try:
            stat = path.stat() if path is not None else None
        except OSError:
            stat = None
        if path is None or stat is None or not isinstance(sid, str):
            raise HTTPException(status_code=404, detail="no such video")
        # cacheable by this browser only: the next item's video, prefetched while the annotator
        # looks at the current one (web.annotate_prefetch), and a looping player's every pass come
        # from the cache (FileResponse answers no conditional request with 304, so without a
        # lifetime each use would download the whole file again)
        headers = {"Cache-Control": "private, max-age=3600", "ETag": video_tokens.etag(sid, name, stat)}
        return VideoFileResponse(path, headers=headers, stat_result=stat)

    # ------------------------------------------------------------------ admin
    def admin_page(
        request: Request, user: Annotator, new_token: tuple[str, str] | None = None, notice: str | None = None
    ) -> Response:
        return page(
            request,
            "admin.html",
            {
                "user": user,
                "status": store.status(),
                "disagreements": store.disagreements(),
                "annotators": store.annotator_info(),
                "new_token": new_token,  # (name, token) of an annotator just created or rotated: shown once
                "notice": notice,
            },
        )

    @app.get("/admin")
    def admin(request: Request, user: Annotator = Depends(sec.require_admin)) -> Response:
        return admin_page(request, user)

    @app.post("/admin/adjudicate", dependencies=[Depends(sec.require_csrf)])
    async def admin_adjudicate(request: Request, user: Annotator = Depends(sec.require_admin)) -> Response:
        form = await request.form()
        try:
            item_id = int(str(form.get("item_id", "")))
        except ValueError:
            raise HTTPException(status_code=422, detail="item_id must be an integer") from None
        store.adjudicate(user.id, item_id, str(form.get("label", "")))
        return RedirectResponse("/admin", status_code=303)

    @app.post("/admin/annotators", dependencies=[Depends(sec.require_csrf)])
    async def admin_add(request: Request, user: Annotator = Depends(sec.require_admin)) -> Response:
        form = await request.form()
        ann, token = store.add_annotator(str(form.get("name", "")), str(form.get("role", "annotator")))
        return admin_page(request, user, (ann.name, token))

    @app.post("/admin/annotators/{annotator_id}/{action}", dependencies=[Depends(sec.require_csrf)])
    def admin_annotator_action(
        request: Request, annotator_id: int, action: str, user: Annotator = Depends(sec.require_admin)
    ) -> Response:
        """Revoke an annotator's sessions, rotate their token, disable or enable them."""
        if action not in ("revoke", "rotate", "disable", "enable"):
            raise HTTPException(status_code=404, detail=f"unknown action {action!r}")
        if annotator_id == user.id and action in ("disable", "rotate"):
            raise HTTPException(status_code=409, detail=f"you cannot {action} your own account here")
        if action == "rotate":
            ann, token = store.rotate_token(annotator_id)
            return admin_page(
                request, user, (ann.name, token), f"New token for {ann.name}; their sessions ended."
            )
        if action == "revoke":
            n = store.revoke_sessions(annotator_id)
            return admin_page(request, user, notice=f"Ended {n} session(s).")
        ann = store.set_enabled(annotator_id, action == "enable")
        return admin_page(request, user, notice=f"{ann.name} {action}d; their sessions ended.")

    @app.get("/admin/export")
    def admin_export(user: Annotator = Depends(sec.require_admin), extended: bool = False) -> Response:
        """The CLI's export (``fireval judgments export``: strict data model, ``--model-name``
        mapping, provenance sidecar) as one zip of the pair (:func:`fireval.judging.export.export_archive`);
        a store the CLI would refuse is refused with its message (422). ``?extended=1`` is the
        CLI's ``--extended`` (other run names and datasets; not valid for the authors' tools)."""
        from fireval.core import InputError
        from fireval.judging.export import export_archive

        try:
            data, _ = export_archive(store, config.dataset, model_names=config.model_names, extended=extended)
        except InputError as exc:
            raise HTTPException(
                status_code=422,
                detail=f"{exc}. Map run names with `fireval serve --model-name RUN=MODEL`, or download "
                "fireval's extended format (the CLI's --extended: not valid for the authors' tools).",
            ) from None
        return Response(
            data,
            media_type="application/zip",
            headers={
                "Content-Disposition": f'attachment; filename="fire_labels{"_extended" if extended else ""}.zip"'
            },
        )

    @app.get("/admin/status.json")
    def admin_status(user: Annotator = Depends(sec.require_admin)) -> Response:
        return Response(json.dumps(store.status()), media_type="application/json")

    # the run explorer (analysis helper) shares this app, its sessions and base template
    app.include_router(explore_router, dependencies=[Depends(annotate_extras.explore_access)])
    annotate_extras.install(app)  # guidelines, history, flags, review queue

    return app
