"""Every ``fireval`` command shown in README.md and docs/*.md names a real command, real options and
real measure names.

The commands are taken from the fenced shell blocks (``bash``, ``sh`` or no language; backslash
continuations joined, comments and ``VAR=value`` prefixes dropped, ``[...]`` optional parts
unwrapped) and from inline code spans that start with ``fireval ``. Each is resolved against the
Click tree of the real app (``fireval.cli.make_app``): the sub-command path must exist, every
``-x``/``--long`` token must be an option of that command, and the value of ``-m``/``--measures``
must parse (``fireval.metrics.measures.parse_measures``). A renamed or removed option, command or
measure in the code, or a typo in the docs, fails here with the file and line of the command.

Running the commands is not attempted (they need data and minutes); docs/ holds the examples'
measured outputs, which were checked by hand against real runs.
"""

from __future__ import annotations

import re
import shlex
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import typer

from fireval.cli import make_app
from fireval.metrics.measures import parse_measures

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)\s*$")
_INLINE = re.compile(r"(?<!`)`(fireval [^`]+)`(?!`)")
_SHELL_LANGS = {"", "bash", "sh", "shell", "console"}
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def _shell_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, logical line) of every line in a shell fence, continuations joined."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    lang = ""
    pending: tuple[int, str] | None = None
    for no, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence, lang = m.group(2), m.group(3).lower()
            continue
        if m and m.group(2).startswith(fence[0]) and len(m.group(2)) >= len(fence) and not m.group(3):
            fence = None
            continue
        if lang not in _SHELL_LANGS:
            continue
        start, acc = pending if pending else (no, "")
        acc += line.rstrip()
        if acc.endswith("\\"):
            pending = (start, acc[:-1] + " ")
            continue
        pending = None
        out.append((start, acc))
    return out


def _commands(path: Path) -> list[tuple[str, list[str]]]:
    """(``file:line``, argv after ``fireval``) for every fireval command in one Markdown file."""
    text = path.read_text(encoding="utf-8")
    found: list[tuple[str, list[str]]] = []
    candidates = _shell_blocks(text)
    for no, line in enumerate(text.splitlines(), 1):
        candidates.extend((no, m.group(1)) for m in _INLINE.finditer(line))
    for no, line in candidates:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # an unbalanced quote in prose: not a command
            continue
        for part in " ".join(shlex.quote(w) for w in words).split(" && "):
            argv = [w.strip("[]") for w in shlex.split(part)]
            while argv and _ENV.match(argv[0]):
                argv.pop(0)
            if not argv or not (argv[0] == "fireval" or argv[0].endswith("/bin/fireval")):
                continue
            argv = [a for a in argv[1:] if a not in ("", "...", "|")]
            found.append((f"{path.relative_to(REPO)}:{no}", argv))
    return found


ALL = [c for f in DOC_FILES for c in _commands(f)]


@cache
def _root() -> Any:
    return typer.main.get_command(make_app())


def _resolve(argv: list[str]) -> tuple[Any, list[str], str]:
    cmd = _root()
    path = "fireval"
    rest = list(argv)
    while hasattr(cmd, "commands") and rest and not rest[0].startswith("-"):
        sub = cmd.commands.get(rest[0])
        if sub is None:
            raise AssertionError(f"`{path} {rest[0]}`: no such command")
        cmd, path, rest = sub, f"{path} {rest[0]}", rest[1:]
    return cmd, rest, path


def _options(cmd: Any) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    for p in cmd.params:
        for name in (*p.opts, *p.secondary_opts):
            if name.startswith("-"):
                opts[name] = p
    return opts


def test_docs_show_fireval_commands() -> None:
    """The extraction works: the README and the docs show many commands (so the test below can fail)."""
    files = {where.split(":")[0] for where, _ in ALL}
    assert len(ALL) >= 50, len(ALL)
    assert {"README.md", "docs/metrics.md", "docs/checks.md", "docs/judging.md"} <= files


@pytest.mark.parametrize(("where", "argv"), ALL, ids=[f"{w} {' '.join(a)[:60]}" for w, a in ALL])
def test_doc_command_uses_real_options(where: str, argv: list[str]) -> None:
    try:
        cmd, rest, path = _resolve(argv)
    except AssertionError as exc:
        pytest.fail(f"{where}: {exc}")
    opts = _options(cmd)
    opts.setdefault("--help", None)
    opts.setdefault("-h", None)
    i = 0
    while i < len(rest):
        tok = rest[i]
        i += 1
        if tok == "--":
            break
        if not tok.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", tok):
            continue
        name, _, inline = tok.partition("=")
        assert name in opts, f"{where}: `{path}` has no option {name} (options: {', '.join(sorted(opts))})"
        param = opts[name]
        takes_value = (
            param is not None and not getattr(param, "is_flag", False) and not getattr(param, "count", False)
        )
        value = inline if inline else (rest[i] if takes_value and i < len(rest) else None)
        if takes_value and not inline:
            i += 1
        if param is not None and param.name == "measures" and value and not re.fullmatch(r"[A-Z_]+", value):
            try:
                parse_measures(value)
            except Exception as exc:  # a stale measure name in the docs
                pytest.fail(f"{where}: `{path} {name} {value}`: {exc}")
