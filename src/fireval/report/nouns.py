"""What a query and a document are called in a note, per direction.

t2v: captions are queries and videos documents; v2t: the reverse. A note about several
directions names both (``document (a video for t2v, a caption for v2t)``) rather than
calling a v2t document a video.
"""

from __future__ import annotations

from collections.abc import Iterable

_DOC = {"t2v": ("video", "videos"), "v2t": ("caption", "captions")}


def doc_noun(directions: str | Iterable[str], *, plural: bool = False) -> str:
    """The document noun for ``directions`` (a direction value or several)."""
    ds = [directions] if isinstance(directions, str) else list(dict.fromkeys(str(d) for d in directions))
    ds = [d for d in ds if d in _DOC]
    i = 1 if plural else 0
    if len(ds) == 1:
        return _DOC[ds[0]][i]
    if plural:
        return "documents (videos for t2v, captions for v2t)"
    return "document (a video for t2v, a caption for v2t)"


def query_noun(directions: str | Iterable[str], *, plural: bool = False) -> str:
    """The query noun for ``directions``: the document noun of the other direction."""
    ds = [directions] if isinstance(directions, str) else [str(d) for d in directions]
    flip = {"t2v": "v2t", "v2t": "t2v"}
    return doc_noun([flip[d] for d in ds if d in flip], plural=plural)
