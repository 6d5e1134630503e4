"""``fireval version`` (placeholder until ``demo`` lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def version() -> None:
        """Print the fireval version."""
        from fireval import __version__

        typer.echo(__version__)
