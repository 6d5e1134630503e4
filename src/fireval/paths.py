"""Output paths that must not overwrite an input: one guard for every command that writes files.

A command that writes ``-o out.json`` while reading ``out.json`` (as a run, a label file, the
collection, a split list or the annotation store) would destroy that input. :func:`guard_outputs`
refuses such a call before any work, with one :class:`~fireval.core.InputError` naming the
output and the input it would overwrite.

Two paths are the same file when

- their resolved absolute paths are equal (``./x`` vs ``x``, ``a/../x``, symlinks to the file or
  to a directory on its path are all resolved), or
- both exist and share ``(st_dev, st_ino)`` (hard links, bind mounts, case-insensitive file
  systems).

An input given as a store URL counts as its file: ``sqlite:///x.db`` (and ``sqlite:////abs/x.db``)
is ``x.db``; server URLs (``postgresql://...``) name no local file and are skipped. Two outputs
that are the same file are refused too (the second would silently replace the first).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from fireval.core.errors import InputError

PathLike = str | os.PathLike[str]

#: URL schemes (prefixes) of annotation stores that live on a server, not in a local file
SERVER_URL_PREFIXES = ("postgresql", "postgres", "mysql", "mariadb", "oracle", "mssql")


def local_file(spec: PathLike | None) -> Path | None:
    """The local file behind an input spec, or None when it names none.

    ``sqlite:///x.db`` → ``x.db``; ``sqlite://`` / ``sqlite:///:memory:`` and server URLs → None;
    a plain path → itself.
    """
    if spec is None:
        return None
    s = os.fspath(spec)
    if not s:
        return None
    if s.startswith("sqlite:"):
        rest = s[len("sqlite:") :]
        if not rest.startswith("///"):
            return None
        path = rest[3:].split("?", 1)[0]
        return None if path in ("", ":memory:") else Path(path)
    if "://" in s and s.split("://", 1)[0].split("+", 1)[0].lower() in SERVER_URL_PREFIXES:
        return None
    return Path(s)


def _identity(p: Path) -> tuple[Path, tuple[int, int] | None]:
    resolved = Path(os.path.realpath(os.path.abspath(p)))
    try:
        st = os.stat(resolved)
    except OSError:
        return resolved, None
    return resolved, (st.st_dev, st.st_ino)


def same_file(a: PathLike, b: PathLike) -> bool:
    """True when ``a`` and ``b`` are (or would be) the same file (see the module docstring)."""
    ra, ia = _identity(Path(a))
    rb, ib = _identity(Path(b))
    return ra == rb or (ia is not None and ia == ib)


def guard_outputs(
    outputs: Iterable[tuple[str, PathLike | None]], inputs: Iterable[tuple[str, PathLike | None]]
) -> None:
    """Refuse (``InputError``) when an output is an input or another output.

    ``outputs`` and ``inputs`` are ``(what, path_or_spec)`` pairs, e.g. ``("--json", "r.json")``
    and ``("run", "a.npy")``, ``("store", "sqlite:///x.db")``; ``None`` entries are skipped. Call
    it before reading anything, so that nothing is written or half-done when it refuses.
    """
    ins = [(what, p, _identity(p)) for what, spec in inputs if (p := local_file(spec)) is not None]
    seen: list[tuple[str, Path, tuple[Path, tuple[int, int] | None]]] = []
    for what, spec in outputs:
        if spec is None:
            continue
        out = Path(os.fspath(spec))
        ident = _identity(out)
        for in_what, in_path, in_ident in ins:
            if ident[0] == in_ident[0] or (ident[1] is not None and ident[1] == in_ident[1]):
                raise InputError(
                    f"output {what} is the same file as the {in_what} {str(in_path)!r}; "
                    "refusing to overwrite an input (choose another output name)",
                    source=str(out),
                )
        for o_what, _, o_ident in seen:
            if ident[0] == o_ident[0] or (ident[1] is not None and ident[1] == o_ident[1]):
                raise InputError(
                    f"outputs {o_what} and {what} are the same file; give each its own name",
                    source=str(out),
                )
        seen.append((what, out, ident))
