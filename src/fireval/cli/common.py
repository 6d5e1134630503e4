"""Small helpers shared by the CLI verbs (argument splitting, progress bars)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from fireval.core.errors import InputError


def split_csv(value: str) -> list[str]:
    """``"a, b,,c"`` → ``["a", "b", "c"]``."""
    return [v.strip() for v in value.split(",") if v.strip()]


@contextlib.contextmanager
def progress_bar(
    description: str = "evaluating", disable: bool = False
) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar, yielded as a ``progress(done, total)`` callback (``None`` when disabled)."""
    if disable:
        yield None
        return
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeRemainingColumn(),
        transient=True,
    ) as prog:
        task = prog.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        yield update


def check_output_path(path: str | os.PathLike[str] | None, *, directory: bool = False) -> None:
    """Fail before any work when ``path`` cannot be written (an :class:`InputError` naming it).

    A file output must not be an existing directory; a directory output must not be an existing
    file; and the nearest existing ancestor must be a writable directory (missing directories
    are created on write). ``None`` means "no such output" and passes.
    """
    if path is None:
        return
    p = Path(path)
    if directory:
        if p.exists() and not p.is_dir():
            raise InputError("output directory is an existing file", source=str(p))
        parent = p
    else:
        if p.is_dir():
            raise InputError("is a directory; give a file name for this output", source=str(p))
        parent = p.parent
    anc = parent if str(parent) else Path(".")
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise InputError(f"cannot create it: {anc} is a file, not a directory", source=str(p))
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(f"no permission to write in {anc}", source=str(p))
