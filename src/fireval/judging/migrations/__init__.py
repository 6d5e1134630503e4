"""Alembic migrations of the annotation store, shipped in the package and run at startup."""
