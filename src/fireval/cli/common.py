"""Small helpers shared by the CLI verbs (argument splitting, progress bars, the help layout)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
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


MinGradeOpt = Annotated[
    float | None,
    typer.Option(
        "--min-grade",
        help="Relevance threshold for the binary measures (trec_eval's -l): a doc is relevant when its "
        "grade is >= G (e.g. a proxy grade, Wray et al. fn. 2); nDCG, nDCG_exp and infNDCG keep the "
        "grades. Default: grade > 0.",
        show_default=False,
        callback=lambda value: check_min_grade(value),  # at parse time (defined below)
    ),
]


def check_min_grade(value: float | None, option: str = "--min-grade") -> float | None:
    """``--min-grade`` must be a finite number > 0 (checked before any file is read)."""
    import math

    if value is not None and not (math.isfinite(value) and value > 0):
        raise InputError(f"{option} must be a finite number > 0 (relevant = grade >= it), got {value:g}")
    return value


def sets_with_grade(sets: dict[str, Any], min_grade: float | None) -> dict[str, Any]:
    """The label sets that hold a grade >= ``min_grade`` (all of them without ``--min-grade``).

    A set without one (e.g. the instance labels, whose positives are grade 1, under
    ``--min-grade 2``) would have no relevant doc for any binary measure: it is left out with a
    note on stderr; none left is a one-line error (exit 2)."""
    if min_grade is None:
        return sets
    kept = {k: j for k, j in sets.items() if j.grades.size and float(j.grades.max()) >= min_grade}
    for name in sets:
        if name not in kept:
            typer.echo(
                f"note: --min-grade {min_grade:g}: the {name!r} labels have no grade >= {min_grade:g} "
                "(instance positives are grade 1 unless another source grades them); left out",
                err=True,
            )
    if not kept:
        top = max((float(j.grades.max()) for j in sets.values() if j.grades.size), default=0.0)
        raise InputError(
            f"--min-grade {min_grade:g}: no label has a grade >= {min_grade:g} (largest: {top:g})"
        )
    return kept


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


# ---------------------------------------------------------------------- option checks at parse time
# Typer/Click callbacks: an option's value is checked when the command line is parsed, before any
# file is read, whether or not the command ends up using it (``--sim bogus`` without embeddings).
# They raise InputError, which the CLI prints as one line with exit code 2.


#: ``--sim`` / ``--pool`` of embedding runs (fireval.scale.embeddings.SIMS / POOLS, without importing numpy)
EMBEDDING_SIMS = ("dot", "cosine")
EMBEDDING_POOLS = ("mean", "max")


#: values of the enum options, spelled here so that parsing imports no library module (each is
#: checked against the library's own tuple in tests/robustness/test_bad_input_sweep.py)
DIRECTIONS = ("t2v", "v2t")  # fireval.core.Direction
TIE_POLICIES = ("tie-aware", "optimistic", "pessimistic", "docid")  # fireval.metrics.ties
UNJUDGED_MODES = ("lower", "upper", "condensed", "worst", "best")  # fireval.metrics.evaluate
PRESETS = ("fire2023", "clip4clip", "wray2021")  # fireval.metrics.presets
ROLES = ("annotator", "admin")  # fireval.judging.schema
MATCHERS = ("char", "word", "edit")  # fireval.proxies.matchers
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")  # uvicorn's


def choice(
    option: str, choices: tuple[str, ...], *, casefold: bool = False, csv: bool = False
) -> Callable[[Any], Any]:
    """A callback refusing any value of ``option`` outside ``choices`` (compared in lower case when
    ``casefold``; with ``csv``, a comma-separated list of them, at least one)."""

    def check(value: Any) -> Any:
        if value is None:
            return value
        items = split_csv(value) if csv else [value]
        bad = [v for v in items if (v.strip().lower() if casefold else v) not in choices]
        if bad or not items:
            what = (
                f"comma-separated values from {', '.join(choices)}" if csv else f"one of {', '.join(choices)}"
            )
            raise InputError(f"{option}: expected {what}, got {value!r}")
        return value

    return check


def int_at_least(option: str, lo: int, what: str = "") -> Callable[[Any], Any]:
    """A callback refusing an integer ``option`` below ``lo`` (``None``, the option's absence, passes)."""

    def check(value: Any) -> Any:
        if value is not None and int(value) < lo:
            raise InputError(f"{option} must be >= {lo}{what}, got {value}")
        return value

    return check


def int_between(option: str, lo: int, hi: int) -> Callable[[Any], Any]:
    """A callback refusing an integer ``option`` outside ``lo..hi`` (e.g. ``--port``)."""

    def check(value: Any) -> Any:
        if value is not None and not lo <= int(value) <= hi:
            raise InputError(f"{option} must be between {lo} and {hi}, got {value}")
        return value

    return check


def seed_option(option: str = "--seed") -> Callable[[Any], Any]:
    """A callback for a random seed (:func:`check_seed`)."""

    def check(value: Any) -> Any:
        return value if value is None else check_seed(value, option)

    return check


def check_measures_option(value: str | None) -> str | None:
    """``-m/--measures``: a comma-separated list of measure names that parse (``R@K`` as ``C@K``),
    at least one (parsing imports the measures module, only when the command runs)."""
    if value is None:
        return value
    from fireval.core.errors import FirevalError
    from fireval.metrics.measures import parse_measure

    names = split_csv(value)
    if not names:
        raise InputError(f"-m/--measures: no measure given in {value!r}")
    for name in names:
        try:
            parse_measure(name, "tvr")
        except FirevalError as exc:
            raise InputError(f"-m/--measures: {exc}") from None
    return value


def number_in(
    option: str, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False
) -> Callable[[Any], Any]:
    """A callback refusing a value of ``option`` outside ``[lo, hi]`` (``(`` / ``)`` when open), and NaN."""
    import math

    def check(value: Any) -> Any:
        if value is None:
            return value
        v = float(value)
        bad = math.isnan(v) or v < lo or v > hi or (lo_open and v == lo) or (hi_open and v == hi)
        if bad:
            interval = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
            raise InputError(f"{option} must be a number in {interval}, got {value}")
        return value

    return check


def check_precedence_option(value: str | None) -> str | None:
    """``--precedence``: known source kinds or names, each listed once."""
    if value is None:
        return value
    from fireval.api import check_precedence

    check_precedence(split_csv(value))
    return value


def check_url_template(value: str | None) -> str | None:
    """``--video-url-template``: an absolute http(s) URL, or a path on this server (``/m/...``),
    containing ``{video_id}`` (never ``javascript:``, ``data:`` or another scheme, which the page
    would follow as the video)."""
    if value is None:
        return value
    from urllib.parse import urlsplit

    parts = urlsplit(value.replace("{video_id}", "x"))
    same_site = value.startswith("/") and not value.startswith("//") and not parts.scheme
    if not same_site and (parts.scheme.lower() not in ("http", "https") or not parts.netloc):
        raise InputError(
            "--video-url-template must be an http:// or https:// URL (or a path on this server, "
            f"/media/{{video_id}}.mp4) with {{video_id}}, got {value!r}"
        )
    if "{video_id}" not in value:
        raise InputError(f"--video-url-template must contain {{video_id}}, got {value!r}")
    return value


def check_file_ext(value: str | None) -> str | None:
    """``--video-ext``: a file-name extension such as ``.mp4`` (letters and digits after one dot),
    never a path (``/../../x``) that would lead video requests out of ``--video-dir``."""
    import re

    if value is not None and not re.fullmatch(r"\.[A-Za-z0-9]{1,16}", value):
        raise InputError(
            f"--video-ext must be an extension such as .mp4 (a dot, then letters or digits), got {value!r}"
        )
    return value


RunDirectionOpt = Annotated[
    str,
    typer.Option(
        callback=choice("--run-direction", DIRECTIONS, casefold=True),
        help="Orientation of TREC runs / v2t matrices.",
    ),
]
"""``--run-direction`` of every verb that reads runs (evaluate, check, pool, plan, estimate)."""

# the video options of the two web verbs (`serve`, `explore`), declared once
PortOpt = Annotated[int, typer.Option(callback=int_between("--port", 0, 65535), help="TCP port.")]
VideoDirOpt = Annotated[Path | None, typer.Option(help="Directory of <video_id><ext> files.")]
VideoUrlTemplateOpt = Annotated[
    str | None,
    typer.Option(
        callback=check_url_template,
        help="http(s) URL with {video_id}, e.g. https://host/videos/{video_id}.mp4.",
    ),
]
VideoExtOpt = Annotated[str, typer.Option(callback=check_file_ext, help="Extension of files in --video-dir.")]


def printable(text: object) -> str:
    """``text`` safe to print in a tab-separated listing or on a terminal: control and format
    characters (tab, newline, ESC, ...) as Python escapes (``\\t``, ``\\n``, ``\\x1b``), a backslash
    doubled; everything printable unchanged."""
    import unicodedata

    s = str(text)
    if s.isprintable() and "\\" not in s:
        return s
    out = []
    for c in s:
        if c == "\\":
            out.append("\\\\")
        elif not c.isprintable() or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(ascii(c)[1:-1])
        else:
            out.append(c)
    return "".join(out)


def check_forwarded_ips(value: str | None) -> str | None:
    """``--forwarded-allow-ips``: comma-separated IP addresses or networks (``10.0.0.0/8``), or
    ``*`` (every peer is a trusted proxy: only when nothing but the proxy can reach the server)."""
    if value is None:
        return value
    import ipaddress

    items = split_csv(value)
    if not items:
        raise InputError(f"--forwarded-allow-ips: no address given in {value!r}")
    for item in items:
        if item == "*":
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise InputError(
                f"--forwarded-allow-ips: {item!r} is not an IP address or network (e.g. 127.0.0.1, 10.0.0.0/8)"
            ) from None
    return ",".join(items)
