"""The fireval web app: annotate, adjudicate, export (and the run explorer router).

``create_app(WebConfig(...))`` builds a FastAPI app over one annotation store. Pages are
server-side Jinja2 templates (autoescaped) with a small vanilla-JS file for keyboard shortcuts;
nothing is loaded from a CDN.

Pages and endpoints
- ``GET/POST /login`` (token), ``POST /logout``.
- ``GET /annotate``: the current item (claimed from the queue), guideline, video, buttons
  relevant (r) / irrelevant (i) / skip (s), undo (u), progress bar.
  ``POST /annotate/label`` and ``/annotate/undo``: form posts (CSRF field), redirect back.
- JSON API (CSRF via ``X-CSRF-Token``): ``GET /api/session``, ``GET /api/next``,
  ``GET /api/progress``, ``POST /api/labels`` ``{item_id, label, time_spent_ms, next}`` (with
  ``next: true`` the next item is claimed in the same transaction and returned),
  ``POST /api/undo`` ``{item_id}``.
- ``GET /videos/<file>``: files under ``video_dir`` only (no traversal, no symlink escape).
- Admin: ``GET /admin`` (queue status, throughput, agreement by number of labels,
  Krippendorff's α, disagreements), ``POST /admin/adjudicate``, ``POST /admin/annotators``,
  ``GET /admin/export`` (FIRE JSON).

Hardening: bodies above ``max_body_bytes`` get 413 before the app reads them; responses carry
CSP (scripts from self only), ``X-Frame-Options: DENY`` and ``nosniff``; pages and API answers
are ``Cache-Control: no-store``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fireval.core import FirevalError
from fireval.judging.store import Annotator, ItemView, Store, StoreError
from fireval.web import security as sec

HERE = Path(__file__).resolve().parent
TEMPLATES = Jinja2Templates(directory=str(HERE / "templates"))
GUIDELINE = (
    "Relevant only if every element of the caption is present in the video; when in doubt, not relevant."
)


@dataclass
class WebConfig:
    """Settings of one web app instance (kept on ``app.state.config``).

    ``db_url``: annotation store (SQLite path/URL or PostgreSQL URL). Videos come from
    ``video_dir`` (``<video_id><video_ext>``) or from ``video_url_template`` (``{video_id}``
    is replaced, URL-quoted). ``collection``/``runs``/``judgments`` are optional data for the
    explorer.
    """

    db_url: str
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    dataset: str | None = None
    video_dir: str | Path | None = None
    video_url_template: str | None = None
    video_ext: str = ".mp4"
    secure_cookies: bool = False
    max_body_bytes: int = 64 * 1024
    session_max_age: int = 12 * 3600
    collection: Any = None
    runs: Any = None
    judgments: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


class BodyLimit:
    """ASGI middleware: reject request bodies larger than ``limit`` bytes with 413."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers", []):
            if k == b"content-length":
                try:
                    too_big = int(v) > self.limit
                except ValueError:
                    too_big = True
                if too_big:
                    await _plain(send, 413, b"request body too large")
                    return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge()
            return msg

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await _plain(send, 413, b"request body too large")


class _TooLarge(Exception):
    pass


async def _plain(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class SecurityHeaders:
    """ASGI middleware adding CSP and related headers to every response.

    Pages and API answers (everything but ``/static/`` and ``/videos/``) also get
    ``Cache-Control: no-store``: they hold login tokens, CSRF tokens and labels, which must not
    stay in a shared or back-button cache after logout.
    """

    def __init__(self, app: ASGIApp, csp: str) -> None:
        self.app, self.csp = app, csp.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        cacheable = str(scope.get("path", "")).startswith(("/static/", "/videos/"))

        async def wrapped(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                headers = list(msg.get("headers", []))
                headers += [
                    (b"content-security-policy", self.csp),
                    (b"x-frame-options", b"DENY"),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                ]
                if not cacheable and not any(k.lower() == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                msg = {**msg, "headers": headers}
            await send(msg)

        await self.app(scope, receive, wrapped)


class LabelIn(BaseModel):
    item_id: int
    label: str
    time_spent_ms: int | None = None
    next: bool = False


class UndoIn(BaseModel):
    item_id: int | None = None


def video_url(config: WebConfig, video_id: str) -> str | None:
    """Where the player loads ``video_id`` from (URL template, the app's /videos route, or none)."""
    if config.video_url_template:
        return config.video_url_template.replace("{video_id}", quote(video_id, safe=""))
    if config.video_dir:
        return f"/videos/{quote(video_id + config.video_ext, safe='')}"
    return None


def safe_video_path(video_dir: str | Path, name: str) -> Path | None:
    """``video_dir/name`` if it is a regular file inside ``video_dir`` (after resolving links), else None."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/"):
        return None
    if any(part in ("", ".", "..") for part in name.split("/")):
        return None
    root = Path(video_dir).resolve()
    try:
        target = (root / name).resolve()
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(root) or not target.is_file():
        return None
    return target


def _wants_html(request: Request) -> bool:
    return request.method == "GET" and "text/html" in request.headers.get("accept", "")


def create_app(config: WebConfig) -> FastAPI:
    """Build the app over ``config.db_url`` (migrating the store to the newest schema)."""
    store = Store(config.db_url)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()

    app = FastAPI(title="fireval", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.config = config
    app.state.store = store
    app.state.templates = TEMPLATES

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
    app.add_middleware(SecurityHeaders, csp=csp)
    app.add_middleware(BodyLimit, limit=config.max_body_bytes)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    def error(request: Request, status: int, detail: Any) -> Response:
        """JSON for the API and scripts; an error page for a browser (a form post included)."""
        browser = "text/html" in request.headers.get("accept", "")
        if request.url.path.startswith("/api/") or not browser:
            return JSONResponse({"detail": detail}, status_code=status)
        return TEMPLATES.TemplateResponse(
            request,
            "message.html",
            {"title": "Error", "message": str(detail), "user": None},
            status_code=status,
        )

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 401 and _wants_html(request):
            return RedirectResponse("/login", status_code=303)
        return error(request, exc.status_code, exc.detail)

    @app.exception_handler(FirevalError)
    async def _store_error(request: Request, exc: FirevalError) -> Response:
        return error(request, exc.status if isinstance(exc, StoreError) else 400, str(exc))

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
        token = form.get("token")
        user = store.authenticate(token.strip()) if isinstance(token, str) else None
        if user is None:
            return page(request, "login.html", {"user": None, "error": "Unknown token."}, status=401)
        sec.login(request, user)
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
        return {"status": "ok", "schema": store.revision}

    # ------------------------------------------------------------------ annotate
    def item_json(item: ItemView | None) -> dict[str, Any] | None:
        if item is None:
            return None
        return {
            "id": item.id,
            "caption": item.caption,
            "video_id": item.video_id,
            "video_url": video_url(config, item.video_id),
        }

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
                "video_url": video_url(config, item.video_id) if item else None,
                "guideline": GUIDELINE,
                "progress": prog,
                "percent": round(pct, 1),
            },
        )

    @app.post("/annotate/label", dependencies=[Depends(sec.require_csrf)])
    async def annotate_label(request: Request, user: Annotator = Depends(sec.current_user)) -> Response:
        form = await request.form()
        try:
            item_id = int(str(form.get("item_id", "")))
            spent = int(str(form.get("time_spent_ms") or 0))
        except ValueError:
            raise HTTPException(
                status_code=422, detail="item_id and time_spent_ms must be integers"
            ) from None
        store.submit(user.id, item_id, str(form.get("label", "")), spent, claim_next=True)
        return RedirectResponse("/annotate", status_code=303)

    @app.post("/annotate/undo", dependencies=[Depends(sec.require_csrf)])
    def annotate_undo(request: Request, user: Annotator = Depends(sec.current_user)) -> Response:
        store.undo(user.id)
        return RedirectResponse("/annotate", status_code=303)

    # ------------------------------------------------------------------ JSON API
    @app.get("/api/session")
    def api_session(request: Request, user: Annotator = Depends(sec.current_user)) -> dict[str, Any]:
        return {"user": user.name, "role": user.role, "csrf_token": sec.csrf_token(request)}

    @app.get("/api/next")
    def api_next(user: Annotator = Depends(sec.current_user)) -> dict[str, Any]:
        return {"item": item_json(store.next_item(user.id))}

    @app.get("/api/progress")
    def api_progress(user: Annotator = Depends(sec.current_user)) -> dict[str, int]:
        return store.progress(user.id)

    @app.post("/api/labels", dependencies=[Depends(sec.require_csrf)])
    def api_label(body: LabelIn, user: Annotator = Depends(sec.current_user)) -> dict[str, Any]:
        res = store.submit(user.id, body.item_id, body.label, body.time_spent_ms, claim_next=body.next)
        out: dict[str, Any] = {"status": res.status, "label_id": res.label_id, "item_id": res.item_id}
        if body.next:
            out["next"] = item_json(res.next)
        return out

    @app.post("/api/undo", dependencies=[Depends(sec.require_csrf)])
    def api_undo(body: UndoIn, user: Annotator = Depends(sec.current_user)) -> dict[str, Any]:
        return {"item_id": store.undo(user.id, body.item_id)}

    # ------------------------------------------------------------------ videos
    @app.get("/videos/{name:path}")
    def videos(name: str, user: Annotator = Depends(sec.current_user)) -> Response:
        if not config.video_dir:
            raise HTTPException(status_code=404, detail="no video directory configured")
        path = safe_video_path(config.video_dir, name)
        if path is None:
            raise HTTPException(status_code=404, detail="no such video")
        return FileResponse(path)

    # ------------------------------------------------------------------ admin
    def admin_page(request: Request, user: Annotator, new_token: tuple[str, str] | None = None) -> Response:
        return page(
            request,
            "admin.html",
            {
                "user": user,
                "status": store.status(),
                "disagreements": store.disagreements(),
                "annotators": store.annotators(),
                "new_token": new_token,  # (name, token) of an annotator just created: shown once
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

    @app.get("/admin/export")
    def admin_export(user: Annotator = Depends(sec.require_admin)) -> Response:
        from fireval.judging.export import export_fire_json

        fd, tmp = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            export_fire_json(store, tmp, config.dataset)
            data = Path(tmp).read_bytes()
        finally:
            os.unlink(tmp)
        return Response(
            data,
            media_type="application/json",
            headers={"Content-Disposition": 'attachment; filename="fire_labels.json"'},
        )

    @app.get("/admin/status.json")
    def admin_status(user: Annotator = Depends(sec.require_admin)) -> Response:
        return Response(json.dumps(store.status()), media_type="application/json")

    # the run explorer (analysis helper) shares this app, its sessions and base template
    from fireval.web.explore import router as explore_router

    app.include_router(explore_router)

    return app
