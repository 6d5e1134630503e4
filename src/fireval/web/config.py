"""The settings of one web app instance (:class:`WebConfig`, kept on ``app.state.config``).

A module of its own, below everything that reads the settings: the app
(:mod:`fireval.web.app`, which re-exports :class:`WebConfig`), its fast paths
(:mod:`fireval.web.fastpath`, :mod:`fireval.web.annotate_prefetch`) and the CLI verbs that
build one. It imports nothing of fireval's.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class WebConfig:
    """Settings of one web app instance (kept on ``app.state.config``).

    ``db_url``: annotation store (SQLite path/URL or PostgreSQL URL). Videos come from
    ``video_dir`` (``<video_id><video_ext>``) or from ``video_url_template`` (``{video_id}``
    is replaced, URL-quoted). ``collection``/``runs``/``judgments`` are optional data for the
    explorer.
    """

    db_url: str
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    dataset: str | None = None
    video_dir: str | Path | None = None
    video_url_template: str | None = None
    video_ext: str = ".mp4"
    secure_cookies: bool = False
    max_body_bytes: int = 64 * 1024
    session_max_age: int = 12 * 3600
    login_max_failures: int = 10  # failed logins per client address and window (LoginThrottle)
    login_account_max_failures: int = 5  # failed logins naming one account, per address and window
    login_window_seconds: float = 60.0
    collection: Any = None
    runs: Any = None
    judgments: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    guidelines: str | Path | None = None  # campaign guideline (Markdown); None: the FIRE default
    open_explore: bool = False  # let annotators open the explorer (they then see runs and scores)
    gold_rate: float = 0.1  # share of gold items shown to each annotator (when gold items are loaded)
    workers: int = 1  # server processes sharing the store (fireval.web.workers)
    prefetch: bool = True  # the annotation page preloads the next item's video (web.annotate_prefetch)
    model_names: dict[str, str] = field(default_factory=dict)  # export: run -> FIRE model (--model-name)
    explore_store_labels: bool = True  # the explorer shows the store's own labels (web.explore.get_data)
    # proxies whose X-Forwarded-For/-Proto is believed (uvicorn's forwarded_allow_ips); None: none,
    # the client address is the peer's (login throttling keys on it: a forged header cannot rotate it)
    forwarded_allow_ips: str | None = None
