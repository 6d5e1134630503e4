"""Which version of the campaign's guideline each annotator has acknowledged.

Stored per annotator in ``annotators.guidelines_seen`` (schema revision 0006): the sha256 of the
guideline's text (:func:`digest`, over the Markdown source as UTF-8) the annotator last
dismissed, and when (``guidelines_seen_at``). The web app shows the guideline while the stored
digest differs from the current one: at an annotator's first login ever (NULL), and once more
after the campaign's guideline text changes; never again at a new session or on another device.
Whitespace counts: any edit of the file is a change.
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from fireval.judging import schema as S
from fireval.judging.engine import Database, now


def digest(text: str) -> str:
    """sha256 (hex) of the guideline text: the version an annotator acknowledges."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class GuidelinesSeen:
    """Read and record acknowledgements over one :class:`~fireval.judging.engine.Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def seen(self, annotator_id: int) -> str | None:
        """The digest the annotator last acknowledged (``None``: never, or no such annotator)."""
        A = S.annotators.c
        with self.db.reading() as conn:
            got = conn.execute(sa.select(A.guidelines_seen).where(A.id == annotator_id)).scalar()
        return None if got is None else str(got)

    def needs(self, annotator_id: int, current: str) -> bool:
        """Whether the guideline of digest ``current`` should be shown to the annotator."""
        return self.seen(annotator_id) != current

    def mark(self, annotator_id: int, current: str) -> None:
        """Record that the annotator acknowledged the guideline of digest ``current``."""

        def op(conn: Connection) -> None:
            A = S.annotators.c
            conn.execute(
                S.annotators.update()
                .where(A.id == annotator_id)
                .values(guidelines_seen=current, guidelines_seen_at=now())
            )

        self.db.write(op)
