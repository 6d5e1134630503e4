"""Annotator accounts, login tokens and server-side sessions of the annotation store.

- A login token is 256 random bits (``secrets.token_urlsafe(32)``), shown once; the store keeps
  only its SHA-256 hash (no salt or KDF is needed for tokens of that entropy).
- A session is another 256-bit random id, held in the browser's (signed) cookie; the store
  keeps its hash, annotator and expiry in ``sessions``. Every request looks its session up
  (:meth:`Accounts.session_user`): the row must exist, be unexpired, and its annotator be
  enabled. So logout (:meth:`Accounts.end_session`), token rotation, disabling an annotator
  and the admin's "revoke sessions" (:meth:`Accounts.revoke_sessions`) end access at once,
  including for a copy of the cookie taken earlier.
- Disabled annotators cannot log in and their sessions are gone; enabling them again does
  not revive old sessions.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from fireval.core import InputError
from fireval.judging import schema as S
from fireval.judging.engine import Database, Driver, driver_sql, new_id, now
from fireval.judging.errors import UnknownAnnotatorError, valid_id

MAX_TOKEN_CHARS = 512


def hash_token(token: str) -> str:
    """SHA-256 hex digest of a login token (tokens are 256-bit random, so no salt/KDF is needed)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Annotator:
    id: int
    name: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


@dataclass(frozen=True)
class AnnotatorInfo:
    """One row of ``fireval judgments annotators`` and the admin page."""

    id: int
    name: str
    role: str
    enabled: bool
    labels: int
    sessions: int


def check_annotator_name(name: str) -> str:
    """An annotator name, stripped: 1 to 200 printable characters, no tab, newline or other
    control or format character (a name is printed in tab-separated listings and on terminals: a
    newline would forge a row, an ESC sequence would reach the terminal)."""
    import unicodedata

    name = name.strip()
    if not name:
        raise InputError("annotator name must not be empty")
    if len(name) > 200:
        raise InputError(f"annotator name has {len(name)} characters; at most 200 are allowed")
    bad = next(
        (c for c in name if not c.isprintable() or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None
    )
    if bad is not None:
        raise InputError(
            f"annotator name {ascii(name)} contains the control character {ascii(bad)}; use printable "
            "characters only (no tabs or newlines)"
        )
    return name


class Accounts:
    """Annotators, tokens and sessions over one :class:`~fireval.judging.engine.Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._annotator = sa.text("SELECT id, name, role FROM annotators WHERE id = :id AND active = :t")
        # checked on every request: plain SQL on the driver's cursor (engine.Driver)
        self._session_user = driver_sql(
            "SELECT a.id, a.name, a.role FROM sessions s JOIN annotators a ON a.id = s.annotator_id "
            "WHERE s.token_hash = ? AND s.expires_at > ? AND a.active = ?",
            db.is_postgres,
        )

    # ------------------------------------------------------------------ accounts
    def add(self, name: str, role: str = "annotator") -> tuple[Annotator, str]:
        """Create an annotator; return it and its new random login token (only the hash is stored)."""
        if role not in S.ROLES:
            raise InputError(f"unknown role {role!r}; expected one of {', '.join(S.ROLES)}")
        name = check_annotator_name(name)
        token = secrets.token_urlsafe(32)

        def op(conn: Connection) -> int:
            if conn.execute(sa.select(S.annotators.c.id).where(S.annotators.c.name == name)).first():
                raise InputError(f"annotator {name!r} already exists")
            res = conn.execute(
                S.annotators.insert().values(
                    name=name, token_hash=hash_token(token), role=role, active=True, created_at=now()
                )
            )
            return new_id(res)

        return Annotator(self.db.write(op), name, role), token

    def authenticate(self, token: str) -> Annotator | None:
        """The enabled annotator whose token hashes to the stored hash, else ``None``."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        with self.db.reading() as conn:
            row = conn.execute(
                sa.select(S.annotators).where(
                    S.annotators.c.token_hash == hash_token(token), S.annotators.c.active.is_(True)
                )
            ).first()
        return Annotator(row.id, row.name, row.role) if row else None

    def get(self, annotator_id: int) -> Annotator | None:
        """The enabled annotator with this id, else ``None``."""
        if not valid_id(annotator_id):
            return None
        with self.db.reading() as conn:
            row = conn.execute(self._annotator, {"id": annotator_id, "t": True}).first()
        return Annotator(row.id, row.name, row.role) if row else None

    def all(self) -> list[Annotator]:
        with self.db.reading() as conn:
            rows = conn.execute(sa.select(S.annotators).order_by(S.annotators.c.id)).all()
        return [Annotator(r.id, r.name, r.role) for r in rows]

    def info(self) -> list[AnnotatorInfo]:
        """Every annotator with role, enabled flag, answers given and live sessions."""
        a, lab, s = S.annotators.c, S.labels.c, S.sessions.c
        n_labels = (
            sa.select(sa.func.count())
            .where(lab.annotator_id == a.id)
            .correlate(S.annotators)
            .scalar_subquery()
        )
        n_sessions = (
            sa.select(sa.func.count())
            .where(s.annotator_id == a.id, s.expires_at > now())
            .correlate(S.annotators)
            .scalar_subquery()
        )
        with self.db.reading() as conn:
            rows = conn.execute(
                sa.select(a.id, a.name, a.role, a.active, n_labels, n_sessions).order_by(a.id)
            ).all()
        return [AnnotatorInfo(r[0], r[1], r[2], bool(r[3]), int(r[4]), int(r[5])) for r in rows]

    def _id_of(self, conn: Connection, who: int | str) -> int:
        a = S.annotators.c
        if isinstance(who, str):
            row = conn.execute(sa.select(a.id).where(a.name == who)).first()
        else:
            row = conn.execute(sa.select(a.id).where(a.id == who)).first() if valid_id(who) else None
        if row is None:
            raise UnknownAnnotatorError(f"unknown annotator {who!r}")
        return int(row.id)

    def rotate_token(self, who: int | str) -> tuple[Annotator, str]:
        """Give the annotator (id or name) a new login token and end all their sessions."""
        token = secrets.token_urlsafe(32)

        def op(conn: Connection) -> Annotator:
            aid = self._id_of(conn, who)
            conn.execute(
                S.annotators.update().where(S.annotators.c.id == aid).values(token_hash=hash_token(token))
            )
            conn.execute(S.sessions.delete().where(S.sessions.c.annotator_id == aid))
            row = conn.execute(sa.select(S.annotators).where(S.annotators.c.id == aid)).one()
            return Annotator(row.id, row.name, row.role)

        return self.db.write(op), token

    def set_enabled(self, who: int | str, enabled: bool) -> Annotator:
        """Enable or disable an annotator (id or name); disabling ends all their sessions."""

        def op(conn: Connection) -> Annotator:
            aid = self._id_of(conn, who)
            conn.execute(S.annotators.update().where(S.annotators.c.id == aid).values(active=enabled))
            conn.execute(S.sessions.delete().where(S.sessions.c.annotator_id == aid))
            row = conn.execute(sa.select(S.annotators).where(S.annotators.c.id == aid)).one()
            return Annotator(row.id, row.name, row.role)

        return self.db.write(op)

    # ------------------------------------------------------------------ sessions
    def open_session(self, annotator_id: int, max_age: timedelta) -> str:
        """Start a session for the annotator; return its id (for the cookie; only its hash is stored)."""
        sid = secrets.token_urlsafe(32)
        t = now()

        def op(conn: Connection) -> None:
            s = S.sessions.c
            # expired sessions of this annotator are no longer needed: keep the table small
            conn.execute(S.sessions.delete().where(s.annotator_id == annotator_id, s.expires_at <= t))
            conn.execute(
                S.sessions.insert().values(
                    token_hash=hash_token(sid),
                    annotator_id=annotator_id,
                    created_at=t,
                    expires_at=t + max_age,
                )
            )

        self.db.write(op)
        return sid

    def session_user(self, sid: str) -> Annotator | None:
        """The annotator of a live session (unexpired, not revoked, annotator enabled), else ``None``."""
        if not sid or len(sid) > MAX_TOKEN_CHARS:
            return None
        with self.db.reading() as conn:
            row = self._session_row(conn, sid)
        return Annotator(int(row[0]), row[1], row[2]) if row else None

    def session_annotator_id(self, conn: Connection, sid: str) -> int | None:
        """:meth:`session_user` inside the caller's transaction (the id only): a write can check
        its session in the transaction it already runs, so a revoked session never writes."""
        if not sid or len(sid) > MAX_TOKEN_CHARS:
            return None
        row = self._session_row(conn, sid)
        return int(row[0]) if row else None

    def _session_row(self, conn: Connection, sid: str) -> Any:
        params = (hash_token(sid), self.db.param_time(now()), True)
        return Driver(conn)(self._session_user, params).fetchone()

    def end_session(self, sid: str) -> None:
        """Logout: delete this session (a no-op when it is already gone)."""
        if not sid or len(sid) > MAX_TOKEN_CHARS:
            return
        self.db.write(
            lambda conn: conn.execute(S.sessions.delete().where(S.sessions.c.token_hash == hash_token(sid)))
        )

    def revoke_sessions(self, who: int | str) -> int:
        """End every session of an annotator (id or name); return how many there were."""

        def op(conn: Connection) -> int:
            aid = self._id_of(conn, who)
            return int(conn.execute(S.sessions.delete().where(S.sessions.c.annotator_id == aid)).rowcount)

        return self.db.write(op)
