"""The ``fireval`` command: one Typer app; each verb is a thin shell over the library.

Each sub-module defines ``register(app)``. User errors (:class:`fireval.FirevalError`) are
printed without a traceback and exit with code 2.
"""

from __future__ import annotations

import errno
import importlib
import sys

import typer

from fireval.core.errors import FirevalError, InternalError

app = typer.Typer(
    name="fireval",
    help="Valid evaluation of text-video retrieval (FIRE labels, tie-aware metrics, judging, proxies).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# verb modules; each owns its file and registers its commands
_MODULES = ("evaluate", "demo", "pool", "judgments", "serve", "proxies", "labels", "report", "check")

for _name in _MODULES:
    importlib.import_module(f"fireval.cli.{_name}").register(app)


def _print_version(value: bool) -> None:
    if value:
        from fireval import __version__

        typer.echo(f"fireval {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", help="Print the version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Valid evaluation of text-video retrieval."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning user errors into a one-line message and exit code 2."""
    try:
        app(args=argv, prog_name="fireval")
    except FirevalError as exc:
        typer.secho(f"fireval: error: {exc}", err=True, fg="red")
        sys.exit(exc.exit_code)
    except InternalError as exc:
        typer.secho(f"fireval: internal error (a bug, please report it): {exc}", err=True, fg="red")
        sys.exit(exc.exit_code)
    except FileNotFoundError as exc:
        typer.secho(f"fireval: error: no such file: {exc.filename}", err=True, fg="red")
        sys.exit(2)
    except OSError as exc:  # unwritable output, disk full, a directory where a file should be
        where = f"{exc.filename}: " if exc.filename else ""
        what = exc.strerror or str(exc)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            what += " (nothing was written to it; free some space and run again)"
        typer.secho(f"fireval: error: {where}{what}", err=True, fg="red")
        sys.exit(2)
