"""The database handle: engine, read and write transactions, and migrations to head.

SQLite (the default) runs in WAL mode and every write transaction starts with
``BEGIN IMMEDIATE``, so two writers queue on the lock instead of one failing half-way through a
read-then-write (the annotation version check reads, then updates). PostgreSQL runs at READ
COMMITTED; the version check is a conditional ``UPDATE`` there too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)
MIGRATIONS = Path(__file__).parent / "migrations"
_WRITE = "aula_write"


class DatabaseUnavailable(RuntimeError):
    """The database cannot be reached or is locked right now; the caller may retry."""


def prepare_url(url: str) -> str:
    """``url`` with PostgreSQL mapped to psycopg 3 and a SQLite file's folder created."""
    u = make_url(url)
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    if u.get_backend_name() == "sqlite" and u.database and u.database != ":memory:":
        Path(u.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return u.render_as_string(hide_password=False)


def _sqlite_engine(url: str, timeout: float) -> Engine:
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": timeout})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # transactions are begun below, not by sqlite3
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        write = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def make_engine(url: str, timeout: float = 10.0) -> Engine:
    """An engine for ``url``; ``timeout`` bounds how long a query waits for a lock or a
    connection before the error that routes turn into 503."""
    url = prepare_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        return _sqlite_engine(url, timeout)
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_timeout=timeout,
        connect_args={"connect_timeout": max(1, int(timeout))},
    )


class Database:
    """One database: ``read()`` and ``write()`` transactions, ``upgrade()`` to the newest schema.

    Nothing connects until first use, so a database that is down at startup only makes the
    review features answer 503 (``ensure_ready`` retries the migration on each use).
    """

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self.url = prepare_url(url)
        self.engine = make_engine(self.url, timeout)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._ready = False
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    def upgrade(self) -> None:
        """Run the Alembic migrations up to head (idempotent)."""
        from alembic import command
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.connect() as conn:
            conn = conn.execution_options(**{_WRITE: True})
            with conn.begin():
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        self._ready = True

    def ensure_ready(self) -> None:
        """Migrate once; raise ``DatabaseUnavailable`` while that cannot be done."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            try:
                self.upgrade()
            except DBAPIError as exc:
                raise DatabaseUnavailable(f"database unavailable: {exc.orig}") from exc

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading (rolled back at the end)."""
        self.ensure_ready()
        with self._sessions() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction: committed when the block ends, rolled back if it raises."""
        self.ensure_ready()
        with self._sessions() as session, session.begin():
            session.connection(execution_options={_WRITE: True})  # BEGIN IMMEDIATE on SQLite
            yield session

    def close(self) -> None:
        self.engine.dispose()


def open_database(url: str, *, timeout: float = 10.0, migrate: bool = True) -> Database:
    """The database at ``url``, migrated to head unless ``migrate`` is false. A migration that
    fails because the server is down is logged and retried on first use."""
    db = Database(url, timeout=timeout)
    if migrate:
        try:
            db.ensure_ready()
        except DatabaseUnavailable as exc:
            log.error("%s; review features answer 503 until it is back", exc)
    return db
