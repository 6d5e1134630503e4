"""Opaque video tokens: how an annotator's browser names a video without its dataset id.

Annotators judge blind. A dataset's video ids are public (MSR-VTT's ``video7020``): with one, an
annotator can look up the video's original caption (the instance label of a pair) and tell gold,
pool and instance pairs apart. So every video URL an annotator is given by the app's own
``/videos`` route is ``/videos/<token>``, where the token names the video *only inside one
server-side session*; admins' pages keep ``/videos/<file name>``.

Algorithm (a deterministic authenticated encryption of the id, SIV style; stateless, so it works
across server processes that share the secret; the same construction as the item handles of
:mod:`fireval.web.handles`, for a string):

- ``K_s = HMAC-SHA256(HMAC-SHA256(secret, "fireval video token v1"), sid)``: one key per
  server-side session id ``sid`` (never shown in a page). A token is valid only in the session
  it was made for (another annotator, or a later session of the same one, gets 404).
- ``p = len(id) (2 bytes, big endian) || id (UTF-8) || zero bytes`` up to a multiple of
  :data:`BLOCK` (32) bytes, so ids of up to 30 bytes (every MSR-VTT, MSVD, VATEX id) give tokens
  of one length and the length tells nothing.
- ``tag = HMAC-SHA256(K_s, "t" || p)[:16]``; a key stream ``HMAC-SHA256(K_s, "p" || tag || i)``
  for block ``i = 0, 1, ...`` (4 bytes, big endian) is XORed onto ``p``; token =
  base64url(``tag || ciphertext``) without padding (64 characters for a 30-byte id).
- Decoding recomputes the key stream from ``tag``, recovers ``p``, and accepts it only when the
  tag matches (constant-time compare), the length field fits and the padding is zero bytes.
  Anything else (a file name, another session's token, an edited one) is ``None``.

The same video has the same token for the whole session, so the browser's cache serves a video
prefetched for the next item (:mod:`fireval.web.annotate_prefetch`) and a looping player's
later passes; equality of tokens says only that two items show the same video, which the
annotator sees anyway.

:meth:`VideoTokens.etag` is the entity tag the video route sends instead of Starlette's (an MD5 of
the file's modification time and size, the same for every session: it gave the file's time away
and linked one file across items and sessions): ``"`` + hex(HMAC-SHA256(K_s, "e" || token ||
size || mtime_ns)[:12]) + ``"``. It changes when the file does (so ``If-Range`` still protects a
resumed download) and says nothing else; no ``Last-Modified`` is sent.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from base64 import urlsafe_b64decode, urlsafe_b64encode

INFO = b"fireval video token v1"  # root key of video tokens (a domain apart from item handles)
BLOCK = 32  # the padded id's length is a multiple of this many bytes
_TAG = 16
MAX_ID_BYTES = 1024  # longer ids get no token (ValueError): no dataset has such ids
_MAX_CHARS = -(-(_TAG + MAX_ID_BYTES + 2 + BLOCK) * 4 // 3)
_SHAPE = re.compile(r"[A-Za-z0-9_-]+")


def _b64(raw: bytes) -> str:
    return urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class SessionKeys:
    """Per-session keys under one root: ``K_s = HMAC-SHA256(HMAC-SHA256(secret, info), sid)``.

    Shared by the video tokens here and the item handles of :mod:`fireval.web.handles` (each
    with its own ``info``, so their keys are apart); keys are cached, at most 10,000 sessions.
    """

    def __init__(self, secret: str | bytes, info: bytes) -> None:
        raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        self._root = hmac.new(raw, info, hashlib.sha256).digest()
        self._keys: dict[str, bytes] = {}

    def __call__(self, sid: str) -> bytes:
        key = self._keys.get(sid)
        if key is None:
            key = hmac.new(self._root, sid.encode("utf-8"), hashlib.sha256).digest()
            if len(self._keys) >= 10_000:  # bounded cache of per-session keys
                self._keys.clear()
            self._keys[sid] = key
        return key


class VideoTokens:
    """Encode and decode video tokens for sessions, keyed by the server's secret."""

    def __init__(self, secret: str | bytes) -> None:
        self._key = SessionKeys(secret, INFO)

    @staticmethod
    def _stream(key: bytes, tag: bytes, n: int) -> bytes:
        blocks = (
            hmac.new(key, b"p" + tag + i.to_bytes(4, "big"), hashlib.sha256).digest()
            for i in range(-(-n // 32))
        )
        return b"".join(blocks)[:n]

    def encode(self, sid: str, video_id: str) -> str:
        """The token of ``video_id`` in session ``sid``."""
        raw = video_id.encode("utf-8")
        if not raw or len(raw) > MAX_ID_BYTES:
            raise ValueError(f"video id of {len(raw)} bytes: expected 1 to {MAX_ID_BYTES}")
        plain = len(raw).to_bytes(2, "big") + raw
        plain += bytes(-len(plain) % BLOCK)
        key = self._key(sid)
        tag = hmac.new(key, b"t" + plain, hashlib.sha256).digest()[:_TAG]
        ct = bytes(a ^ b for a, b in zip(plain, self._stream(key, tag, len(plain))))
        return _b64(tag + ct)

    def decode(self, sid: str, token: object) -> str | None:
        """The video id ``token`` stands for in session ``sid``, or None (not a token of it)."""
        if not isinstance(token, str) or len(token) > _MAX_CHARS or not _SHAPE.fullmatch(token):
            return None
        try:
            blob = urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except ValueError:
            return None
        if _b64(blob) != token:  # one spelling per token (no trailing-bit variants)
            return None
        tag, ct = blob[:_TAG], blob[_TAG:]
        if not ct or len(ct) % BLOCK:
            return None
        key = self._key(sid)
        plain = bytes(a ^ b for a, b in zip(ct, self._stream(key, tag, len(ct))))
        if not hmac.compare_digest(tag, hmac.new(key, b"t" + plain, hashlib.sha256).digest()[:_TAG]):
            return None
        n = int.from_bytes(plain[:2], "big")
        if not 0 < n <= len(plain) - 2 or any(plain[2 + n :]):
            return None
        try:
            return plain[2 : 2 + n].decode("utf-8")
        except UnicodeDecodeError:
            return None

    def etag(self, sid: str, token: str, stat: os.stat_result) -> str:
        """An opaque strong entity tag of the file behind ``token`` (see the module docstring)."""
        msg = b"e" + token.encode("utf-8") + f":{stat.st_size}:{stat.st_mtime_ns}".encode()
        return '"' + hmac.new(self._key(sid), msg, hashlib.sha256).hexdigest()[:24] + '"'
