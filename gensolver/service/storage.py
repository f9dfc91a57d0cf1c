"""Durable state of the service: one SQLite database in WAL mode.

Every change the service acknowledges (an accepted task, a cancellation, a cleared round with
its payments and credit changes, a feedback report, a token) is written in one transaction that
is committed before the HTTP answer is sent. A round is one row of ``rounds`` keyed by its
number, written in the same transaction as everything it changes, so a round is either wholly
applied or not at all, and never twice.

Tables
------
``meta(key, value)``
    ``schema_version``; ``tokens_version`` (bumped by every token change).
``tokens(id, tenant, admin, salt, digest, created, expires, revoked)``
    Access tokens, stored as ``sha256(salt || secret)`` (:mod:`.auth`); ``admin`` is the
    operator role; ``expires`` and ``revoked`` are Unix times (``NULL``: never).
``idempotency(tenant, key, fingerprint, status, headers, body, at)``
    First answers of ``POST`` requests with an ``Idempotency-Key`` (:mod:`.idempotency`).
``audit(seq, at, actor, action, subject, detail)``
    Append-only log of token, round and credit changes (:func:`audit`); nothing updates or
    deletes its rows.
``tasks(id, tenant, name, state, task, source, ...)``
    Every accepted task: its :class:`~gensolver.model.tasks.Task` as JSON, the submitted
    document, and its market state (``waiting``, ``running``, ``done``, ``cancelled``). ``name``
    is the GenTask's ``metadata.name``, unique per tenant; ``id`` is ``TENANT/NAME`` (the task's
    id in the market, rounds and plans), or ``TENANT/NAME~SEQ`` once a cancelled task's name
    was taken again.
``rounds(n, now, at, summary, detail)``
    Cleared rounds: the summary and the full answer of ``GET /v1/rounds/{n}``.
``payments(round, task, tenant, payment, low, high, exact, charge)``
``credits(seq, round, time, tenant, amount, reason, task)``
    Every credit change (initial budget, refill, payment).
``tenants(tenant, balance, weight)``
    Balances and fairness weights after the last round.
``feedback(seq, task, tenant, at, memory_gib, progress)``
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from ..errors import GensolverError

__all__ = ["group_commit", "Store", "StoreError", "SCHEMA_VERSION", "audit", "open_store"]

SCHEMA_VERSION = 3
T = TypeVar("T")

_DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tokens(
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, admin INTEGER NOT NULL,
    salt BLOB NOT NULL, digest BLOB NOT NULL, created REAL NOT NULL, expires REAL, revoked REAL);
CREATE TABLE IF NOT EXISTS idempotency(
    tenant TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL,
    headers TEXT NOT NULL, body BLOB NOT NULL, at REAL NOT NULL, PRIMARY KEY(tenant, key));
CREATE INDEX IF NOT EXISTS idempotency_at ON idempotency(at);
CREATE TABLE IF NOT EXISTS audit(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
    subject TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TABLE IF NOT EXISTS tasks(
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, name TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, task TEXT NOT NULL,
    source TEXT NOT NULL, submitted REAL NOT NULL, seq INTEGER NOT NULL,
    remaining REAL NOT NULL, placement TEXT, memory REAL,
    waited REAL NOT NULL DEFAULT 0, wait_since REAL NOT NULL, progress_round INTEGER,
    started_round INTEGER, finished_round INTEGER);
CREATE INDEX IF NOT EXISTS tokens_tenant ON tokens(tenant);
CREATE INDEX IF NOT EXISTS tasks_state ON tasks(state);
CREATE INDEX IF NOT EXISTS tasks_tenant ON tasks(tenant);
CREATE INDEX IF NOT EXISTS tasks_seq ON tasks(seq);
CREATE INDEX IF NOT EXISTS tasks_name ON tasks(name);
CREATE TABLE IF NOT EXISTS rounds(
    n INTEGER PRIMARY KEY, now REAL NOT NULL, at REAL NOT NULL, summary TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS payments(
    round INTEGER NOT NULL, task TEXT NOT NULL, tenant TEXT NOT NULL, payment REAL,
    low REAL, high REAL, exact INTEGER NOT NULL, charge REAL NOT NULL, PRIMARY KEY(round, task));
CREATE INDEX IF NOT EXISTS payments_tenant ON payments(tenant);
CREATE TABLE IF NOT EXISTS credits(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, round INTEGER NOT NULL, time REAL NOT NULL,
    tenant TEXT NOT NULL, amount REAL NOT NULL, reason TEXT NOT NULL, task TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS credits_tenant ON credits(tenant);
CREATE TABLE IF NOT EXISTS tenants(
    tenant TEXT PRIMARY KEY, balance REAL NOT NULL, weight REAL NOT NULL, usage REAL NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS feedback(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, task TEXT NOT NULL, tenant TEXT NOT NULL, at REAL NOT NULL,
    memory_gib REAL, progress REAL);
"""


class StoreError(GensolverError, RuntimeError):
    """The database cannot be opened or has an unknown layout."""


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None


def _migrate(db: sqlite3.Connection) -> None:
    """Bring an older layout up to date: 1 -> 2 (token expiry and revocation, the audit log),
    2 -> 3 (task names per tenant: ids become ``TENANT/NAME``)."""
    if not _has_table(db, "meta"):
        return
    row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    version = None if row is None else row[0]
    if version == "1":
        db.execute("BEGIN IMMEDIATE")
        db.execute("ALTER TABLE tokens ADD COLUMN expires REAL")
        db.execute("ALTER TABLE tokens ADD COLUMN revoked REAL")
        db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
        db.execute("COMMIT")
        version = "2"
    if version == "2":
        db.execute("BEGIN IMMEDIATE")
        if _has_table(db, "tasks"):
            db.execute("ALTER TABLE tasks ADD COLUMN name TEXT NOT NULL DEFAULT ''")
            db.execute("UPDATE tasks SET name = id, id = tenant || '/' || id, "
                       "task = json_set(task, '$.id', tenant || '/' || id)")
        if _has_table(db, "feedback"):
            db.execute("UPDATE feedback SET task = tenant || '/' || task")
        db.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
        db.execute("COMMIT")


def audit(db: Any, *, actor: str, action: str, subject: str, detail: Any) -> None:
    """Append one entry to the audit log, inside the caller's transaction ``db``."""
    import json
    import time

    db.execute("INSERT INTO audit(at, actor, action, subject, detail) VALUES(?,?,?,?,?)",
               (time.time(), actor, action, subject, json.dumps(detail, sort_keys=True, default=str)))


def group_commit(store: Any, fn: Callable[[Any], T]) -> T:
    """Run ``fn`` in the next group commit of ``store`` and return its result.

    The one group-commit loop of both stores (:class:`Store`, and
    :class:`~gensolver.service.storage_pg.PgStore`): ``store`` has ``_cv`` (a condition),
    ``_pending`` (queued calls), ``_leading`` (a leader is committing) and ``_run_batch(batch)``,
    which runs each call under its own savepoint, commits once, and sets each call's result or
    exception and its event. The first caller to find no leader commits batch after batch until
    none is queued; the others wait for the commit that holds their changes.
    """
    item: list[Any] = [fn, None, None, threading.Event()]
    with store._cv:
        store._pending.append(item)
        lead = not store._leading
        if lead:
            store._leading = True
    if lead:
        while True:
            with store._cv:
                batch, store._pending = store._pending, []
                if not batch:
                    store._leading = False
                    break
            store._run_batch(batch)
    item[3].wait()
    if item[2] is not None:
        raise item[2]
    return item[1]  # type: ignore[no-any-return]


class Store:
    """One SQLite connection shared by the service's threads behind a lock.

    Parameters
    ----------
    path : str or Path
        Database file (created with its folder if missing), or ``":memory:"``.
    synchronous : {"full", "normal"}
        SQLite's ``synchronous`` (see :class:`gensolver.service.Settings`).
    """

    #: whether other processes may change the database (only one process uses a SQLite file)
    shared = False

    def __init__(self, path: str | Path, *, synchronous: str = "full") -> None:
        self.path = str(path)
        self.synchronous = synchronous
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self.connection()  # opened now, so a bad file is reported at once
        # readers: one connection per thread (WAL lets them read while a commit is being synced)
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        # group commit (see grouped())
        self._cv = threading.Condition()
        self._pending: list[list[Any]] = []
        self._leading = False

    @property
    def _db(self) -> sqlite3.Connection:
        """The writer connection (see :meth:`connection`)."""
        return self.connection()

    def connection(self) -> sqlite3.Connection:
        """The writer connection, (re)opened on first use after :meth:`close`."""
        if self._conn is not None:
            return self._conn
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            _migrate(db)
            db.executescript(_DDL)
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                db.close()
                raise StoreError(f"{self.path}: database layout version {row[0]}, this gensolver reads {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot use it as the service database ({exc})") from None
        self._conn = db
        return db

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Exclude other processes' rounds for the block: nothing to do with one process per file."""
        yield

    @property
    def journal_mode(self) -> str:
        with self._lock:
            return str(self._db.execute("PRAGMA journal_mode").fetchone()[0])

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One transaction (``BEGIN IMMEDIATE`` .. ``COMMIT``); rolled back on an exception."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def grouped(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(db)`` in a transaction shared with other threads' calls, committed once.

        Group commit: calls that arrive while a commit is being synced to disk wait and are
        then run together, each under its own savepoint (an exception in one rolls back only
        its changes and is raised to its caller), and committed with one sync. Every call
        returns only after the commit that holds its changes.
        """
        return group_commit(self, fn)

    def _run_batch(self, batch: list[list[Any]]) -> None:
        try:
            with self._lock:
                db = self._db
                db.execute("BEGIN IMMEDIATE")
                try:
                    for it in batch:
                        db.execute("SAVEPOINT grouped")
                        try:
                            it[1] = it[0](db)
                        except Exception as exc:
                            db.execute("ROLLBACK TO grouped")
                            it[2] = exc
                        db.execute("RELEASE grouped")
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
        except BaseException as exc:  # the commit failed: nothing of the batch is stored
            for it in batch:
                it[1], it[2] = None, it[2] or exc
        finally:
            for it in batch:
                it[3].set()

    def _reader(self) -> sqlite3.Connection:
        if self.path == ":memory:":
            return self._db
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.connection()  # make sure the file and tables exist
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[sqlite3.Row]:
        """Rows of one read-only statement (on this thread's reader connection)."""
        if self.path == ":memory:":
            with self._lock:
                return self._db.execute(sql, params).fetchall()
        return self._reader().execute(sql, params).fetchall()

    def one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> sqlite3.Row | None:
        """The first row of one read-only statement, or ``None``."""
        if self.path == ":memory:":
            with self._lock:
                return self._db.execute(sql, params).fetchone()
        return self._reader().execute(sql, params).fetchone()

    def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            with self._readers_lock:
                for conn in self._readers:
                    conn.close()
                self._readers.clear()
            self._local = threading.local()


def open_store(db: str | Path, *, synchronous: str = "full") -> Any:
    """The service's store for ``db``: a ``postgresql://`` URL opens a
    :class:`~gensolver.service.storage_pg.PgStore`, anything else a SQLite :class:`Store` (a
    file path, or ``sqlite:///PATH``)."""
    from .storage_pg import PgStore, is_postgres_url

    if is_postgres_url(db):
        return PgStore(str(db))
    if isinstance(db, str) and db.startswith("sqlite:///"):
        db = db[len("sqlite:///"):] or ":memory:"
    return Store(db, synchronous=synchronous)
