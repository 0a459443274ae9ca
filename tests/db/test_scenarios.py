"""Saved scenarios on SQLite and PostgreSQL: save, read back, list per page, delete; SQLite pragmas."""

from sqlalchemy import Engine, text

from db import delete_scenario, get_scenario, init_db, list_scenarios, make_engine, safe_url, save_scenario


def engine_for(url: str) -> Engine:
    engine = make_engine(url)
    init_db(engine)
    return engine


def test_scenario_lifecycle(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    first = save_scenario(engine, "tco", "  A800 baseline  ", {"price": "15", "hours": "720"})
    second = save_scenario(engine, "tco", "", {"tps": "1000"})
    save_scenario(engine, "selector", "other page", {"gpu": "h100"})
    assert len(first.id) == 6 and first.id.isalnum() and first.id != second.id
    assert get_scenario(engine, first.id).params == {"price": "15", "hours": "720"}
    assert get_scenario(engine, first.id.upper()).name == "A800 baseline"  # ids are typed forgivingly
    assert get_scenario(engine, first.id, page="selector") is None
    assert [s.name for s in list_scenarios(engine, "tco")] == ["untitled", "A800 baseline"]
    assert delete_scenario(engine, first.id) and not delete_scenario(engine, first.id)
    assert get_scenario(engine, first.id) is None
    engine.dispose()


def test_sqlite_runs_with_wal_busy_timeout_and_foreign_keys(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'nested' / 'dir' / 'x.db'}"
    engine = engine_for(url)  # creates the folder
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA busy_timeout")).scalar() >= 5000
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    assert (tmp_path / "nested" / "dir" / "x.db").exists()


def test_safe_url_hides_the_password() -> None:
    assert "secret" not in safe_url("postgresql+psycopg://app:secret@db:5432/llm")
    assert safe_url("sqlite:///data/x.db") == "sqlite:///data/x.db"
