"""What the app (:mod:`fireval.web.app`) and its routers (:mod:`fireval.web.explore`) both need.

Arrows point one way: ``app`` imports the routers and this module; routers import this module
and :mod:`fireval.web.security`, never ``app`` (that was an import cycle). Settings reach a
router at request time through ``request.app.state.config``.

Item ids reach an annotator only as opaque handles (:mod:`fireval.web.handles`,
``app.state.handles``): :func:`handle_of` gives the encoder of the request's session,
:func:`item_from` maps a handle the page sent back to the item id (404 otherwise), and
:func:`blind_errors` puts the handle in place of the store's id in a refusal's message;
:func:`answer_json` gives an answer's handle (``app.state.answer_handles``) instead of its row id.

Videos reach an annotator only by opaque per-session tokens (:mod:`fireval.judging.blinding`,
``app.state.video_tokens``): :func:`blind_video_url` is the URL an annotator's page and JSON
use (``/videos/<token>``), :func:`video_of` its function for the request's session;
:func:`video_url` (the file name in the URL) is for admin pages only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from fastapi import HTTPException, Request

from fireval.judging.blinding import VideoTokens
from fireval.judging.errors import StoreError, StoreUnavailableError
from fireval.judging.gold import is_gold_id
from fireval.web.handles import UNKNOWN, Handles, answer_code
from fireval.web.security import SESSION_ID

if TYPE_CHECKING:
    from fireval.judging.handout import ItemView


class VideoSettings(Protocol):
    """The part of :class:`fireval.web.app.WebConfig` that says where videos are served from."""

    video_url_template: str | None
    video_dir: str | Path | None
    video_ext: str


def video_url(config: VideoSettings, video_id: str) -> str | None:
    """Where an admin's page links ``video_id`` (URL template, the app's /videos route by file
    name, or none); annotators' pages use :func:`blind_video_url`."""
    if config.video_url_template:
        return config.video_url_template.replace("{video_id}", quote(video_id, safe=""))
    if config.video_dir:
        return f"/videos/{quote(video_id + config.video_ext, safe='')}"
    return None


def blind_video_url(config: VideoSettings, tokens: VideoTokens, sid: str, video_id: str) -> str | None:
    """Where an annotator's player loads ``video_id`` from in session ``sid``: ``/videos/<token>``
    (no id, no file name) with ``video_dir``; the URL template's URL with ``video_url_template``
    (which carries the id: the video host needs it; see docs/annotation.md); else None."""
    if config.video_url_template:
        return video_url(config, video_id)
    if config.video_dir:
        return "/videos/" + tokens.encode(sid, video_id)
    return None


def video_of(request: Request) -> Callable[[str], str | None]:
    """:func:`blind_video_url` bound to the request's session (call after ``current_user``)."""
    sid = request.session.get(SESSION_ID)
    if not isinstance(sid, str):
        raise HTTPException(status_code=401, detail="login required")
    config, tokens = request.app.state.config, request.app.state.video_tokens
    return lambda video_id: blind_video_url(config, tokens, sid, video_id)


def handle_of(request: Request) -> Callable[[int], str]:
    """The item-handle encoder of the request's session (call after ``current_user``)."""
    sid = request.session.get(SESSION_ID)
    if not isinstance(sid, str):
        raise HTTPException(status_code=401, detail="login required")
    return request.app.state.handles.encoder(sid)  # type: ignore[no-any-return]


def item_from(request: Request, handle: object) -> int:
    """The item id behind ``handle`` in the request's session; 404 (as for an unknown item)
    for a raw id (a digit string or a JSON integer, whatever its value), another session's
    handle or any other string; 422 for none at all (a form without ``item_id``)."""
    if handle is None:
        raise HTTPException(status_code=422, detail="item_id is required")
    sid = request.session.get(SESSION_ID)
    item_id = request.app.state.handles.decode(sid, handle) if isinstance(sid, str) else None
    if item_id is None:
        raise HTTPException(status_code=404, detail=UNKNOWN)
    return int(item_id)


def answer_json(request: Request, res: Any) -> str:
    """The answer handle of a store result (``SubmitResult``) in the request's session: never the
    row id, which numbers pool and gold answers apart (:mod:`fireval.web.handles`)."""
    sid = request.session.get(SESSION_ID)
    if not isinstance(sid, str):
        raise HTTPException(status_code=401, detail="login required")
    return answer_of(request.app.state.answer_handles, sid, res)


def answer_of(answers: Handles, sid: str, res: Any) -> str:
    """:func:`answer_json` with the answer-handle encoder and session id given."""
    return answers.encode(sid, answer_code(res.label_id, is_gold_id(res.item_id)))


def blind_message(message: str, item_id: int, handle: str) -> str:
    """``message`` (a store refusal) with the store's id of the item replaced by its handle."""
    return re.sub(rf"(?<!\d){int(item_id)}(?!\d)", lambda _: handle, message)


@contextmanager
def blind_errors(item_id: int, handle: str) -> Iterator[None]:
    """Re-raise a store refusal about ``item_id`` (same status) naming the item by ``handle``:
    the store's messages name items by their ids, which annotators must not see."""
    try:
        yield
    except StoreError as exc:
        if isinstance(exc, StoreUnavailableError):
            raise
        raise HTTPException(status_code=exc.status, detail=blind_message(str(exc), item_id, handle)) from None


def item_json(
    item: ItemView | None, handle: Callable[[int], str], video: Callable[[str], str | None]
) -> dict[str, Any] | None:
    """An item as the annotation page's JSON shows it: an opaque handle (never the store's id),
    the caption and the video's URL (:func:`video_of`: never its id), nothing else (blind judging)."""
    if item is None:
        return None
    return {"id": handle(item.id), "caption": item.caption, "video_url": video(item.video_id)}
