"""Small helpers shared by the CLI verbs (argument splitting, progress bars)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


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
