"""`fireval serve` never prints a store URL's password."""

from __future__ import annotations

import inspect

import pytest

from fireval.cli import serve as serve_mod
from fireval.cli.serve import _shown_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql+psycopg2://fireval:s3cr%40t@127.0.0.1:5432/db",
            "postgresql+psycopg2://fireval:***@127.0.0.1:5432/db",
        ),
        ("postgresql://u:p@h/db?sslmode=require", "postgresql://u:***@h/db?sslmode=require"),
        ("postgresql://h/db", "postgresql://h/db"),
        ("sqlite:///annotations.db", "sqlite:///annotations.db"),
    ],
)
def test_password_is_masked(url: str, shown: str) -> None:
    assert _shown_url(url) == shown
    assert "s3cr" not in _shown_url(url)


def test_the_start_line_uses_the_masked_url() -> None:
    src = inspect.getsource(serve_mod)
    line = next(x for x in src.splitlines() if "fireval serving" in x)
    assert "_shown_url(cfg.db_url)" in line
