"""The app's ASGI middleware: :class:`BodyLimit` (413 past ``max_body_bytes``) and
:class:`SecurityHeaders` (CSP and related headers, ``Cache-Control: no-store`` on pages and API
answers), with :func:`plain_response`, the bare text answer both they and the label fast path
(:mod:`fireval.web.label_api`) send.

:func:`fireval.web.app.create_app` installs them (``SecurityHeaders`` outermost, so the 413 of
``BodyLimit`` carries the headers too); :mod:`fireval.web.local` uses ``SecurityHeaders`` for
the explorer. Both are re-exported by :mod:`fireval.web.app`.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fireval.web.fastpath import security_headers


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
                    await plain_response(send, 413, b"request body too large")
                    return
        seen, started, answered = 0, False, False

        # A body without Content-Length (chunked) is counted as it arrives; past the limit the
        # 413 is sent here, at once, and whatever the app answers after the failed read (FastAPI
        # turns any error while parsing a body into 400) is dropped.
        async def limited() -> Message:
            nonlocal seen, answered
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    if not started and not answered:
                        answered = True
                        await plain_response(send, 413, b"request body too large")
                    raise _TooLarge()
            return msg

        async def guarded(msg: Message) -> None:
            nonlocal started
            if answered:
                return
            started = True
            await send(msg)

        try:
            await self.app(scope, limited, guarded)
        except _TooLarge:
            if not started and not answered:
                await plain_response(send, 413, b"request body too large")


class _TooLarge(Exception):
    pass


async def plain_response(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


class SecurityHeaders:
    """ASGI middleware adding CSP and related headers to every response.

    Pages and API answers (everything but ``/static/`` and ``/videos/``) also get
    ``Cache-Control: no-store``: they hold login tokens, CSRF tokens and labels, which must not
    stay in a shared or back-button cache after logout. Videos (``private, max-age=3600`` from
    their route) lose the session's ``Vary: Cookie``: their bytes do not depend on the session,
    and Chromium did not reuse a cached video that carried it (measured: the prefetched next
    video, :mod:`fireval.web.annotate_prefetch`, was downloaded again). A video stays in that browser's
    own cache for up to an hour, also after logout. With ``hsts`` (``WebConfig.secure_cookies``:
    the app is served over HTTPS) its responses also carry ``Strict-Transport-Security`` (the
    browser learns it from the login page; the fast paths' JSON answers go without), so it never
    sends the Secure session cookie's site a plain-HTTP request again.
    """

    def __init__(self, app: ASGIApp, csp: str, hsts: bool = False) -> None:
        self.app, self.headers = app, security_headers(csp.encode(), hsts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        path = str(scope.get("path", ""))
        cacheable = path.startswith(("/static/", "/videos/"))
        video = path.startswith("/videos/")

        async def wrapped(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                headers = list(msg.get("headers", []))
                headers += self.headers
                if not cacheable and not any(k.lower() == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                if video:  # same bytes for every session; Chromium did not reuse a Vary: Cookie video
                    headers = [(k, _without_cookie(v) if k.lower() == b"vary" else v) for k, v in headers]
                    headers = [(k, v) for k, v in headers if v or k.lower() != b"vary"]
                msg = {**msg, "headers": headers}
            await send(msg)

        await self.app(scope, receive, wrapped)


def _without_cookie(vary: bytes) -> bytes:
    """A ``Vary`` header's value without ``Cookie``."""
    return b", ".join(p.strip() for p in vary.split(b",") if p.strip() and p.strip().lower() != b"cookie")
