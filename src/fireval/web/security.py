"""Login sessions, roles and CSRF protection shared by every router of the fireval web app.

How to use from another router (e.g. the run explorer)::

    from fastapi import APIRouter, Depends, Request
    from fireval.web.security import current_user, require_admin, require_csrf, csrf_token

    router = APIRouter()

    @router.get("/explore")
    def page(request: Request, user=Depends(current_user)):      # any logged-in user
        return templates.TemplateResponse(request, "explore.html",
                                          {"user": user, "csrf_token": csrf_token(request)})

    @router.post("/explore/queue", dependencies=[Depends(require_csrf)])
    def queue(request: Request, user=Depends(require_admin)):     # admins only, CSRF checked
        ...

- Sessions are Starlette's signed cookie (``SessionMiddleware``, set up by
  :func:`fireval.web.app.create_app`): HttpOnly, ``SameSite=Strict``, ``Secure`` when
  ``WebConfig.secure_cookies``. The session holds only the annotator id and the CSRF token.
- Every state-changing request must carry the session's CSRF token: a form field named
  ``csrf_token`` (templates: ``<input type="hidden" name="csrf_token" value="{{ csrf_token }}">``)
  or, for JSON/fetch requests, the header ``X-CSRF-Token``. :func:`require_csrf` checks either.
- ``current_user`` answers 401 (HTML pages redirect to ``/login`` via the app's exception
  handler) when nobody is logged in; ``require_admin`` answers 403 for non-admins.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import HTTPException, Request

from fireval.judging.store import Annotator, Store

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
SESSION_USER = "uid"
SESSION_CSRF = "csrf"


def csrf_token(request: Request) -> str:
    """The session's CSRF token, created on first use."""
    tok = request.session.get(SESSION_CSRF)
    if not tok:
        tok = secrets.token_urlsafe(32)
        request.session[SESSION_CSRF] = tok
    return str(tok)


def check_csrf(request: Request, supplied: str | None) -> None:
    """Raise 403 unless ``supplied`` equals the session's CSRF token (constant-time compare)."""
    expected = request.session.get(SESSION_CSRF)
    if not expected or not supplied or not hmac.compare_digest(str(expected), str(supplied)):
        raise HTTPException(status_code=403, detail="missing or invalid CSRF token")


async def require_csrf(request: Request) -> None:
    """Dependency: the CSRF token from the ``X-CSRF-Token`` header or the ``csrf_token`` form field."""
    supplied = request.headers.get(CSRF_HEADER)
    if supplied is None:
        ctype = request.headers.get("content-type", "")
        if ctype.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
            form = await request.form()
            value = form.get(CSRF_FIELD)
            supplied = value if isinstance(value, str) else None
    check_csrf(request, supplied)


def get_store(request: Request) -> Store:
    """The app's :class:`~fireval.judging.store.Store`."""
    return request.app.state.store  # type: ignore[no-any-return]


def current_user(request: Request) -> Annotator:
    """Dependency: the logged-in annotator (401 when not logged in or deactivated)."""
    uid = request.session.get(SESSION_USER)
    user = get_store(request).annotator(int(uid)) if isinstance(uid, int) else None
    if user is None:
        raise HTTPException(status_code=401, detail="login required")
    return user


def require_admin(request: Request) -> Annotator:
    """Dependency: the logged-in annotator, who must have the admin role (else 403)."""
    user = current_user(request)
    if not user.is_admin:
        raise HTTPException(status_code=403, detail="admin role required")
    return user


def login(request: Request, user: Annotator) -> None:
    """Start a fresh session for ``user`` (new CSRF token: no session fixation)."""
    request.session.clear()
    request.session[SESSION_USER] = user.id
    request.session[SESSION_CSRF] = secrets.token_urlsafe(32)


def logout(request: Request) -> None:
    request.session.clear()
