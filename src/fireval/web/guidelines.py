"""Campaign instructions: a Markdown file rendered safely, with example pairs as cards.

``fireval serve --guidelines guide.md`` reads the file once at start-up; :func:`render` turns
it into HTML that the templates insert as is, so this module is the one place where user text
becomes markup. Conventions:

- Rendering is CommonMark by ``markdown-it-py`` with raw HTML **disabled**: ``<script>`` or
  ``<img onerror=...>`` in the file comes out as text. Images are disabled (a guideline cannot
  make the browser fetch anything). Links keep only ``http:``/``https:`` targets; any other
  scheme (``javascript:``, ``data:``, ``file:``, relative paths) leaves the link text unlinked.
  Links open with ``rel="noopener noreferrer"``.
- Example pairs: a fenced block whose info string is ``example`` holds ``key: value`` lines
  (``caption``, ``video``, ``answer``, ``why``; other keys are ignored, as are lines without a
  colon) and is rendered as a card. ``answer`` is ``relevant`` or ``irrelevant`` (anything else
  is shown as given). Values are escaped. Several blocks give several cards::

      ```example
      caption: a man plays a guitar on stage
      video: video7020
      answer: relevant
      why: the man, the guitar and the stage are all visible
      ```

- Without ``--guidelines`` the FIRE guideline (:data:`DEFAULT_MARKDOWN`) is used.
- :attr:`Guidelines.digest` (sha256 of the text) names the version: an annotator sees the
  guideline at their first login ever and once more after it changes (stored per annotator,
  :mod:`fireval.judging.seen`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the one-sentence FIRE rule shown above every item
FIRE_RULE = (
    "Relevant only if every element of the caption is present in the video; when in doubt, not relevant."
)

DEFAULT_MARKDOWN = f"""# Guidelines

{FIRE_RULE}

- Read the caption, then watch the video (use the speed control or the `,` and `.` keys to step frames).
- Answer **Relevant** only if *every* element of the caption (people, objects, actions, places,
  numbers) can be seen or heard in the video.
- Answer **Irrelevant** if any element is missing or contradicted.
- Use **Skip** when you cannot judge (the video does not play), and **Flag** when the pair is
  ambiguous: an expert will review it.

```example
caption: a man is playing a guitar
video: (a man strums a guitar on a stage)
answer: relevant
why: the man, the guitar and the playing are all visible
```

```example
caption: a man is playing a guitar on the beach
video: (a man strums a guitar on a stage)
answer: irrelevant
why: there is no beach: one missing element is enough
```
"""

KEYS = ("caption", "video", "answer", "why")


@dataclass(frozen=True)
class Guidelines:
    """A rendered guideline: the short rule shown above every item and the full HTML page."""

    rule: str
    html: str
    source: str  # the file it came from, or "default"
    digest: str = ""  # sha256 of the Markdown text: the version annotators acknowledge (judging.seen)


def _example_card(text: str) -> str:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key in KEYS and key not in fields:
            fields[key] = value.strip()
    answer = fields.get("answer", "")
    kind = answer.lower() if answer.lower() in ("relevant", "irrelevant") else "other"
    parts = [f'<figure class="example example-{kind}">']
    if "caption" in fields:
        parts.append(
            f'<p class="ex-caption"><span class="ex-key">Caption</span> {html.escape(fields["caption"])}</p>'
        )
    if "video" in fields:
        parts.append(
            f'<p class="ex-video"><span class="ex-key">Video</span> {html.escape(fields["video"])}</p>'
        )
    if answer:
        parts.append(
            f'<p class="ex-answer"><span class="ex-key">Answer</span> <strong>{html.escape(answer)}</strong></p>'
        )
    if "why" in fields:
        parts.append(f'<p class="ex-why"><span class="ex-key">Why</span> {html.escape(fields["why"])}</p>')
    parts.append("</figure>\n")
    return "".join(parts)


def _renderer() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    md.validateLink = lambda url: url.strip().lower().startswith(("http://", "https://"))  # type: ignore[method-assign]
    renderer: Any = md.renderer
    fence = renderer.rules.get("fence")

    def render_fence(tokens: Any, idx: int, options: Any, env: Any) -> str:
        tok = tokens[idx]
        if tok.info.strip().lower() == "example":
            return _example_card(tok.content)
        return str(fence(tokens, idx, options, env)) if fence else html.escape(tok.content)

    def render_link_open(tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "noopener noreferrer")
        tokens[idx].attrSet("target", "_blank")
        return str(renderer.renderToken(tokens, idx, options, env))

    renderer.rules["fence"] = render_fence
    renderer.rules["link_open"] = render_link_open
    return md


def render_markdown(text: str) -> str:
    """Safe HTML for ``text`` (see the module docstring for what is kept)."""
    return str(_renderer().render(text))


def load(path: str | Path | None) -> Guidelines:
    """The guideline of a campaign: ``path`` rendered, or the FIRE default when ``path`` is None.

    The short rule shown above each item is the first paragraph of the file (plain text).
    Raises :class:`~fireval.core.InputError` for a missing, unreadable or empty file.
    """
    from fireval.core import InputError

    if path is None:
        text, source = DEFAULT_MARKDOWN, "default"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(
                f"cannot read the guidelines: {getattr(exc, 'strerror', None) or exc}", source=str(path)
            ) from None
        if not text.strip():
            raise InputError("the guidelines file is empty; expected Markdown text", source=str(path))
        source = str(path)
    from fireval.judging.seen import digest

    return Guidelines(
        rule=_first_paragraph(text), html=render_markdown(text), source=source, digest=digest(text)
    )


def _first_paragraph(text: str) -> str:
    """The first paragraph's plain text (headings, lists and fences skipped), for the rule line."""
    md = _renderer()
    tokens = md.parse(text)
    for i, tok in enumerate(tokens):
        if tok.type == "paragraph_open" and tok.level == 0 and i + 1 < len(tokens):
            children = tokens[i + 1].children or []
            words = [" " if c.type in ("softbreak", "hardbreak") else c.content for c in children]
            rule = "".join(
                w
                for w, c in zip(words, children)
                if c.type in ("text", "code_inline", "softbreak", "hardbreak")
            )
            if rule.strip():
                return " ".join(rule.split())
    return FIRE_RULE
