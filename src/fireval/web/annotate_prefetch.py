"""Prefetch of the next item's video on the annotation page: ``GET /api/peek``.

After an answer the page is reloaded with the item the server hands out; without a prefetch the
annotator then waits for that video to come over the network. While item N is on screen, the
page (``static/annotate.js``) asks ``GET /api/peek`` for the video of the item the hand-out
would give this annotator after N (:meth:`fireval.judging.store.Store.peek_next`) and loads it
into a hidden ``<video preload="auto">``, which puts it in the browser's HTTP cache; the next
page's player then reads it from there.

Correctness, with several annotators:

- The peek is read only: it claims nothing, opens no assignment, marks no gold item shown and
  holds no lease, so the hand-out's rules (votes per item, nobody labels an item twice, lease
  expiry through ``release_stale``, gold mixing) are exactly those without it.
- It is a prediction: another annotator may take the item meanwhile, a lease may expire, an
  undo may reopen an item. The page never answers the predicted item: it shows and answers
  only what ``GET /annotate`` hands out, so a stale prediction costs one wasted download.
- Blind judging: the answer is the video URL alone (the same URL the player would load when
  the item is shown): no item id, caption, gold marker, run, score or anyone's answer, and
  the same shape for gold and pool items.
- A GET that changes nothing: no CSRF token needed; ``Cache-Control: no-store`` like every API
  answer. Videos are still served only by the app's ``/videos`` route (or the configured URL
  template, which the CSP's ``media-src`` already allows).

Turned off by ``WebConfig.prefetch = False`` (the page then has no ``data-prefetch``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from fireval.judging.store import Annotator
from fireval.web.deps import video_url
from fireval.web.security import current_user

router = APIRouter()


def enabled(request: Request) -> bool:
    """Whether the app prefetches (``WebConfig.prefetch``, on by default)."""
    return bool(getattr(request.app.state.config, "prefetch", True))


@router.get("/api/peek")
def api_peek(request: Request, user: Annotator = Depends(current_user)) -> dict[str, Any]:
    """``{"video_url": ...}`` of the item the annotator would be given after the current one
    (``null`` when none would follow, no video source is configured or prefetch is off)."""
    if not enabled(request):
        return {"video_url": None}
    item = request.app.state.store.peek_next(user.id)
    return {"video_url": video_url(request.app.state.config, item.video_id) if item else None}
