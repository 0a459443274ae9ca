"""Migrations: old databases upgrade to the current schema with every scenario and run intact."""

import json
import threading
from datetime import UTC, datetime

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, text

from db import get_run, get_scenario, list_runs, list_scenarios, make_engine
from db.base import Base
from db.migrate import current_revision, head_revision, upgrade
from probes.models import RequestSample

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _insert_scenario(engine: Engine, scenario_id: str, name: str) -> None:
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO scenarios (id, page, name, params_json, created_at) VALUES (:id, 'tco', :n, :p, :t)"),
            {"id": scenario_id, "n": name, "p": json.dumps({"price": "15", "hours": "720"}), "t": NOW},
        )


def _insert_run_as_in_0002(engine: Engine) -> None:
    settings = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "concurrency": [1, 4], "requests_per_level": 2}
    sample = RequestSample(
        level_index=0, concurrency=1, index=0, start_s=0.0, ttft_ms=210.0, e2e_ms=900.0, output_tokens=32
    ).model_dump_json()
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO probe_runs (id, endpoint, model, api, workload, status, settings_json, started_at,"
                " finished_at, heartbeat_at, owner) VALUES ('r1', 'http://127.0.0.1:9/v1', 'm', 'chat', 'seed',"
                " 'completed', :s, :t, :t, :t, 'old')"
            ),
            {"s": json.dumps(settings), "t": NOW},
        )
        connection.execute(
            text(
                "INSERT INTO probe_samples (run_id, level_index, concurrency, request_index, ok, ttft_ms, sample_json)"
                " VALUES ('r1', 0, 1, 0, :ok, 210.0, :j)"
            ),
            {"ok": True, "j": sample},
        )


def test_first_schema_upgrades_to_head_with_scenarios_intact(any_database_url: str) -> None:
    engine = make_engine(any_database_url)
    upgrade(engine, "0001")
    assert current_revision(engine) == "0001"
    _insert_scenario(engine, "abc123", "kept across upgrades")
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert get_scenario(engine, "abc123").params == {"price": "15", "hours": "720"}
    engine.dispose()


def test_probe_schema_upgrades_with_runs_and_samples_intact(any_database_url: str) -> None:
    engine = make_engine(any_database_url)
    upgrade(engine, "0002")
    _insert_scenario(engine, "zzz999", "a scenario")
    _insert_run_as_in_0002(engine)
    upgrade(engine)
    runs = list_runs(engine)
    assert [r.id for r in runs] == ["r1"] and runs[0].label == ""
    result = get_run(engine, "r1")
    assert len(result.samples) == 1 and result.samples[0].ttft_ms == 210.0
    assert [s.id for s in list_scenarios(engine, "tco")] == ["zzz999"]
    engine.dispose()


def test_database_made_before_migrations_is_adopted(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    with engine.begin() as connection:  # what create_all made before Alembic: scenarios only
        connection.execute(
            text(
                "CREATE TABLE scenarios (id VARCHAR(16) PRIMARY KEY, page VARCHAR(32) NOT NULL,"
                " name VARCHAR(200) NOT NULL, params_json TEXT NOT NULL, created_at DATETIME)"
            )
        )
    _insert_scenario(engine, "old111", "made by create_all")
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert get_scenario(engine, "old111").name == "made by create_all"


def test_migrations_build_exactly_the_models_schema(any_database_url: str) -> None:
    engine = make_engine(any_database_url)
    upgrade(engine)
    with engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection, opts={"compare_type": True}), Base.metadata)
    assert diff == [], f"models and migrations differ: {diff}"
    engine.dispose()


def test_two_processes_starting_together_migrate_once(any_database_url: str) -> None:
    errors: list[BaseException] = []

    def start() -> None:
        engine = make_engine(any_database_url)
        try:
            upgrade(engine)
        except BaseException as exc:
            errors.append(exc)
        finally:
            engine.dispose()

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert current_revision(make_engine(any_database_url)) == head_revision()
