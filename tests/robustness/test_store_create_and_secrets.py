"""Only ``judgments init`` creates a store; no message shows a store password (issue 26, items 2, 3, 6).

- Every verb that takes a store URL (``--db`` or ``-l``) is run against a server that does not
  answer and (with ``FIREVAL_PG_URL``) against a PostgreSQL database without fireval's schema:
  exit 2, one line, and the password appears nowhere in the output.
- Every verb but ``init`` refuses a missing SQLite store, an empty file and a schema-less
  PostgreSQL database, naming ``fireval judgments init``, and creates nothing.
- ``sqlite://`` (in memory) is refused with a reason, no traceback.
"""

from __future__ import annotations

import os
import uuid

import pytest
from tests.cli_helpers import refused, write_1ka_run_and_collection

from fireval.cli import main
from fireval.core.errors import InputError, mask_secrets

SECRET = "S3cr3t-pw_91"


def _run(args: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def _refused(args: list[str], capsys) -> str:
    capsys.readouterr()
    out, err = refused(args, capsys)
    return out + err


@pytest.fixture()
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_1ka_run_and_collection(tmp_path)
    (tmp_path / "pool.jsonl").write_text(
        '{"format": "fireval-pool", "version": 1}\n'
        '{"caption": "a man", "video_id": "video9770", "caption_ids": ["ret0"], "runs": {"a": 1}, "double": false}\n'
    )
    (tmp_path / "gold.jsonl").write_text(
        '{"caption": "a man", "video_id": "video9770", "answer": "relevant"}\n'
    )
    return tmp_path


#: every verb that opens a store; DB is replaced by the store URL
STORE_VERBS = [
    ["judgments", "status", "--db", "DB"],
    ["judgments", "export", "--db", "DB", "-o", "out.json"],
    ["judgments", "release", "--db", "DB"],
    ["judgments", "annotators", "--db", "DB"],
    ["judgments", "load", "pool.jsonl", "--db", "DB"],
    ["judgments", "load", "--gold", "gold.jsonl", "--db", "DB"],
    ["judgments", "add-annotator", "bob", "--db", "DB"],
    ["judgments", "rotate-token", "bob", "--db", "DB"],
    ["judgments", "disable", "bob", "--db", "DB"],
    ["judgments", "enable", "bob", "--db", "DB"],
    ["judgments", "stats", "--db", "DB"],
    ["evaluate", "good.npy", "-c", "coll.csv.gz", "-l", "DB", "--no-checks"],
    ["compare", "good.npy", "good.npy", "-c", "coll.csv.gz", "-l", "DB", "--no-checks"],
    ["pool", "good.npy", "-c", "coll.csv.gz", "-l", "DB", "-o", "p.jsonl", "--no-checks"],
    ["report", "good.npy", "-c", "coll.csv.gz", "-l", "DB", "-o", "r.html", "--no-checks"],
    ["budget", "good.npy", "-c", "coll.csv.gz", "-l", "DB"],
    ["serve", "--db", "DB"],
]
IDS = [" ".join(a[:2]) + (" --gold" if "--gold" in a else "") for a in STORE_VERBS]


def _with(args: list[str], url: str) -> list[str]:
    return [url if a == "DB" else a for a in args]


def test_mask_secrets():
    assert mask_secrets("postgresql+psycopg2://u:pw@h:5/db") == "postgresql+psycopg2://u:***@h:5/db"
    assert mask_secrets("at postgresql://u:p@ss@h/db x") == "at postgresql://u:***@h/db x"
    assert mask_secrets("host=h password=pw dbname=d") == "host=h password=*** dbname=d"
    assert mask_secrets("postgresql://h/db?password=pw&x=1") == "postgresql://h/db?password=***&x=1"
    assert mask_secrets("sqlite:////a/b.db and a@b") == "sqlite:////a/b.db and a@b"
    assert SECRET not in str(
        InputError(f"bad postgresql://u:{SECRET}@h/db", source=f"postgresql://u:{SECRET}@h")
    )


@pytest.mark.parametrize("args", STORE_VERBS, ids=IDS)
def test_no_password_when_the_server_does_not_answer(work, capsys, args):
    url = f"postgresql+psycopg2://user:{SECRET}@127.0.0.1:1/db"  # port 1: connection refused at once
    text = _refused(_with(args, url), capsys)
    assert SECRET not in text, text
    assert "user:***@" in text, text


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg2://user:{SECRET}@127.0.0.1:notaport/db",  # SQLAlchemy's own error
        f"postgresql://user:{SECRET}@127.0.0.1:1/db?sslmode=bogus",  # the driver's
        f"postgresql+psycopg2://127.0.0.1:1/db?password={SECRET}",
        f"mysql://user:{SECRET}@127.0.0.1/db",  # a backend the store does not support
    ],
)
@pytest.mark.parametrize("verb", [["judgments", "init", "--db", "DB"], ["judgments", "status", "--db", "DB"]])
def test_no_password_in_url_errors(work, capsys, url, verb):
    text = _refused(_with(verb, url), capsys)
    assert SECRET not in text, text


@pytest.mark.parametrize("args", STORE_VERBS, ids=IDS)
@pytest.mark.parametrize("db", ["missing.db", "sqlite:///missing.db", "empty.db"])
def test_only_init_creates_an_sqlite_store(work, capsys, args, db):
    (work / "empty.db").write_bytes(b"")
    text = _refused(_with(args, db), capsys)
    if "--db" in args or db.startswith("sqlite:"):  # (-l PATH is a label file: "not found", "empty")
        assert "fireval judgments init" in text, text
    assert not (work / "missing.db").exists()
    assert (work / "empty.db").stat().st_size == 0
    assert not [p.name for p in work.iterdir() if "-wal" in p.name or "-journal" in p.name]


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
@pytest.mark.parametrize("verb", ["init", "status"])
def test_in_memory_store_is_refused(work, capsys, url, verb):
    text = _refused(["judgments", verb, "--db", url], capsys)
    assert "in-memory" in text


@pytest.fixture()
def pg_empty_schema():
    """A schema of its own (no fireval tables) in the FIREVAL_PG_URL database, dropped after."""
    url = os.environ.get("FIREVAL_PG_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("FIREVAL_PG_URL is not set in CI")
        pytest.skip("FIREVAL_PG_URL not set")
    import sqlalchemy as sa

    schema = f"r26_{uuid.uuid4().hex[:10]}"
    eng = sa.create_engine(url)
    with eng.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in url else "?"
    try:
        yield f"{url}{sep}options=-csearch_path%3D{schema}", eng, schema
    finally:
        with eng.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        eng.dispose()


@pytest.mark.postgres
def test_postgres_store_without_schema_is_refused_and_not_created(work, capsys, pg_empty_schema):
    import sqlalchemy as sa

    url, eng, schema = pg_empty_schema
    password = sa.engine.make_url(url).password
    for args in STORE_VERBS:
        text = _refused(_with(args, url), capsys)
        assert "fireval judgments init" in text, (args, text)
        if password:
            assert f":{password}@" not in text, (args, text)
        with eng.connect() as conn:
            assert sa.inspect(conn).get_table_names(schema=schema) == [], args
    code, out, err = _run(["judgments", "init", "--db", url], capsys)
    assert code == 0 and (not password or f":{password}@" not in out + err)
    with eng.connect() as conn:
        assert "alembic_version" in sa.inspect(conn).get_table_names(schema=schema)
