"""The collection: videos, captions, and the instance map from caption to video."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from fireval.core.direction import Direction
from fireval.core.errors import InputError
from fireval.core.text import normalise


def _check_unique(ids: Sequence[str], what: str, source: str | None) -> None:
    if len(set(ids)) != len(ids):
        dup = [k for k, n in Counter(ids).items() if n > 1]
        raise InputError(f"duplicate {what} id {dup[0]!r} ({len(dup)} duplicated ids in all)", source=source)


@dataclass(frozen=True, eq=False)
class Collection:
    """Videos and captions of one benchmark split.

    Ids are strings; caption text is kept verbatim. ``caption_video[i]`` is the index (into
    ``video_ids``) of the video caption ``i`` was written for: the *instance* label.

    In t2v the queries are the captions (in ``caption_ids`` order) and the documents are
    the videos (in ``video_ids`` order); v2t is the transpose.
    """

    name: str
    video_ids: tuple[str, ...]
    caption_ids: tuple[str, ...]
    captions: tuple[str, ...]
    caption_video: npt.NDArray[np.int64]
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "video_ids", tuple(self.video_ids))
        object.__setattr__(self, "caption_ids", tuple(self.caption_ids))
        object.__setattr__(self, "captions", tuple(self.captions))
        cv = np.asarray(self.caption_video, dtype=np.int64)
        object.__setattr__(self, "caption_video", cv)
        if not self.video_ids:
            raise InputError("collection has no videos", source=self.source)
        if not self.caption_ids:
            raise InputError("collection has no captions", source=self.source)
        if len(self.captions) != len(self.caption_ids) or cv.shape != (len(self.caption_ids),):
            raise InputError(
                f"{len(self.caption_ids)} caption ids but {len(self.captions)} texts and "
                f"{cv.shape[0]} video links",
                source=self.source,
            )
        _check_unique(self.video_ids, "video", self.source)
        _check_unique(self.caption_ids, "caption", self.source)
        if cv.size and (cv.min() < 0 or cv.max() >= len(self.video_ids)):
            raise InputError("caption linked to a video index out of range", source=self.source)

    @classmethod
    def from_pairs(
        cls,
        name: str,
        pairs: Sequence[tuple[str, str, str]],
        video_ids: Sequence[str] | None = None,
        source: str | None = None,
    ) -> Collection:
        """Build from ``(caption_id, video_id, caption_text)`` triples.

        Videos are ordered as in ``video_ids`` if given, else by first appearance.
        """
        if not pairs:
            raise InputError("no captions found", source=source)
        if video_ids is None:
            video_ids = list(dict.fromkeys(v for _, v, _ in pairs))
        index = {v: i for i, v in enumerate(video_ids)}
        if len(index) != len(video_ids):
            _check_unique(list(video_ids), "video", source)
        links = []
        for cid, vid, _ in pairs:
            if vid not in index:
                raise InputError(f"caption {cid!r} refers to unknown video {vid!r}", source=source)
            links.append(index[vid])
        return cls(
            name=name,
            video_ids=tuple(video_ids),
            caption_ids=tuple(c for c, _, _ in pairs),
            captions=tuple(t for _, _, t in pairs),
            caption_video=np.asarray(links, dtype=np.int64),
            source=source,
        )

    def __repr__(self) -> str:
        """One line (a repr listing every caption would flood a notebook)."""
        return f"Collection({self.name!r}, {self.n_captions} captions, {self.n_videos} videos)"

    @property
    def n_videos(self) -> int:
        return len(self.video_ids)

    @property
    def n_captions(self) -> int:
        return len(self.caption_ids)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_captions, n_videos)``: the orientation every score and label matrix uses."""
        return (self.n_captions, self.n_videos)

    def query_ids(self, direction: Direction | str) -> tuple[str, ...]:
        """Ids of the queries in ``direction`` (captions for t2v, videos for v2t)."""
        d = Direction.parse(direction)
        return self.caption_ids if d is Direction.T2V else self.video_ids

    def doc_ids(self, direction: Direction | str) -> tuple[str, ...]:
        """Ids of the documents in ``direction`` (videos for t2v, captions for v2t)."""
        d = Direction.parse(direction)
        return self.video_ids if d is Direction.T2V else self.caption_ids

    @cached_property
    def video_index(self) -> dict[str, int]:
        return {v: i for i, v in enumerate(self.video_ids)}

    @cached_property
    def caption_index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.caption_ids)}

    @cached_property
    def normalised_index(self) -> dict[str, list[int]]:
        """Normalised caption text → indices of every caption with that text (repeats included)."""
        out: dict[str, list[int]] = {}
        for i, text in enumerate(self.captions):
            out.setdefault(normalise(text), []).append(i)
        return out

    @cached_property
    def text_groups(self) -> npt.NDArray[np.int64]:
        """Per caption, the number of its normalised text among :attr:`normalised_index`'s keys:
        captions with equal numbers share a text (one judging item labels them all)."""
        out = np.empty(self.n_captions, np.int64)
        for k, members in enumerate(self.normalised_index.values()):
            out[members] = k
        return out

    def captions_of(self, video: int) -> npt.NDArray[np.int64]:
        """Indices of the captions written for video index ``video``."""
        return np.flatnonzero(self.caption_video == video)

    def caption_lengths(self) -> npt.NDArray[np.int64]:
        """Number of whitespace tokens of each caption (FIRE's length breakdowns)."""
        return np.fromiter((len(c.split()) for c in self.captions), dtype=np.int64, count=self.n_captions)

    def instance_judgments(self) -> Judgments:
        """The benchmark's instance labels: each caption is relevant to its own video only."""
        return Judgments.instance(self.caption_video, self.n_videos)


from fireval.core.judgments import Judgments  # noqa: E402  (import cycle-free: judgments does not import collection)
