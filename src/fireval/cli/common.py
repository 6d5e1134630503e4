"""Small helpers shared by the CLI verbs (argument splitting, progress bars, the help layout)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer.core import TyperGroup

from fireval.core.errors import InputError

if TYPE_CHECKING:
    from fireval.core import Collection


#: stands for "-" while Click wraps help text, so that lines break only at spaces
_NB_HYPHEN = "\u2011"
_Context = TyperGroup.context_class


class _HelpFormatter(_Context.formatter_class):  # type: ignore[name-defined,misc]
    """Click's help formatter, wrapping lines only at spaces (never inside ``--text-emb``)."""

    def write(self, string: str) -> None:
        super().write(string.replace(_NB_HYPHEN, "-"))

    def write_text(self, text: str) -> None:
        super().write_text(text.replace("-", _NB_HYPHEN))

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        super().write_dl([(a, b.replace("-", _NB_HYPHEN)) for a, b in rows], col_max, col_spacing)


class _HelpContext(_Context):  # type: ignore[valid-type,misc]
    formatter_class = _HelpFormatter


class HelpGroup(TyperGroup):
    """A command group whose ``--help`` lists each command with its whole first paragraph.

    The app uses Click's plain help (``rich_markup_mode=None``: Typer's rich panels import
    rich.markdown, markdown-it and pygments, about 90 ms on every start). Click cuts a command's
    summary to one line at its first full stop ("Wray et al."); here it is kept whole. Help text
    wraps at spaces only (Click also breaks at hyphens: ``--text-`` / ``emb``), in this group and
    in every command it hands a context to.
    """

    context_class = _HelpContext

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            cmd.context_class = _HelpContext
        return cmd

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            text = cmd.short_help or (cmd.help or "").strip().split("\n\n")[0]
            rows.append((name, " ".join(text.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def split_csv(value: str) -> list[str]:
    """``"a, b,,c"`` → ``["a", "b", "c"]``."""
    return [v.strip() for v in value.split(",") if v.strip()]


@contextlib.contextmanager
def progress_bar(
    description: str = "evaluating", disable: bool = False
) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr, yielded as a ``progress(done, total)`` callback.

    ``None`` (nothing drawn) when ``disable`` (``-q``) or when stderr is not a terminal, so pipes,
    logs and CI output stay clean. Until the first call the bar pulses (unknown total) with the
    elapsed time, so a step without a callback still shows that it is working.
    """
    import sys

    if disable or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (  # rich.progress is heavy: only when a bar is drawn
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=True,
        console=Console(stderr=True),
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


def guard_outputs(
    outputs: dict[str, str | os.PathLike[str] | None],
    *,
    runs: Iterable[str | os.PathLike[str]] = (),
    collection: str | os.PathLike[str] | None = None,
    split: str | os.PathLike[str] | None = None,
    labels: Iterable[str | os.PathLike[str]] | None = (),
    store: str | os.PathLike[str] | None = None,
    others: dict[str, str | os.PathLike[str] | None] | None = None,
) -> None:
    """Before any work: each output must be writable and must not be an input (or another output).

    ``outputs`` maps the option name (``"--json"``) to its path. Inputs: runs (``PATH`` or
    ``NAME=PATH``), the collection (when it is a file; ``example`` names the bundled one), the split list,
    label specs (``instance`` is no file; store URLs count as their SQLite file), the store and
    ``others`` (``{what: path}``). See :func:`fireval.paths.guard_outputs`.
    """
    from fireval.paths import guard_outputs as _guard

    for path in outputs.values():
        check_output_path(path)
    ins: list[tuple[str, str | os.PathLike[str] | None]] = []
    from fireval.api import split_run_spec

    # the run's path by the rule every verb reads runs with (``best=runs/lr=0.1/sims.npy`` guards
    # ``runs/lr=0.1/sims.npy``, ``lr=0.1.npy`` guards itself when it exists)
    ins.extend(("run", split_run_spec(r)[1]) for r in runs)
    if collection is not None and Path(collection).exists():  # else a bundled name such as 'example'
        ins.append(("collection", collection))
    ins.append(("split list", split))
    from fireval.api import split_label_spec  # NAME=PATH guards PATH

    ins.extend(
        ("labels", split_label_spec(spec)[1]) for spec in (labels or ()) if os.fspath(spec) != "instance"
    )
    ins.append(("annotation store", store))
    ins.extend((others or {}).items())
    _guard(outputs.items(), ins)


SEED_MAX = 2**32 - 1


def check_seed(seed: int, option: str = "--seed") -> int:
    """A random seed must be an integer in 0..2**32-1 (what numpy's generators accept everywhere)."""
    if not 0 <= int(seed) <= SEED_MAX:
        raise InputError(f"{option} must be an integer from 0 to {SEED_MAX}, got {seed}")
    return int(seed)


_COLLECTION_LAYOUTS = (
    "Collection file (any known layout, detected by content; .gz fine): JSFusion/caption CSV "
    "(MSR-VTT, DiDeMo, ActivityNet, VATEX), MSR-VTT/MSVD/YouCook2 JSON, MSVD raw corpus CSV, EPIC-Kitchens-100 CSV, "
    "LSMDC TSV, JSONL"
)


def collection_help(default: str = "the bundled example (MSR-VTT 1k-A)") -> str:
    """The help of every ``-c/--collection`` option: the layouts read, then what no ``-c`` means."""
    return f"{_COLLECTION_LAYOUTS}; default: {default}."


#: ``-c`` of the verbs that fall back to the bundled example
COLLECTION_HELP = collection_help()


def note_collection(given: str | None, collection: Collection) -> None:
    """Say on stderr which collection is used when no ``-c`` was given (the bundled example)."""
    if given is None:
        import typer

        typer.echo(
            f"note: no -c/--collection given: using the bundled example {collection.name!r} "
            f"({collection.n_captions} captions x {collection.n_videos} videos)",
            err=True,
        )


@contextlib.contextmanager
def default_collection_hint(given: str | None) -> Iterator[None]:
    """Around loading runs: when no ``-c`` was given and a run does not fit the bundled example,
    say so in the error (the usual cause is a forgotten ``-c``)."""
    try:
        yield
    except InputError as exc:
        text = str(exc)
        misfit = any(w in text for w in ("shape", "unknown", " ids but ")) and "looks transposed" not in text
        if given is None and misfit:
            raise InputError(
                f"{text}; no -c/--collection was given, so the bundled example (MSR-VTT 1k-A) was "
                "used: pass the run's collection with -c"
            ) from None
        raise
