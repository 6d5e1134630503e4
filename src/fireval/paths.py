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

An input also protects its companion files (:data:`COMPANION_SUFFIXES`: SQLite's ``-wal``,
``-shm`` and ``-journal``, the store's ``-writer.lock``): replacing a live store's WAL loses
acknowledged answers. Independently of the inputs, :func:`refuse_store_file` refuses any output
that is an existing SQLite database or a companion of one (it runs here and again in
:func:`fireval.atomic.atomic_write`, the last line of defence for outputs no guard sees).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from fireval.core.errors import InputError

PathLike = str | os.PathLike[str]

#: URL schemes (prefixes) of annotation stores that live on a server, not in a local file
SERVER_URL_PREFIXES = ("postgresql", "postgres", "mysql", "mariadb", "oracle", "mssql")


#: files SQLite (and the store's multi-process writer) keeps beside a database file
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal", "-writer.lock")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_WAL_MAGIC = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


def is_sqlite_file(path: PathLike) -> bool:
    """True when ``path`` is an existing regular file that starts with SQLite's header."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == _SQLITE_MAGIC
    except OSError:
        return False


def _is_wal_file(path: PathLike) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) in _WAL_MAGIC
    except OSError:
        return False


def refuse_store_file(path: PathLike, what: str = "output") -> None:
    """Refuse (``InputError``) an output that is an SQLite database or one of its companion files
    (``x.db-wal`` beside an SQLite ``x.db``): writing it would corrupt a store, live or not."""
    p = Path(os.path.realpath(os.path.abspath(os.fspath(path))))
    if is_sqlite_file(p):
        raise InputError(
            f"{what} is an SQLite database (an annotation store?); refusing to overwrite it "
            "(choose another output name)",
            source=os.fspath(path),
        )
    if _is_wal_file(p):  # a hard link to a WAL under another name
        raise InputError(
            f"{what} is an SQLite write-ahead log (a store's -wal file); refusing to overwrite it "
            "(choose another output name)",
            source=os.fspath(path),
        )
    for suffix in COMPANION_SUFFIXES:
        if p.name.endswith(suffix) and len(p.name) > len(suffix):
            base = p.with_name(p.name[: -len(suffix)])
            if is_sqlite_file(base):
                raise InputError(
                    f"{what} is the {suffix[1:]} file of the SQLite database {str(base)!r}; refusing "
                    "to overwrite a store's file (choose another output name)",
                    source=os.fspath(path),
                )


def companions(p: Path) -> list[Path]:
    """``p`` with each of :data:`COMPANION_SUFFIXES` appended (``x.db`` → ``x.db-wal``, ...)."""
    return [p.with_name(p.name + s) for s in COMPANION_SUFFIXES]


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
    ins = []
    for what, spec in inputs:
        if (p := local_file(spec)) is None:
            continue
        ins.append((what, p, _identity(p)))
        # a live store's files: its WAL, shared memory, rollback journal and writer lock
        real = _identity(p)[0]
        ins.extend(
            (f"{what}'s {c.name[len(real.name) + 1 :]} file", c, _identity(c)) for c in companions(real)
        )
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
        refuse_store_file(out, f"output {what}")
        for o_what, _, o_ident in seen:
            if ident[0] == o_ident[0] or (ident[1] is not None and ident[1] == o_ident[1]):
                raise InputError(
                    f"outputs {o_what} and {what} are the same file; give each its own name",
                    source=str(out),
                )
        seen.append((what, out, ident))
