"""On-disk cache of caption analyses (tokens, UPOS tags, lemmas), shared between runs.

Tagging and lemmatising dominate a proxy build, and the same captions are parsed again by
every ``fireval proxies build``. The analysis of a caption is a pure function of its
normalised text (the ``[a-z0-9]+`` tokens joined by one space, :func:`fireval.proxies.text.tokenize`)
and of the pipeline (tagger weights, WordNet, code version), so it is stored under the key
``(pipeline version, normalised text)``.

Storage: one SQLite database ``parse-cache.sqlite3`` in the cache directory
(:func:`default_cache_dir`: ``$FIREVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/fireval``, else
``~/.cache/fireval``), in WAL mode with a busy timeout. SQLite's transactions make it safe
under concurrency: several processes may read and write at once, a reader sees only
committed rows (never a partial write), and two writers of one key write the same value.
A value is the tags and the lemmas, each joined by ``\x1f``, separated by ``\x1e`` (the
tokens are the key); a row that does not decode to one tag and one lemma per token is ignored
and overwritten by the next parse.

A second table keeps, per ``(pipeline version, digest of an ordered list of texts)``, the
analyses of that whole list in one compact blob (:func:`encode_columns`: one vocabulary and
int32 id arrays; :class:`fireval.proxies.text.Analyses`), so that a warm run over the same
collection reads one row and decodes it with ``numpy.frombuffer`` instead of looking up and
splitting one row per caption. The digest covers every text and its length, so it is still a
key of the texts and the pipeline version; a blob that does not decode to what
:meth:`ParseCache.put_columns` wrote is ignored (and replaced by the next run).

Column blobs are bounded: they are evicted least recently used first, on write, so that their
total stays within a cap (:data:`DEFAULT_MAX_BYTES`, 256 MiB; ``$FIREVAL_CACHE_MAX_MB`` or the
``max_bytes`` argument override it; 0 stores no blob). Each blob row carries ``used``, a
logical clock (one more than the largest in the table; indexed, so neither the clock nor the
eviction order reads the blobs) set when it is written and when it is read; a write that takes
the total over the cap deletes the blobs with the smallest ``used`` (never the one just
written) until the total fits, in the same ``BEGIN IMMEDIATE`` transaction
(:meth:`ParseCache._write`), so concurrent writers serialise and never see a half-evicted
table.

Hits are read-only: :meth:`ParseCache.get_columns` only notes the blob, and the reads of one
:class:`ParseCache` are recorded together when it is closed (:meth:`ParseCache.close`, or the
end of a ``with`` block) or, first thing, in its next write transaction, so a write never evicts
a blob this process has read but not yet recorded. Recording moves the blobs read to the top of
the order, in the order of their last reads. When they already are the most recently used
blobs in that order (a warm build run again: the same query and caption lists), moving them
would not change the order, so nothing is written: a warm ``fireval proxies build`` runs no
write transaction. Eviction only compares ``used`` values, so it evicts exactly what it would
with a write on every hit; a read counts from the moment it is recorded.

A blob larger than the cap is not stored. The per-caption rows (the first table) are small and
are kept until :meth:`ParseCache.clear`. SQLite reuses the pages that eviction
frees, so the file stays near its peak size; :meth:`ParseCache.clear` (``fireval proxies cache
--clear``) also gives the space back. :meth:`ParseCache.stats` reports the sizes.

Failure is never fatal: a corrupted or unreadable database is moved aside (``*.corrupt``)
and rebuilt; if even that fails, or a row does not decode, the cache is bypassed and the
captions are parsed again. A changed pipeline version simply misses (old rows stay until
:meth:`ParseCache.clear`).
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

#: bump when the analysis code changes in a way that changes its output
PIPELINE_CODE_VERSION = "analysis-2"
DB_NAME = "parse-cache.sqlite3"
#: default cap on the column blobs' total size (bytes); ``$FIREVAL_CACHE_MAX_MB`` overrides it
DEFAULT_MAX_BYTES = 256 * 2**20
MAX_MB_ENV = "FIREVAL_CACHE_MAX_MB"
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
_CHUNK = 500
_US, _RS = (
    "\x1f",
    "\x1e",
)  # item and list separators of a stored value  # keys per SELECT (SQLite's default limit is 999 host parameters)


def default_cache_dir() -> Path:
    """``$FIREVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/fireval``, else ``~/.cache/fireval``."""
    env = os.environ.get("FIREVAL_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fireval"


def max_bytes_from_env() -> int:
    """The blob cap: ``$FIREVAL_CACHE_MAX_MB`` megabytes (MiB, a number >= 0), else
    :data:`DEFAULT_MAX_BYTES`. Any other value is an :class:`~fireval.core.errors.InputError`."""
    raw = os.environ.get(MAX_MB_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if not math.isfinite(mb) or mb < 0:
        from fireval.core.errors import InputError

        raise InputError(f"{MAX_MB_ENV}={raw!r}: expected a size in megabytes >= 0, e.g. 256")
    return int(mb * 2**20)


Entry = tuple[tuple[str, ...], tuple[str, ...]]  # (tags, lemmas)


class ParseCache:
    """Caption analyses keyed by ``(version, normalised text)`` in a SQLite file (see module doc).

    ``version`` identifies the pipeline (:func:`fireval.proxies.text.pipeline_version`).
    ``max_bytes`` caps the column blobs' total (``None``: :func:`max_bytes_from_env`).
    All methods swallow storage errors: a broken cache behaves as an empty one.
    """

    def __init__(
        self,
        directory: str | Path | None = None,
        version: str = PIPELINE_CODE_VERSION,
        *,
        max_bytes: int | None = None,
    ) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.path = self.directory / DB_NAME
        self.version = version
        if max_bytes is not None and max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        self.max_bytes = max_bytes_from_env() if max_bytes is None else int(max_bytes)
        self._conn: sqlite3.Connection | None = None
        self._broken = False
        #: blobs read and not yet recorded as used, in the order of their last reads (module doc)
        self._reads: dict[tuple[str, str], None] = {}
        self.hits = 0
        self.misses = 0

    # -- connection -------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        self.directory.mkdir(parents=True, exist_ok=True)
        # Set-up (WAL switch, table creation) runs under an exclusive file lock: two processes
        # opening a new database at once would otherwise race on the journal-mode change and the
        # schema write, where SQLite returns SQLITE_BUSY at once instead of waiting (its busy
        # handler is skipped where waiting could deadlock).
        with _setup_lock(self.directory):
            return self._open_locked()

    def _open_locked(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS parse ("
                " version TEXT NOT NULL, text TEXT NOT NULL, value TEXT NOT NULL,"
                " PRIMARY KEY (version, text)) WITHOUT ROWID"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS columns ("
                " version TEXT NOT NULL, digest TEXT NOT NULL, value BLOB NOT NULL,"
                " used INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version, digest))"
            )
            if "used" not in {r[1] for r in conn.execute("PRAGMA table_info(columns)")}:
                # a cache written before eviction existed: its blobs count as least recently used
                conn.execute("ALTER TABLE columns ADD COLUMN used INTEGER NOT NULL DEFAULT 0")
            # the clock and the eviction order come from this index: ``used`` is stored after
            # the blob, so reading it from the table would walk each blob's overflow pages
            # (no write when the index exists)
            conn.execute("CREATE INDEX IF NOT EXISTS columns_by_use ON columns (used)")
            conn.execute("SELECT count(*) FROM parse WHERE version = ? AND text = ''", (self.version,))
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is not None or self._broken:
            return self._conn
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", None) not in _CORRUPT_CODES:
                self._broken = True  # busy, read-only, ...: bypass the cache this time
                return None
            # not a database / malformed: move it aside and start afresh
            try:
                for suffix in ("", "-wal", "-shm"):
                    p = Path(str(self.path) + suffix)
                    if p.exists():
                        os.replace(p, Path(str(p) + ".corrupt"))
                self._conn = self._open()
            except (OSError, sqlite3.Error):
                self._broken = True
        except (OSError, sqlite3.Error):
            self._broken = True
        return self._conn

    def close(self) -> None:
        """Record the blobs read as used (:meth:`record_reads`), then close the connection."""
        if self._conn is not None:
            self.record_reads()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __del__(self) -> None:  # a cache left open still records its reads
        with contextlib.suppress(Exception):
            self.close()

    def __enter__(self) -> ParseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- access -----------------------------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> dict[str, Entry]:
        """The cached entries among ``keys`` (normalised texts); missing or undecodable ones left out."""
        conn = self._connection()
        out: dict[str, Entry] = {}
        if conn is None or not keys:
            self.misses += len(keys)
            return out
        try:
            for s in range(0, len(keys), _CHUNK):
                part = keys[s : s + _CHUNK]
                q = f"SELECT text, value FROM parse WHERE version = ? AND text IN ({','.join('?' * len(part))})"
                for text, value in conn.execute(q, (self.version, *part)):
                    got = _decode(text, value)
                    if got is not None:
                        out[text] = got
        except sqlite3.Error:
            self._drop()
            out = {}
        self.hits += len(out)
        self.misses += len(keys) - len(out)
        return out

    def put_many(self, items: Iterable[tuple[str, Entry]]) -> None:
        """Store entries (one transaction; a row under the same key is replaced, e.g. a bad one)."""
        rows = [(self.version, text, _encode(tags, lemmas)) for text, (tags, lemmas) in items]
        if rows:
            self._write("INSERT OR REPLACE INTO parse (version, text, value) VALUES (?, ?, ?)", rows)

    def get_columns(self, digest: str) -> bytes | None:
        """The blob stored by :meth:`put_columns` under ``digest`` (this version), or ``None``.

        Read-only: a hit is noted, and recorded as a use (eviction order) by :meth:`close`
        or the next write (module doc)."""
        conn = self._connection()
        if conn is None:
            return None
        try:
            row = conn.execute(
                "SELECT value FROM columns WHERE version = ? AND digest = ?", (self.version, digest)
            ).fetchone()
        except sqlite3.Error:
            self._drop()
            return None
        if row is None or not isinstance(row[0], bytes | memoryview):
            return None
        key = (self.version, digest)
        self._reads.pop(key, None)  # the last read counts
        self._reads[key] = None
        return bytes(row[0])

    def record_reads(self) -> None:
        """Record the blobs read since the last call as the most recently used, in the order of
        their last reads: one read-only query when they already are (nothing would change),
        else one write transaction."""
        reads = list(self._reads)
        if not reads:
            return
        conn = self._connection()
        if conn is None:
            self._reads.clear()
            return
        try:
            top = conn.execute(
                "SELECT version, digest FROM columns ORDER BY used DESC, rowid DESC LIMIT ?", (len(reads),)
            ).fetchall()
        except sqlite3.Error:
            self._drop()
            return
        if top[::-1] != reads:
            self._write(*self._record_step())
        self._reads.clear()

    def _record_step(self) -> tuple[str, list[tuple[Any, ...]]]:
        """The statement and rows that give the blobs read their uses, in order."""
        return f"UPDATE columns SET used = {_NEXT_USE} WHERE version = ? AND digest = ?", list(self._reads)

    def put_columns(self, digest: str, value: bytes) -> None:
        """Store the analyses blob of one list of texts (replacing any row under the key), then
        evict least recently used blobs until the total fits :attr:`max_bytes` (module doc).
        A blob larger than the cap is not stored."""
        if len(value) > self.max_bytes:
            return
        reads = self._record_step()  # first the blobs read before this write (module doc)
        self._reads.clear()
        self._write(
            f"INSERT OR REPLACE INTO columns (version, digest, value, used) VALUES (?, ?, ?, {_NEXT_USE})",
            [(self.version, digest, value)],
            then=lambda conn: self._evict(conn, keep=(self.version, digest)),
            first=reads,
        )

    def _evict(self, conn: sqlite3.Connection, keep: tuple[str, str]) -> None:
        """Inside the write transaction: delete the least recently used blobs (never ``keep``)
        until the blobs' total size is within :attr:`max_bytes`."""
        (total,) = conn.execute("SELECT coalesce(sum(length(value)), 0) FROM columns").fetchone()
        if total <= self.max_bytes:
            return
        drop = []
        for version, digest, size in conn.execute(
            "SELECT version, digest, length(value) FROM columns ORDER BY used, rowid"
        ).fetchall():
            if total <= self.max_bytes:
                break
            if (version, digest) != keep:
                drop.append((version, digest))
                total -= size
        conn.executemany("DELETE FROM columns WHERE version = ? AND digest = ?", drop)

    def stats(self) -> dict[str, Any]:
        """Sizes, without creating the cache: ``path``, ``exists``, ``file_bytes`` (database plus
        its WAL), ``analyses`` (per-caption rows), ``blobs``, ``blob_bytes``, ``max_bytes``."""
        files = [Path(str(self.path) + sfx) for sfx in ("", "-wal")]
        out: dict[str, Any] = {
            "path": str(self.path),
            "exists": self.path.is_file(),
            "file_bytes": sum(p.stat().st_size for p in files if p.is_file()),
            "analyses": 0,
            "blobs": 0,
            "blob_bytes": 0,
            "max_bytes": self.max_bytes,
        }
        conn = self._connection() if out["exists"] else None
        if conn is not None:
            try:
                out["analyses"] = conn.execute("SELECT count(*) FROM parse").fetchone()[0]
                out["blobs"], out["blob_bytes"] = conn.execute(
                    "SELECT count(*), coalesce(sum(length(value)), 0) FROM columns"
                ).fetchone()
            except sqlite3.Error:
                self._drop()
        return out

    def _write(
        self,
        sql: str,
        rows: list[tuple[Any, ...]],
        then: Callable[[sqlite3.Connection], object] | None = None,
        first: tuple[str, list[tuple[Any, ...]]] | None = None,
    ) -> None:
        """``first``'s statement for each of its rows, ``sql`` for every row, then
        ``then(conn)``, in one ``BEGIN IMMEDIATE`` transaction (rolled back on any error); a
        storage error drops the cache for this process, as every other access does."""
        conn = self._connection()
        if conn is None:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if first is not None and first[1]:
                    conn.executemany(*first)
                conn.executemany(sql, rows)
                if then is not None:
                    then(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error:
            self._drop()

    def clear(self) -> None:
        """Delete every stored entry (all versions) in one transaction, then give the space back
        to the file system (``VACUUM``; skipped if another process holds the database)."""
        self._write("DELETE FROM parse", [()], then=lambda conn: conn.execute("DELETE FROM columns"))
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _drop(self) -> None:
        """Stop using the cache for this process (it failed mid-use)."""
        self._reads.clear()
        with contextlib.suppress(sqlite3.Error):
            self.close()
        self._conn = None
        self._broken = True


#: the ``used`` value of a blob written or read now: one more than any in the table (a logical
#: clock; strictly increasing, since writes are serialised by ``BEGIN IMMEDIATE``)
_NEXT_USE = "(SELECT coalesce(max(used), 0) + 1 FROM columns)"


@contextlib.contextmanager
def _setup_lock(directory: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``parse-cache.lock`` in ``directory`` (a no-op without fcntl)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(directory / "parse-cache.lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _encode(tags: Sequence[str], lemmas: Sequence[str]) -> str:
    """``tags`` and ``lemmas`` joined by unit separators (neither contains control characters)."""
    return _US.join(tags) + _RS + _US.join(lemmas)


def _decode(text: str, value: str) -> Entry | None:
    """``(tags, lemmas)`` of a stored row, or ``None`` if it is not what :meth:`put_many` wrote."""
    if not isinstance(value, str) or value.count(_RS) != 1:
        return None
    t, lem = value.split(_RS)
    n = text.count(" ") + 1 if text else 0
    tags = tuple(t.split(_US)) if n else ()
    lemmas = tuple(lem.split(_US)) if n else ()
    if len(tags) != n or len(lemmas) != n or (not n and (t or lem)):
        return None
    return tags, lemmas


_COLUMNS_MAGIC = b"FVCOLS1\0"


def encode_columns(vocab: Sequence[str], arrays: Sequence[Any]) -> bytes:
    """One blob: magic, ``int64`` header (number of arrays, vocabulary size and byte length,
    then each array's length), the vocabulary joined by ``\x1f`` (UTF-8, surrogates passed
    through), then the arrays as little-endian ``int32``."""
    import numpy as np

    if any(_US in w for w in vocab):
        raise ValueError("a vocabulary entry contains the separator \\x1f")
    words = _US.join(vocab).encode("utf-8", "surrogatepass")
    arrs = [np.ascontiguousarray(a, dtype="<i4") for a in arrays]
    head = np.array([len(arrs), len(vocab), len(words), *(a.size for a in arrs)], dtype="<i8")
    return b"".join([_COLUMNS_MAGIC, head.tobytes(), words, *(a.tobytes() for a in arrs)])


def decode_columns(blob: bytes, n_arrays: int) -> tuple[list[str], list[Any]] | None:
    """``(vocab, arrays)`` of an :func:`encode_columns` blob with ``n_arrays`` arrays, or
    ``None`` if it is not one (the arrays are read-only views of ``blob``)."""
    import numpy as np

    m = len(_COLUMNS_MAGIC)
    if not isinstance(blob, bytes) or blob[:m] != _COLUMNS_MAGIC or len(blob) < m + 8 * (3 + n_arrays):
        return None
    head = np.frombuffer(blob, dtype="<i8", count=3 + n_arrays, offset=m)
    if int(head[0]) != n_arrays or (head < 0).any():
        return None
    n_vocab, n_words = int(head[1]), int(head[2])
    pos = m + 8 * (3 + n_arrays)
    sizes = [int(x) for x in head[3:]]
    if len(blob) != pos + n_words + 4 * sum(sizes):
        return None
    try:
        text = blob[pos : pos + n_words].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    vocab = text.split(_US) if n_vocab else []
    if len(vocab) != n_vocab:
        return None
    pos += n_words
    arrays = []
    for size in sizes:
        arrays.append(np.frombuffer(blob, dtype="<i4", count=size, offset=pos))
        pos += 4 * size
    return vocab, arrays
