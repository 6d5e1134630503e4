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

- Sessions are server-side: the cookie (Starlette's signed ``SessionMiddleware`` cookie, set up
  by :func:`fireval.web.app.create_app`: HttpOnly, ``SameSite=Strict``, ``Secure`` when
  ``WebConfig.secure_cookies``) holds a random session id and the CSRF token; the store's
  ``sessions`` table says whether that id is live (:meth:`fireval.judging.store.Store.session_user`,
  checked on every request). Logout, token rotation, disabling an annotator and the admin's
  "revoke sessions" delete the rows, so a copy of the cookie stops working at once.
- Login attempts are throttled by :class:`LoginThrottle` (failed attempts in a sliding window,
  :class:`LoginLimiter`): per client address (an IPv6 address by its /64 network), and per
  (account named, client address). There is no lock per account alone: failures naming an
  account from one address never stop its owner logging in from another (a lock per account
  would let anyone who knows an annotator's name keep them out). A throttled attempt gets 429
  with ``Retry-After`` until the oldest counted failure leaves the window. The policy and its
  numbers are in docs/annotation.md ("Login throttling").
- Every state-changing request must carry the session's CSRF token: a form field named
  ``csrf_token`` (templates: ``<input type="hidden" name="csrf_token" value="{{ csrf_token }}">``)
  or, for JSON/fetch requests, the header ``X-CSRF-Token``. :func:`require_csrf` checks either.
- ``current_user`` answers 401 (HTML pages redirect to ``/login`` via the app's exception
  handler) when nobody is logged in; ``require_admin`` answers 403 for non-admins.
"""

from __future__ import annotations

import hmac
import ipaddress
import math
import secrets
import threading
import time
from collections import OrderedDict, deque
from datetime import timedelta

from fastapi import HTTPException, Request

from fireval.judging.store import Annotator, Store

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
SESSION_ID = "sid"
SESSION_CSRF = "csrf"


class LoginLimiter:
    """Failed logins per key (:class:`LoginThrottle`'s keys) in a sliding time window.

    :meth:`retry_after` is the number of seconds until the key may try again (0: now);
    :meth:`failed` records a failure. At most ``max_keys`` keys are remembered (the least
    recently failed are forgotten first), so memory stays bounded under a flood of addresses.
    Thread-safe; per process (several server processes each count their own attempts).
    """

    def __init__(self, max_failures: int = 10, window: float = 60.0, max_keys: int = 100_000) -> None:
        self.max_failures, self.window, self.max_keys = max_failures, window, max_keys
        self._fails: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, key: str, t: float) -> deque[float] | None:
        q = self._fails.get(key)
        if q is None:
            return None
        while q and q[0] <= t - self.window:
            q.popleft()
        if not q:
            del self._fails[key]
            return None
        return q

    def retry_after(self, *keys: str) -> int:
        t = time.monotonic()
        wait = 0.0
        with self._lock:
            for key in keys:
                q = self._recent(key, t)
                if q is not None and len(q) >= self.max_failures:
                    wait = max(wait, q[len(q) - self.max_failures] + self.window - t)
        return math.ceil(wait) if wait > 0 else 0

    def failed(self, *keys: str) -> None:
        t = time.monotonic()
        with self._lock:
            for key in keys:
                q = self._recent(key, t) or deque()
                q.append(t)
                while len(q) > self.max_failures:
                    q.popleft()
                self._fails[key] = q
                self._fails.move_to_end(key)
            while len(self._fails) > self.max_keys:
                self._fails.popitem(last=False)


class LoginThrottle:
    """The login policy over two :class:`LoginLimiter` windows of ``window`` seconds.

    - Per client address (``ip:<address>``; an IPv6 address counts as its /64 network, which
      one host usually holds whole): every failed attempt counts, at most ``per_address``; past
      that every attempt from the address waits (a right token too: otherwise the answer
      would tell a guess that hit).
    - Per (account, address) (``pair:<address> <name>``): failed attempts that name an account,
      at most ``per_account_address`` (fewer than ``per_address``): past that the address may
      not name that account until the window slides, while other accounts and other addresses
      are not affected.

    The account alone is never a key, so failures cannot lock its owner out from the owner's
    own address. Guessing stays bounded: one address gets ``per_address`` tries per window
    whatever it names, against a 256-bit token (:mod:`fireval.judging.annotators`).
    """

    def __init__(
        self,
        per_address: int = 10,
        per_account_address: int = 5,
        window: float = 60.0,
        max_keys: int = 100_000,
    ) -> None:
        self.addresses = LoginLimiter(per_address, window, max_keys)
        self.pairs = LoginLimiter(per_account_address, window, max_keys)

    @staticmethod
    def address(host: str | None) -> str:
        """The key of a client address: IPv4 as is, IPv6 as its /64 network, ``-`` when unknown."""
        if not host:
            return "-"
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return host[:100]
        if isinstance(ip, ipaddress.IPv6Address):
            if ip.ipv4_mapped is not None:
                return str(ip.ipv4_mapped)
            return str(ipaddress.IPv6Network((ip, 64), strict=False))
        return str(ip)

    def _keys(self, host: str | None, name: str) -> tuple[str, str | None]:
        addr = self.address(host)
        return f"ip:{addr}", (f"pair:{addr} {name}" if name else None)

    def retry_after(self, host: str | None, name: str = "") -> int:
        """Seconds until a login from ``host`` naming ``name`` (empty: none) may be tried (0: now)."""
        ip, pair = self._keys(host, name)
        wait = self.addresses.retry_after(ip)
        return max(wait, self.pairs.retry_after(pair)) if pair else wait

    def failed(self, host: str | None, name: str = "") -> None:
        """Record a failed login from ``host`` naming ``name`` (empty: none)."""
        ip, pair = self._keys(host, name)
        self.addresses.failed(ip)
        if pair:
            self.pairs.failed(pair)


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
    """Dependency: the annotator of a live server-side session (401 when logged out,
    revoked, expired or disabled)."""
    sid = request.session.get(SESSION_ID)
    user = get_store(request).session_user(sid) if isinstance(sid, str) else None
    if user is None:
        raise HTTPException(status_code=401, detail="login required")
    return user


def require_admin(request: Request) -> Annotator:
    """Dependency: the logged-in annotator, who must have the admin role (else 403)."""
    user = current_user(request)
    if not user.is_admin:
        raise HTTPException(status_code=403, detail="admin role required")
    return user


def login(request: Request, user: Annotator, max_age: int) -> None:
    """Start a fresh server-side session for ``user`` (new id and CSRF token: no session fixation)."""
    old = request.session.get(SESSION_ID)
    if isinstance(old, str):
        get_store(request).end_session(old)
    request.session.clear()
    request.session[SESSION_ID] = get_store(request).open_session(user.id, timedelta(seconds=max_age))
    request.session[SESSION_CSRF] = secrets.token_urlsafe(32)


def logout(request: Request) -> None:
    """End the session on the server (every copy of the cookie) and clear the cookie."""
    sid = request.session.get(SESSION_ID)
    if isinstance(sid, str):
        get_store(request).end_session(sid)
    request.session.clear()
