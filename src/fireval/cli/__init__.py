"""The ``fireval`` command: one Typer app; each verb is a thin shell over the library.

Each sub-module defines ``register(app)``. User errors (:class:`fireval.FirevalError`) are
printed without a traceback and exit with code 2.

Start-up is kept short (issue 14; ``benchmarks/bench_cli.py``): the verb modules import only
Typer at their top and everything else inside the command; the help is Click's plain layout
(``rich_markup_mode=None``, with :class:`~fireval.cli.common.HelpGroup` listing whole command
summaries), since Typer's rich panels import rich.markdown, markdown-it and pygments on every
start. ``tests/cli/test_import_cost.py`` checks that no heavy module is imported.
"""

from __future__ import annotations

import errno
import importlib
import sys

import typer

from fireval.cli.common import HelpGroup
from fireval.core.errors import FirevalError, InternalError, mask_secrets

# verb modules; each owns its file and registers its commands (in this order in the help)
_MODULES = (
    "evaluate",
    "demo",
    "pool",
    "judgments",
    "serve",
    "explore",
    "proxies",
    "labels",
    "report",
    "check",
    "measures",
    "plan",
    "estimate",
    "collection",
)

#: the module that registers each command: `fireval CMD ...` imports and builds only that one
#: (tests/cli/test_import_cost.py checks this against the full app)
COMMAND_MODULES = {
    "evaluate": "evaluate",
    "version": "demo",
    "demo": "demo",
    "pool": "pool",
    "judgments": "judgments",
    "serve": "serve",
    "explore": "explore",
    "proxies": "proxies",
    "labels": "labels",
    "report": "report",
    "compare": "report",
    "budget": "report",
    "check": "check",
    "measures": "measures",
    "plan": "plan",
    "estimate": "estimate",
    "collection": "collection",
}


def _print_version(value: bool) -> None:
    if value:
        from fireval import __version__

        typer.echo(f"fireval {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", "-V", help="Print the version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Valid evaluation of text-video retrieval."""


def make_app(modules: tuple[str, ...] = _MODULES) -> typer.Typer:
    """The ``fireval`` app with the commands of ``modules`` (default: all)."""
    app = typer.Typer(
        name="fireval",
        help="Valid evaluation of text-video retrieval (FIRE labels, tie-aware metrics, judging, proxies).",
        cls=HelpGroup,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        rich_markup_mode=None,  # plain help and errors: no rich.markdown/markdown-it at start-up
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    )
    for name in modules:
        importlib.import_module(f"fireval.cli.{name}").register(app)
    app.callback()(_root)
    return app


def _app_for(args: list[str]) -> typer.Typer:
    """The app that runs ``fireval ARGS``: only the command's own module when the first word
    names a command (building every command's parser costs tens of ms), else all of them (the
    command list, ``--version``, and Click's "no such command" with its suggestions)."""
    first = next((a for a in args if not a.startswith("-")), None)
    if first in COMMAND_MODULES and args[0] == first:
        return make_app((COMMAND_MODULES[first],))
    return make_app()


def __getattr__(name: str) -> typer.Typer:  # `fireval.cli.app`: the full app, built on first use
    if name == "app":
        return make_app()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning user errors into a one-line message and exit code 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        _app_for(args)(args=args, prog_name="fireval")
    except FirevalError as exc:
        typer.secho(f"fireval: error: {exc}", err=True, fg="red")
        sys.exit(exc.exit_code)
    except InternalError as exc:
        typer.secho(
            f"fireval: internal error (a bug, please report it): {mask_secrets(str(exc))}", err=True, fg="red"
        )
        sys.exit(exc.exit_code)
    except FileNotFoundError as exc:
        # an input that is missing, or an output where no file can be created (``/proc/x``):
        # "no such file: OUT" would call a file the user asked to write missing
        typer.secho(f"fireval: error: {exc.filename}: no such file or directory", err=True, fg="red")
        sys.exit(2)
    except OSError as exc:  # unwritable output, disk full, a directory where a file should be
        where = f"{exc.filename}: " if exc.filename else ""
        what = exc.strerror or str(exc)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            what += " (nothing was written to it; free some space and run again)"
        typer.secho(f"fireval: error: {mask_secrets(where + what)}", err=True, fg="red")
        sys.exit(2)
