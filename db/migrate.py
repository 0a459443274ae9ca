"""Schema migrations (Alembic) run on start: upgrade to head under a lock, adopting databases made before them."""

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_PG_LOCK_KEY = 0x4C4C4D5345525645  # arbitrary: one advisory lock for this app's migrations

# Databases made by create_all before migrations existed: the newest table they have -> their revision.
_ADOPT = (("probe_runs", "0002"), ("scenarios", "0001"))


def _config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision the code knows."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None: never migrated)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


@contextmanager
def _migration_lock(engine: Engine) -> Iterator[None]:
    """Only one process migrates at a time (several app replicas may start together)."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _PG_LOCK_KEY})
            try:
                yield
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_LOCK_KEY})
                connection.commit()
        return
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database to a revision (default: the newest), keeping every row."""
    with _migration_lock(engine), engine.begin() as connection:
        config = _config(connection)
        if MigrationContext.configure(connection).get_current_revision() is None:
            tables = set(inspect(connection).get_table_names())
            adopted = next((rev for table, rev in _ADOPT if table in tables), None)
            if adopted is not None:
                command.stamp(config, adopted)
        command.upgrade(config, revision)
