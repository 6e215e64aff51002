"""The two engines under the session store: connections, transactions and their faults.

The store speaks one SQL (``?`` placeholders, ``INSERT … RETURNING``, ``ON CONFLICT``) to either:

- **SQLite** (the embedded default): a file in WAL mode, one connection a thread, writers of this
  process taking turns on a lock before SQLite's own. A refusal of the disk is a StorageError.
- **PostgreSQL** (``INTERVIEWER_DATABASE_URL=postgresql://…``, psycopg 3 with its pool): the database
  several app processes share. Writers take a transaction-scoped advisory lock, so every write
  transaction is serialised across processes exactly as SQLite serialises them; the store's
  read-then-write steps (the next turn number, the review schedule) need nothing more. Reads take a
  pooled connection in autocommit, and a snapshot is one REPEATABLE READ transaction.

Nothing here knows the schema; :mod:`interviewer.interview.store` holds it and every query.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from interviewer.errors import InterviewerError, StorageError, disk_fault

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool


class StoreError(InterviewerError):
    pass


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What the store's queries use of a connection: SQLite's, or the PostgreSQL adapter below."""

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor: ...


class Database(Protocol):
    postgres: bool

    def open(self) -> None: ...

    def close(self) -> None: ...

    def connection(self) -> Any:
        """A context manager: a connection for reads outside any transaction."""

    def transaction(self) -> Any:
        """A context manager: one write transaction, committed on exit, rolled back on an error."""

    def snapshot(self) -> Any:
        """A context manager: reads that all see the database as of one moment."""


def database_for(path: Path, url: str | None) -> Database:
    """PostgreSQL when a URL is given (``INTERVIEWER_DATABASE_URL``), else the SQLite file at ``path``."""
    if not url:
        return SqliteDatabase(path)
    if not url.startswith(("postgresql://", "postgres://")):
        from interviewer.provider import redacted

        raise StoreError(
            f"INTERVIEWER_DATABASE_URL {redacted(url)!r} is not a PostgreSQL URL: write postgresql://user:password@host:5432/database, "
            "or unset it to use the embedded SQLite file"
        )
    return PostgresDatabase(url)


# -- SQLite --------------------------------------------------------------------------------------
class SqliteDatabase:
    postgres = False

    def __init__(self, path: Path):
        self.path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()  # guards the list of connections, not the database
        self._writing = threading.Lock()  # one writer of this process at a time (see transaction)

    def __str__(self) -> str:
        return str(self.path)

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            db = self.db
            if existed:
                result = db.execute("PRAGMA quick_check").fetchone()[0]
                if result != "ok":
                    raise sqlite3.DatabaseError(result)
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as exc:
            self.close()
            if fault := disk_fault(self.path, str(exc)):
                raise StorageError(fault) from exc
            raise StoreError(
                f"the session database {self.path} is damaged ({exc}); it has been left as it is. "
                "Move it elsewhere (keep it: your answers are in it) and start again to create a new one."
            ) from exc

    def connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        self._local.db = db
        with self._lock:
            self._all.append(db)
        return db

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        return db if db is not None else self.connect()

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                db.close()
            self._all.clear()
        self._local = threading.local()

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        yield self.db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """This process's writers take turns on a lock first: SQLite makes a writer that finds the
        database locked sleep and retry (1, 2, 5, 10 … 100 ms), and fifty answers committed at once
        waited up to two seconds that way; on the lock they wait only for the writes ahead of them.
        Another process's writer still meets SQLite's own busy wait. A write the disk refuses (full,
        read-only) is a :class:`StorageError`, the transaction rolled back."""
        db = self.db
        with self._writing:
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                except BaseException:
                    if db.in_transaction:  # SQLite has already rolled back after a full disk
                        db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                if fault := disk_fault(self.path, str(exc)):
                    raise StorageError(fault) from exc
                raise

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        db = self.db
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")


# -- PostgreSQL ----------------------------------------------------------------------------------
WRITERS_LOCK = 0x1E7E_5707E  # pg_advisory_xact_lock key: one write transaction at a time, all processes
POOL_SIZE = 8  # connections a process keeps at most; reads are single indexed queries of a few ms
CONNECT_TIMEOUT_S = 5
# How long a read or write waits for a free pooled connection. Busy, all eight free up within
# milliseconds; a wait this long means the server is gone, and a direct connection then says why.
BORROW_TIMEOUT_S = 5


@lru_cache(maxsize=512)
def _postgres_sql(sql: str) -> str:
    """The store's SQL in psycopg's terms: ``?`` placeholders become ``%s``, and in DDL SQLite's
    REAL (a float8 there) stays a float8 (PostgreSQL's REAL is a float4: time.time() would lose
    minutes), BLOB becomes BYTEA and its auto-increment key becomes an identity column."""
    sql = sql.replace("%", "%%").replace("?", "%s")
    if sql.lstrip().upper().startswith(("CREATE", "ALTER")):
        sql = sql.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
        sql = re.sub(r"\bREAL\b", "DOUBLE PRECISION", sql)
        sql = re.sub(r"\bBLOB\b", "BYTEA", sql)
    return sql


class _Row:
    """A row read by name or by position, as SQLite's ``Row`` is (``dict(row)`` works too)."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: tuple[Any, ...], index: dict[str, int]):
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._index[key]] if isinstance(key, str) else self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)


def _rows(cursor: psycopg.Cursor[Any]) -> Any:
    index = {column.name: i for i, column in enumerate(cursor.description or [])}
    return lambda values: _Row(tuple(values), index)


class PostgresConnection:
    """A pooled psycopg connection that takes the store's SQL (see :func:`_postgres_sql`)."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self.conn = conn

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor:
        cursor = self.conn.cursor(row_factory=_rows)
        return cursor.execute(_postgres_sql(sql), parameters)  # always formatted, so %% reads as %


class PostgresDatabase:
    postgres = True

    def __init__(self, url: str):
        self.url = url
        self._pool: ConnectionPool[Any] | None = None
        self._writing = threading.Lock()  # this process's writers queue here, not holding a connection

    def __str__(self) -> str:
        from interviewer.provider import redacted

        return redacted(self.url)

    def _unreachable(self, exc: Exception) -> StoreError:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return StoreError(
            f"the session database {self} cannot be reached ({detail}); nothing was changed. "
            "Check that PostgreSQL is running there and INTERVIEWER_DATABASE_URL names it, or unset it to use the embedded SQLite file."
        )

    def open(self) -> None:
        try:
            import psycopg  # noqa: F401  (the driver, checked before the pool that needs it)
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise StoreError(
                f"INTERVIEWER_DATABASE_URL names PostgreSQL, but its driver is not installed ({exc.name}): "
                "pip install 'psycopg[binary,pool]', or unset it to use the embedded SQLite file"
            ) from None
        self._probe()  # one direct connection first: its error says why (refused, unknown database, password)
        # the pool retries in the background and warns at each failed attempt; the store reports the
        # outage itself, in one line, to whoever asked
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
        self._pool = ConnectionPool(
            self.url,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
            check=ConnectionPool.check_connection,  # a server restarted meanwhile: a fresh connection
            timeout=BORROW_TIMEOUT_S,
            open=True,
        )

    def _probe(self) -> None:
        import psycopg

        try:
            psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True).close()
        except (psycopg.Error, ValueError) as exc:
            raise self._unreachable(exc) from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @contextmanager
    def _borrowed(self) -> Iterator[psycopg.Connection[Any]]:
        import psycopg
        from psycopg_pool import PoolTimeout

        if self._pool is None:
            raise StoreError("the session store is closed")
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout:
            self._probe()  # the server's own reason, if it is gone
            raise StoreError(
                f"the session database {self} kept all {POOL_SIZE} connections of this process busy for {BORROW_TIMEOUT_S} s; try again"
            ) from None
        except psycopg.OperationalError as exc:
            raise self._unreachable(exc) from None

    @contextmanager
    def connection(self) -> Iterator[PostgresConnection]:
        with self._borrowed() as conn:
            yield PostgresConnection(conn)

    @contextmanager
    def transaction(self) -> Iterator[PostgresConnection]:
        with self._writing, self._borrowed() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITERS_LOCK,))
            yield PostgresConnection(conn)

    @contextmanager
    def snapshot(self) -> Iterator[PostgresConnection]:
        with self._borrowed() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield PostgresConnection(conn)
