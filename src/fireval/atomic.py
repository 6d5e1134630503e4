"""Atomic file writes: write to a temporary file in the same directory, then rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; on success rename it over ``path``.

    If the block raises, the temporary file is removed and ``path`` is untouched, so a
    reader never sees a half-written file. An ``OSError`` that names no file (a full disk,
    ``ENOSPC``, raised by ``write``/``fsync``) is re-raised naming ``path``, so the user learns
    which output could not be written. An output that is an SQLite database or one of its
    companion files (``-wal``, ``-shm``, ...) is refused before anything is written
    (:func:`fireval.paths.refuse_store_file`).
    """
    target = Path(path)
    from fireval.paths import refuse_store_file  # never replace a store's database or WAL

    refuse_store_file(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:  # name the output, not the temporary file
        raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual mode
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc
        raise


def _read_umask() -> int:
    """The process umask (reading it means setting it, so it is read once, at import)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()
