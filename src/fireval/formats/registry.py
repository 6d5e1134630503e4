"""Registered collections: names that :func:`fireval.api.load_collection` and
:func:`fireval.evaluate` accept in place of a path.

Only collections shipped inside the package are registered, so a name never triggers a download.
Each entry is a zero-argument loader; loaders cache, so asking for a name in every validation
epoch costs a dictionary look-up after the first call.

=================  ===========================================================================
``msrvtt-1ka``     MSR-VTT 1k-A test split (JSFusion): 1,000 captions x 1,000 videos, caption
                   ``i`` written for video ``i`` (the diagonal). Aliases: ``msrvtt-1k-a``,
                   ``msrvtt_1ka``, ``example``.
=================  ===========================================================================
"""

from __future__ import annotations

from collections.abc import Callable

from fireval.core import Collection, InputError


def _msrvtt_1ka() -> Collection:
    from fireval.formats.example import load_example

    return load_example().collection


#: canonical name -> loader
BUNDLED: dict[str, Callable[[], Collection]] = {"msrvtt-1ka": _msrvtt_1ka}
#: other spellings accepted for a canonical name
ALIASES: dict[str, str] = {"msrvtt-1k-a": "msrvtt-1ka", "msrvtt_1ka": "msrvtt-1ka", "example": "msrvtt-1ka"}


def canonical(name: str) -> str | None:
    """The registered name ``name`` stands for (case-insensitive), or None."""
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    return key if key in BUNDLED else None


def names() -> tuple[str, ...]:
    """The canonical registered names."""
    return tuple(BUNDLED)


def load(name: str) -> Collection:
    """Load a registered collection; an unknown name raises :class:`InputError` listing the known ones."""
    key = canonical(name)
    if key is None:
        raise InputError(f"unknown collection name {name!r}; registered: {', '.join(names())}")
    return BUNDLED[key]()
