"""Caption text normalisation used only to join label files that key by caption text."""

from __future__ import annotations

import re

_NON_ALNUM = re.compile(r"[\W_]+", re.UNICODE)


def normalise(text: str) -> str:
    """Lowercase, replace every run of non-alphanumeric characters by one space, strip.

    ``normalise("A woman  creating a fondant/ baby!") == "a woman creating a fondant baby"``.
    The verbatim text is always kept in the :class:`~fireval.core.Collection`; this form is a
    join key only (FIRE JSON keys its labels by caption text).
    """
    return _NON_ALNUM.sub(" ", text.lower()).strip()
