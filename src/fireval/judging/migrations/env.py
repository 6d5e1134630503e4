"""Alembic environment: runs on the connection handed over by :func:`fireval.judging.store.migrate`."""

from __future__ import annotations

from alembic import context

from fireval.judging.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only when run from the alembic command line
    from sqlalchemy import create_engine

    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as conn:
        context.configure(connection=conn, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()
