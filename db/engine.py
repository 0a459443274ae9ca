"""The SQLAlchemy engine from DATABASE_URL: SQLite pragmas (WAL, busy timeout, foreign keys) and schema creation."""

from pathlib import Path
from typing import Any

from sqlalchemy import CursorResult, Engine, Result, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 10_000


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(database_url: str) -> Engine:
    """Create the engine; for SQLite, create the file's folder and set the pragmas on every connection."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


def init_db(engine: Engine) -> None:
    """Create or migrate the schema to the newest revision (Alembic), keeping every row."""
    from db.migrate import upgrade

    upgrade(engine)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit."""
    return sessionmaker(engine, expire_on_commit=False)


def safe_url(database_url: str) -> str:
    """The URL with its password hidden, for display."""
    return make_url(database_url).render_as_string(hide_password=True)


def rowcount(result: Result[Any]) -> int:
    """Rows an INSERT, UPDATE or DELETE touched (0 for a result that is not a DML cursor)."""
    return result.rowcount if isinstance(result, CursorResult) else 0
