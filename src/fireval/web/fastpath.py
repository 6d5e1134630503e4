"""Pieces shared by the routes the app answers before its middleware stack
(:class:`fireval.web.app.FirevalApp`: ``POST /api/labels``, ``GET /api/peek``).

A fast path must answer exactly as the full stack would: the same session (Starlette's signed
``fireval_session`` cookie, read only), the same status codes and bodies (``{"detail": ...}``
as FastAPI's ``HTTPException``), the same headers (:class:`fireval.web.app.SecurityHeaders`,
``Cache-Control: no-store``, ``Vary: Cookie``) and the same 503 for an unreachable store.
"""

from __future__ import annotations

import json
import time
from base64 import b64decode
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from itsdangerous import BadSignature, TimestampSigner
from starlette.types import Send

from fireval.core import FirevalError
from fireval.judging.engine import is_storage_error
from fireval.judging.store import Store, StoreUnavailableError

if TYPE_CHECKING:
    from fireval.web.config import WebConfig

UNAVAILABLE = "The annotation store is unavailable (nothing was saved). Please try again in a moment."


def security_headers(csp: bytes, hsts: bool = False) -> list[tuple[bytes, bytes]]:
    """The headers every answer carries (:class:`fireval.web.app.SecurityHeaders`): the CSP,
    ``X-Frame-Options: DENY``, ``nosniff``, ``Referrer-Policy: same-origin``, and HSTS when
    ``hsts`` (secure cookies)."""
    return [
        (b"content-security-policy", csp),
        (b"x-frame-options", b"DENY"),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"same-origin"),
        *([(b"strict-transport-security", b"max-age=31536000")] if hsts else []),
    ]


def json_responder(csp: bytes) -> Callable[..., Awaitable[None]]:
    """``respond(send, status, body, extra_headers=None)``: a JSON response with the headers the
    middleware stack adds to an API answer (:class:`SecurityHeaders`, ``Cache-Control:
    no-store``, ``Vary: Cookie``: the session was read), for the fast paths."""
    common = [*security_headers(csp), (b"cache-control", b"no-store"), (b"vary", b"Cookie")]

    async def respond(
        send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        headers = [
            (b"content-length", str(len(body)).encode()),
            (b"content-type", b"application/json"),
            *common,
            *(extra or ()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return respond


def detail(message: Any) -> bytes:
    """The body FastAPI gives an ``HTTPException``: ``{"detail": message}``."""
    return json.dumps({"detail": message}, ensure_ascii=False, separators=(",", ":")).encode()


def cookie_reader(config: WebConfig) -> Callable[[str], dict[str, Any]]:
    """The session dict of a ``fireval_session`` cookie value, as Starlette's
    ``SessionMiddleware`` reads it (same signer, ``max_age``), ``{}`` when it does not verify.

    Cookies whose signature verified are remembered with the time their ``max_age`` runs out:
    an annotator sends the same cookie with every request, and the HMAC check is a fast path's
    largest cost; bounded (emptied when full); read only (a fast path never changes a session).
    """
    signer = TimestampSigner(str(config.secret_key))
    max_age = config.session_max_age
    verified: dict[str, tuple[dict[str, Any], float]] = {}

    def read_cookie(value: str) -> dict[str, Any]:
        hit = verified.get(value)
        t = time.time()
        if hit is not None and t <= hit[1]:
            return hit[0]
        try:
            data, signed_at = signer.unsign(value.encode("utf-8"), max_age=max_age, return_timestamp=True)
        except BadSignature:
            return {}
        session = json.loads(b64decode(data))
        if len(verified) >= 10_000:
            verified.clear()
        verified[value] = (session, signed_at.timestamp() + (max_age or 0))
        return session  # type: ignore[no-any-return]

    return read_cookie


def unavailable(store: Store, exc: BaseException) -> bool:
    """Whether ``exc`` means the store cannot be reached (503), as the app's handlers decide."""
    return isinstance(exc, StoreUnavailableError) or (
        not isinstance(exc, FirevalError) and is_storage_error(exc, store.engine)
    )
