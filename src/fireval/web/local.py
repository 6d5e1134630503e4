"""``fireval explore``: the run explorer on this machine, with no store and no login.

:func:`create_local_app` builds a small FastAPI app around the explorer router of
:mod:`fireval.web.explore` (the same pages, filters and precomputed data as in ``fireval
serve``; nothing is copied): the router's ``current_user`` dependency is answered by
:data:`LOCAL_USER` (no login), and the queue (``POST /explore/queue``), which needs an
annotation store, answers 403 with a message naming ``fireval serve``. Videos come from
``WebConfig.video_dir`` by file name (the explorer's links) or from ``video_url_template``.

Local only, because nothing is behind a login: the CLI binds loopback addresses only
(:func:`check_local_host`: ``127.0.0.1`` by default; any other host is refused with one line),
and the app answers only requests whose ``Host`` header names this machine
(``TrustedHostMiddleware``: a web page elsewhere cannot read the explorer through a DNS name
that it points at 127.0.0.1). Pages carry the app's CSP and frame headers
(:class:`fireval.web.app.SecurityHeaders`); the session cookie holds the CSRF token only.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from fireval.core import InputError
from fireval.web import explore
from fireval.web import security as sec

#: the names this app answers to (``Host`` header, port excluded)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")


@dataclass(frozen=True)
class LocalUser:
    """Who browses the local explorer: no account, no admin rights (no queue)."""

    name: str = "local"
    is_admin: bool = False
    role: str = "local"


LOCAL_USER = LocalUser()


def check_local_host(host: str) -> str:
    """``host`` if it is a loopback address (``127.0.0.1``, ``::1``) or ``localhost``; else
    :class:`InputError`: the explorer has no login, so it must not listen on a network."""
    name = host.strip()
    try:
        local = ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        local = name.lower() == "localhost"
    if not local:
        raise InputError(
            f"--host {host!r}: `fireval explore` has no login and listens on this machine only "
            "(127.0.0.1); to share runs with others use `fireval serve` (accounts and a store)"
        )
    return name


def create_local_app(config: Any) -> FastAPI:
    """The explorer over ``config`` (a :class:`fireval.web.app.WebConfig` with ``collection``,
    ``runs`` and ``judgments``; ``db_url`` is not used): no store, no login, local only."""
    from starlette.middleware.sessions import SessionMiddleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    from fireval.web.app import HERE, TEMPLATES, SecurityHeaders, safe_video_path

    app = FastAPI(title="fireval explore", docs_url=None, redoc_url=None, openapi_url=None)
    config.extra["local_explorer"] = True
    app.state.config = config
    app.state.templates = TEMPLATES
    app.dependency_overrides[sec.current_user] = lambda: LOCAL_USER

    def no_queue() -> None:
        raise HTTPException(
            status_code=403,
            detail="the local explorer has no annotation store: queue pairs with `fireval serve --db STORE`",
        )

    app.dependency_overrides[sec.require_admin] = no_queue
    csp = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "media-src 'self'"
        + (f" {_origin(config.video_url_template)}" if config.video_url_template else "")
        + "; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    )
    app.add_middleware(
        SessionMiddleware, secret_key=config.secret_key, session_cookie="fireval_explore", same_site="strict"
    )
    app.add_middleware(SecurityHeaders, csp=csp)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOCAL_HOSTS))
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.get("/")
    def root() -> Response:
        return RedirectResponse("/explore", status_code=303)

    @app.api_route("/videos/{name:path}", methods=["GET", "HEAD"])
    def videos(name: str) -> Response:
        path = safe_video_path(config.video_dir, name) if config.video_dir else None
        if path is None:
            raise HTTPException(status_code=404, detail="no such video")
        return FileResponse(path, headers={"Cache-Control": "private, max-age=3600"})

    @app.exception_handler(HTTPException)
    async def _error(request: Request, exc: HTTPException) -> Response:
        if "text/html" not in request.headers.get("accept", ""):
            from fastapi.responses import JSONResponse

            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
        return TEMPLATES.TemplateResponse(
            request,
            "message.html",
            {"title": "Error", "message": str(exc.detail), "user": None},
            status_code=exc.status_code,
        )

    app.include_router(explore.router)
    return app


def _origin(template: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(template)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
