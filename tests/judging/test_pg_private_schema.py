"""The PostgreSQL ``store_url`` fixture gives each test a private schema (tests/judging/conftest.py).

Test processes that share one server (CI runs serially, but several checkouts may run at once)
must not drop or read each other's stores: each store lives in a schema of its own, named by
the URL's ``search_path``, and the database's ``public`` schema is left alone.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from fireval.judging.engine import make_engine
from fireval.judging.store import Store


def test_each_postgres_store_lives_in_its_own_schema(store_url: str) -> None:
    if not store_url.startswith("postgresql"):
        pytest.skip("a PostgreSQL fixture property")
    st = Store(store_url)
    try:
        st.add_annotator("a")
    finally:
        st.close()
    eng = make_engine(store_url)
    try:
        with eng.connect() as conn:
            schema = conn.exec_driver_sql("SELECT current_schema()").scalar_one()
            assert schema != "public" and schema.startswith("fireval_test_")
            tables = set(sa.inspect(conn).get_table_names(schema=schema))
            assert {"annotators", "items", "labels", "alembic_version"} <= tables
            named = conn.exec_driver_sql(f"SELECT count(*) FROM {schema}.annotators").scalar_one()
            assert named == 1
    finally:
        eng.dispose()
