"""Opaque item handles: the only item ids an annotator's browser ever sees (blind judging).

Store ids tell items apart: gold items are numbered above
:data:`fireval.judging.gold.GOLD_BASE`, pool items below it. Every item id the annotation page,
its JSON API (``/api/next``, ``/api/labels``, ``/api/undo``, ``/api/skip``, ``/api/flags``,
``/api/history``) and its forms send to an annotator is therefore a *handle*, and every item id
they receive is mapped back here; admin pages keep raw ids.

Algorithm (a deterministic authenticated encryption of the 8-byte id, SIV style; stateless, so
it works across ``--workers`` processes that share the app's ``secret_key``):

- ``K_s = HMAC-SHA256(HMAC-SHA256(secret, "fireval item handle v1"), sid)``: one key per
  server-side session id ``sid`` (the id inside the signed session cookie, never shown in a
  page). A handle is valid only in the session it was made for: not transferable to another
  annotator (or to a later session of the same one).
- ``tag = HMAC-SHA256(K_s, "t" || id)[:16]``, ``pad = HMAC-SHA256(K_s, "p" || tag)[:8]``,
  handle = base64url(tag || (id XOR pad)) without padding: always :data:`LENGTH` (32)
  characters of ``[A-Za-z0-9_-]``, for gold and pool items alike.
- Decoding recomputes ``pad`` from ``tag``, recovers the id and accepts it only if its ``tag``
  matches (constant-time compare). Anything else (a raw id, a foreign or edited handle, a wrong
  length or alphabet) is ``None``: the caller answers 404 as for an unknown item.

Answers (``POST /api/labels``, ``/api/skip``, and ``GET /api/history``) carry no row id (a pool
answer's is a ``labels`` row, a gold answer's a ``gold_current`` row, a separate and smaller
numbering; both rows are deleted by undo and allocated by the same rule, so whether an answer
given again after an undo gets its old handle back does not depend on the kind): they carry
``answer``, an *answer handle* made the same way under another root key (info "fireval answer
handle v1") from :func:`answer_code` ``= 2 * row id + (1 for a gold answer)``, so it names one
answer of one session (the same answer sent again gets the same handle) and looks alike for
pool and gold items. Tools that hold the server's secret (the load benchmark's loss check) map
it back with :meth:`Handles.decode` and :func:`answer_row`.

The same item has the same handle for the whole session (an answer sent twice is still
recognised as a duplicate); equality of handles reveals nothing the annotator does not see.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from base64 import urlsafe_b64decode, urlsafe_b64encode
from collections.abc import Callable

from fireval.judging.blinding import SessionKeys

LENGTH = 32  # characters of every handle (24 bytes, base64url)
_TAG, _ID = 16, 8
_SHAPE = re.compile(r"[A-Za-z0-9_-]{32}")
_MAX_ID = 2**64 - 1
UNKNOWN = "unknown item"  # the 404 detail for a handle that names no item of this session
ITEM_INFO = b"fireval item handle v1"  # root key of item handles
ANSWER_INFO = b"fireval answer handle v1"  # root key of answer handles (another domain)


def answer_code(row_id: int, gold: bool) -> int:
    """The number an answer handle encodes: pool (``labels``) and gold (``gold_current``) rows apart."""
    return 2 * int(row_id) + (1 if gold else 0)


def answer_row(code: int) -> tuple[int, bool]:
    """``(row id, gold)`` of :func:`answer_code`'s number."""
    return code // 2, bool(code % 2)


class Handles:
    """Encode and decode item handles for sessions, keyed by the server's secret."""

    def __init__(self, secret: str | bytes, info: bytes = ITEM_INFO) -> None:
        self._key = SessionKeys(secret, info)

    def encode(self, sid: str, item_id: int) -> str:
        """The handle of ``item_id`` in session ``sid``."""
        if not 0 <= item_id <= _MAX_ID:
            raise ValueError(f"item id out of range: {item_id}")
        key = self._key(sid)
        raw = item_id.to_bytes(_ID, "big")
        tag = hmac.new(key, b"t" + raw, hashlib.sha256).digest()[:_TAG]
        pad = hmac.new(key, b"p" + tag, hashlib.sha256).digest()[:_ID]
        return urlsafe_b64encode(tag + bytes(a ^ b for a, b in zip(raw, pad))).decode("ascii")

    def decode(self, sid: str, handle: object) -> int | None:
        """The item id ``handle`` stands for in session ``sid``, or None (not a handle of it)."""
        if not isinstance(handle, str) or not _SHAPE.fullmatch(handle):
            return None
        blob = urlsafe_b64decode(handle)
        tag, ct = blob[:_TAG], blob[_TAG:]
        key = self._key(sid)
        pad = hmac.new(key, b"p" + tag, hashlib.sha256).digest()[:_ID]
        raw = bytes(a ^ b for a, b in zip(ct, pad))
        if not hmac.compare_digest(tag, hmac.new(key, b"t" + raw, hashlib.sha256).digest()[:_TAG]):
            return None
        return int.from_bytes(raw, "big")

    def encoder(self, sid: str) -> Callable[[int], str]:
        """``encode`` bound to one session (what templates and :func:`~fireval.web.deps.item_json` take)."""
        return lambda item_id: self.encode(sid, item_id)
