"""What the app (:mod:`fireval.web.app`) and its routers (:mod:`fireval.web.explore`) both need.

Arrows point one way: ``app`` imports the routers and this module; routers import this module
and :mod:`fireval.web.security`, never ``app`` (that was an import cycle). Settings reach a
router at request time through ``request.app.state.config``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

if TYPE_CHECKING:
    from fireval.judging.handout import ItemView


class VideoSettings(Protocol):
    """The part of :class:`fireval.web.app.WebConfig` that says where videos are served from."""

    video_url_template: str | None
    video_dir: str | Path | None
    video_ext: str


def video_url(config: VideoSettings, video_id: str) -> str | None:
    """Where the player loads ``video_id`` from (URL template, the app's /videos route, or none)."""
    if config.video_url_template:
        return config.video_url_template.replace("{video_id}", quote(video_id, safe=""))
    if config.video_dir:
        return f"/videos/{quote(video_id + config.video_ext, safe='')}"
    return None


def item_json(config: VideoSettings, item: ItemView | None) -> dict[str, Any] | None:
    """An item as the annotation page's JSON shows it: caption and video only (blind judging)."""
    if item is None:
        return None
    return {
        "id": item.id,
        "caption": item.caption,
        "video_id": item.video_id,
        "video_url": video_url(config, item.video_id),
    }
