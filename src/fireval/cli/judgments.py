"""``fireval judgments``: create and fill the annotation store, show status, export FIRE JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

DB_HELP = "Store: SQLite file path or URL (sqlite:///f.db, postgresql+psycopg2://...)."


def require_existing_store(db: str) -> None:
    """Refuse an SQLite store file that does not exist (a typo would silently create an empty one).

    Verbs that only read or tidy a store (status, release, export) call this; ``init`` creates.
    """
    from fireval.core.errors import InputError

    if "://" not in db:
        path = db
    elif db.startswith("sqlite:///"):
        path = db[len("sqlite:///") :].split("?", 1)[0]
    else:
        return  # a server database (PostgreSQL): the driver reports a missing one
    if path in ("", ":memory:"):
        return
    if not Path(path).exists():
        raise InputError(
            f"no annotation store here; create it with `fireval judgments init --db {db}`", source=db
        )


def register(app: typer.Typer) -> None:
    sub = typer.Typer(
        help="Annotation store: init, load pools, annotators, status, export.", no_args_is_help=True
    )
    app.add_typer(sub, name="judgments")

    @sub.command()
    def init(db: Annotated[str, typer.Option("--db", help=DB_HELP)]) -> None:
        """Create the store or upgrade its schema to the newest revision."""
        from fireval.judging.store import Store

        st = Store(db)
        typer.echo(f"store {st.url} at schema revision {st.revision}")
        st.close()

    @sub.command()
    def load(
        pool: Annotated[Path, typer.Argument(help="Pool file from `fireval pool`.")],
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
        dataset: Annotated[str | None, typer.Option(help="Override the pool's dataset name.")] = None,
    ) -> None:
        """Load a pool's items into the store (items already present are kept)."""
        from fireval.judging.store import Store

        st = Store(db)
        try:
            added, present = st.load_pool(pool, dataset)
        finally:
            st.close()
        typer.echo(f"loaded {added} items ({present} already present)")

    @sub.command("add-annotator")
    def add_annotator(
        name: Annotated[str, typer.Argument()],
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
        role: Annotated[str, typer.Option(help="annotator or admin.")] = "annotator",
    ) -> None:
        """Create an annotator and print their login token (shown once; only its hash is stored)."""
        from fireval.judging.store import Store

        st = Store(db)
        try:
            ann, token = st.add_annotator(name, role)
        finally:
            st.close()
        typer.echo(f"{ann.name}\t{ann.role}\t{token}")

    @sub.command()
    def status(db: Annotated[str, typer.Option("--db", help=DB_HELP)]) -> None:
        """Queue status, throughput and agreement as JSON."""
        from fireval.judging.store import Store

        require_existing_store(db)
        st = Store(db)
        try:
            typer.echo(json.dumps(st.status(), indent=2))
        finally:
            st.close()

    @sub.command()
    def release(
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
        older_than_minutes: Annotated[
            float, typer.Option(help="Release open assignments older than this.")
        ] = 60,
    ) -> None:
        """Put items that annotators claimed but never answered back into the queue."""
        from datetime import timedelta

        from fireval.judging.store import Store

        require_existing_store(db)
        st = Store(db)
        try:
            n = st.release_stale(timedelta(minutes=older_than_minutes))
        finally:
            st.close()
        typer.echo(f"released {n} stale assignments")

    @sub.command()
    def export(
        db: Annotated[str, typer.Option("--db", help=DB_HELP)],
        output: Annotated[Path, typer.Option("--output", "-o", help="FIRE JSON file to write.")],
        dataset: Annotated[str | None, typer.Option(help="Dataset field, e.g. MSRVTT or MSVD.")] = None,
    ) -> None:
        """Write the majority labels and disagreements as FIRE JSON (authors' schema)."""
        from fireval.cli.common import check_output_path
        from fireval.judging.export import export_fire_json

        require_existing_store(db)
        check_output_path(output)
        counts = export_fire_json(db, output, dataset)
        typer.echo(
            f"wrote {counts['annotations']} annotations and {counts['disagreements']} disagreements to {output}"
        )
