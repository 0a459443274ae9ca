"""The sweeper of interrupted runs, in-process: stale and fresh heartbeats on an injected clock, dead owners on this
host marked at once, samples and levels kept, a slow run kept alive by its heartbeat, database errors survived."""

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from db import INTERRUPTED_WITHIN_S, init_db, make_engine, start_recovery
from db.reaper import SWEEP_INTERVAL_S, Sweeper, start_sweeper, stop_sweeper, sweep
from db.recorder import RunRecorder, add_level, add_sample, create_run
from db.recovery import HEARTBEAT_STALE_S, _host
from db.run_queries import get_run, get_run_row, load_levels, load_samples
from fakeserver import Behaviour, serve_in_thread
from probes import ProbeRun, RunSettings, RunStatus, SloTargets, Timeouts
from probes.metrics import summarize_level
from probes.models import RequestSample, TokenSource
from probes.worker import HEARTBEAT_INTERVAL_S

REQUIRED_WITHIN_S = 30.0  # a run whose process died reads interrupted within this, while another process runs


def engine_for(url: str) -> Engine:
    engine = make_engine(url)
    init_db(engine)
    return engine


def settings() -> RunSettings:
    return RunSettings(base_url="http://127.0.0.1:9/v1", model="fake", concurrency=(1,), requests_per_level=2)


def sample(index: int, level: int = 0) -> RequestSample:
    return RequestSample(
        level_index=level,
        concurrency=1,
        index=index,
        start_s=0.1 * index,
        ttft_ms=40.0,
        tpot_ms=5.0,
        e2e_ms=140.0,
        chunk_ms=[40.0, 45.0],
        input_tokens=10,
        output_tokens=20,
        token_source=TokenSource.USAGE,
    )


def set_run(engine: Engine, run_id: str, **values: object) -> None:
    """What another process left in the row (its owner, its last heartbeat)."""
    columns = ", ".join(f"{name} = :{name}" for name in values)
    with engine.begin() as connection:
        connection.execute(text(f"UPDATE probe_runs SET {columns} WHERE id = :id"), {**values, "id": run_id})


def status(engine: Engine, run_id: str) -> str:
    row = get_run_row(engine, run_id)
    assert row is not None
    return row.status


def a_dead_pid() -> int:
    """The pid of a child that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Poll until condition() holds; return the seconds it took."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout_s, f"{what}: not within {timeout_s} s"
        time.sleep(0.02)
    return time.monotonic() - start


def test_the_figures_keep_a_dead_processs_run_under_thirty_seconds() -> None:
    assert SWEEP_INTERVAL_S == HEARTBEAT_INTERVAL_S  # derived, not repeated
    assert HEARTBEAT_STALE_S >= 3 * HEARTBEAT_INTERVAL_S  # a live run may miss a beat or two and stay running
    assert INTERRUPTED_WITHIN_S == HEARTBEAT_STALE_S + SWEEP_INTERVAL_S < REQUIRED_WITHIN_S


def test_a_stale_run_is_marked_and_a_fresh_one_is_not_with_its_samples_and_levels(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    t0 = datetime.now(UTC)
    stale, fresh = create_run(engine, settings()), create_run(engine, settings())
    for i in range(3):
        add_sample(engine, stale, sample(i))
    samples = [sample(i) for i in range(3)]
    level = summarize_level(0, 1, samples, started_at=t0, finished_at=t0, duration_s=1.0, slo=SloTargets())
    add_level(engine, stale, level)
    add_sample(engine, stale, sample(0, level=1))  # a second level that never finished
    # Both ran on another host (no pid to look at): only their heartbeats tell.
    set_run(engine, stale, owner="otherhost:123:tok", heartbeat_at=t0)
    set_run(engine, fresh, owner="otherhost:456:tok", heartbeat_at=t0 + timedelta(seconds=15))
    now = [t0 + timedelta(seconds=HEARTBEAT_STALE_S - 1)]
    sweeper = Sweeper(engine, clock=lambda: now[0])
    assert sweeper.sweep_once() == 0 and status(engine, stale) == RunStatus.RUNNING.value

    now[0] = t0 + timedelta(seconds=HEARTBEAT_STALE_S + 1)
    assert sweeper.sweep_once() == 1 and sweeper.marked == 1
    assert status(engine, stale) == RunStatus.INTERRUPTED.value and status(engine, fresh) == RunStatus.RUNNING.value
    assert sweeper.sweep_once() == 0  # idempotent
    run = get_run(engine, stale)
    assert run is not None and run.status == RunStatus.INTERRUPTED and "stopped" in (run.error or "")
    assert len(run.samples) == 4 and len(load_levels(engine, stale)) == 1
    assert [lv.completed for lv in run.levels] == [3, 1]  # the stored level, and the unfinished one from its samples
    assert run.finished_at == t0  # its last sign of life

    now[0] = t0 + timedelta(seconds=15 + HEARTBEAT_STALE_S + 1)
    assert sweeper.sweep_once() == 1 and status(engine, fresh) == RunStatus.INTERRUPTED.value  # once it stops too
    engine.dispose()


def test_a_dead_owner_on_this_host_is_marked_at_once_and_live_ones_are_not(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    dead, reused, live, mine, foreign = (create_run(engine, settings()) for _ in range(5))
    add_sample(engine, dead, sample(0))
    add_sample(engine, dead, sample(1))
    set_run(engine, dead, owner=f"{_host()}:{a_dead_pid()}:tok")
    set_run(engine, reused, owner=f"{_host()}:{os.getpid()}:an-earlier-process")  # its pid is now this process's
    set_run(engine, live, owner=f"{_host()}:{os.getppid()}:tok")  # a process that is still there
    set_run(engine, foreign, owner=f"otherhost:{a_dead_pid()}:tok")  # that pid means nothing here
    # Every heartbeat is fresh: the dead ones are seen by their pid, not by their heartbeat.
    assert sweep(engine) == 2
    assert status(engine, dead) == status(engine, reused) == RunStatus.INTERRUPTED.value
    assert status(engine, live) == status(engine, mine) == status(engine, foreign) == RunStatus.RUNNING.value
    assert len(load_samples(engine, dead)) == 2
    assert sweep(engine) == 0
    engine.dispose()


def test_start_recovery_marks_orphans_before_it_returns_and_starts_one_sweeper_per_engine(database_url: str) -> None:
    engine = engine_for(database_url)
    orphan = create_run(engine, settings())
    set_run(engine, orphan, owner=f"{_host()}:{a_dead_pid()}:tok")
    sweeper = start_recovery(engine)
    assert status(engine, orphan) == RunStatus.INTERRUPTED.value  # no waiting: a new start marks them at once
    assert sweeper.is_alive() and sweeper.marked == 1
    assert start_sweeper(engine) is sweeper and start_recovery(engine) is sweeper  # idempotent
    other = make_engine(database_url)
    assert start_sweeper(other) is not sweeper
    stop_sweeper(other)
    stop_sweeper(engine)
    assert not sweeper.is_alive()
    again = start_sweeper(engine)
    assert again is not sweeper and again.is_alive()
    stop_sweeper(engine)
    other.dispose()
    engine.dispose()


def test_the_sweeper_thread_marks_a_run_whose_heartbeat_stopped(database_url: str) -> None:
    engine = engine_for(database_url)
    run_id = create_run(engine, settings())  # beats once, then never again
    set_run(engine, run_id, owner="otherhost:123:tok")
    sweeper = Sweeper(engine, interval_s=0.05, stale_after_s=0.5).start()
    try:
        wait_for(lambda: status(engine, run_id) == RunStatus.INTERRUPTED.value, 30, "the stale run marked")
        assert sweeper.marked == 1 and sweeper.is_alive()
    finally:
        sweeper.stop()
    assert not sweeper.is_alive()
    engine.dispose()


def test_a_slow_run_keeps_beating_without_samples_and_is_never_marked(database_url: str) -> None:
    engine = engine_for(database_url)
    stale_after_s = 1.0
    # The request takes 3 s to its first token: no sample for three times the staleness.
    with serve_in_thread(defaults=Behaviour(ttft_ms=3000, tpot_ms=1, tokens=2)) as server:
        run_settings = RunSettings(
            base_url=server.base_url,
            model="fake",
            concurrency=(1,),
            requests_per_level=1,
            max_tokens=2,
            scrape_metrics=False,
            timeouts=Timeouts(connect_s=5, ttft_s=30, stall_s=30),
        )
        recorder = RunRecorder(engine)
        sweeper = Sweeper(engine, interval_s=0.05, stale_after_s=stale_after_s).start()
        try:
            probe = ProbeRun(run_settings, heartbeat_s=0.1, sink=recorder).start()
            seen: set[str] = set()
            while not probe.wait(0.05):
                seen.add(status(engine, recorder.run_id))
            assert sweeper.marked == 0 and sweeper.failures == 0
        finally:
            sweeper.stop()
    # Running throughout; the last look may already see it completed (stored just before the probe's thread ends).
    assert RunStatus.RUNNING.value in seen and seen <= {RunStatus.RUNNING.value, RunStatus.COMPLETED.value}
    assert status(engine, recorder.run_id) == RunStatus.COMPLETED.value and not probe.sink_errors
    engine.dispose()


def test_the_sweeper_logs_a_database_error_once_and_keeps_going(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/later.db")  # no schema yet: every sweep fails
    caplog.set_level(logging.INFO, logger="db.reaper")
    sweeper = Sweeper(engine, interval_s=0.02, stale_after_s=0.2).start()
    try:
        wait_for(lambda: sweeper.failures >= 3, 30, "failed sweeps")
        assert sweeper.is_alive()
        init_db(engine)
        run_id = create_run(engine, settings())
        set_run(engine, run_id, owner="otherhost:1:tok")
        wait_for(lambda: status(engine, run_id) == RunStatus.INTERRUPTED.value, 30, "marked once the database works")
        assert sweeper.is_alive()
    finally:
        sweeper.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len([m for m in warnings if m.startswith("could not look")]) == 1, warnings
    assert "no such table" in warnings[0] and any("works again" in m for m in warnings)
    engine.dispose()


def test_the_apps_cached_engine_sweeps_and_stops_when_released(database_url: str) -> None:
    from ui.resources import get_engine

    def sweeper_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "db-sweeper" and t.is_alive()}

    get_engine.clear()
    before = sweeper_threads()
    engine = get_engine()
    started = sweeper_threads() - before
    assert len(started) == 1  # the app's engine comes with its sweeper
    assert get_engine() is engine and start_sweeper(engine).is_alive() and sweeper_threads() - before == started
    get_engine.clear()  # released: its sweeper stops with it
    assert not any(t.is_alive() for t in started)
