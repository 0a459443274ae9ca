"""kill -9 in the middle of a probe: the run reads interrupted, its samples kept, within 30 s while any other process
uses the database (the app's sweeper on SQLite, another command line's on PostgreSQL, a stale heartbeat of another
host), and at once when the next process starts; a live probe, even a slow one, is never marked."""

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from db import INTERRUPTED_WITHIN_S, get_run, init_db, list_runs, make_engine, recover_orphaned_runs
from db.recorder import add_level, add_sample, create_run
from db.recovery import HEARTBEAT_STALE_S
from db.run_queries import get_run_row, load_samples
from db.run_tables import RunRow
from fakeserver import serve_in_thread
from probes import RunSettings, SloTargets
from probes.metrics import summarize_level
from probes.models import RequestSample, RunStatus, TokenSource
from tests.pg import create_database
from tests.support import ROOT, running_app

REQUIRED_WITHIN_S = 30.0  # a run whose process died reads interrupted within this, while another process runs
# About 0.3 s a request at concurrency 2, 40 requests: some 6 s in all, so a kill lands in the middle.
STEADY_MODEL = "fake:ttft_ms=20,tpot_ms=10,tokens=30"
# No first token for ten minutes: the run sends no sample for as long as a test lasts, and must stay running.
SLOW_MODEL = "fake:ttft_ms=600000,tokens=2"


def engine_for(url: str) -> Engine:
    engine = make_engine(url)
    init_db(engine)
    return engine


def probe_command(base_url: str, model: str, label: str, output: Path, requests: int = 40) -> list[str]:
    return [
        sys.executable,
        "-m",
        "probes",
        "--base-url",
        base_url,
        "--model",
        model,
        "--label",
        label,
        "--concurrency",
        "2",
        "--requests",
        str(requests),
        "--max-tokens",
        "30",
        "--ttft-timeout",
        "3600",
        "--stall-timeout",
        "3600",
        "--no-metrics",
        "--quiet",
        "--output",
        str(output),
    ]


def start_cli(database_url: str, command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as stderr:
        return subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": database_url},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def run_labelled(engine: Engine, label: str, proc: subprocess.Popen[bytes], timeout_s: float = 60) -> RunRow:
    """The stored run with this label, once its process has created it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [row for row in list_runs(engine) if row.label == label]
        if found:
            return found[0]
        assert proc.poll() is None, f"the probe {label!r} exited with {proc.returncode} before storing its run"
        time.sleep(0.1)
    raise AssertionError(f"no run {label!r} within {timeout_s} s")


def stored_requests(engine: Engine, run_id: str) -> set[tuple[int, int]]:
    return {(s.level_index, s.index) for s in load_samples(engine, run_id)}


def wait_for_samples(engine: Engine, run_id: str, proc: subprocess.Popen[bytes], count: int) -> set[tuple[int, int]]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        stored = stored_requests(engine, run_id)
        if len(stored) >= count:
            return stored
        assert proc.poll() is None, f"the probe exited with {proc.returncode} after storing {len(stored)} requests"
        time.sleep(0.05)
    raise AssertionError(f"the probe stored fewer than {count} requests within 60 s")


def kill_9(proc: subprocess.Popen[bytes]) -> float:
    """SIGKILL the process (no cleanup of any kind runs in it); returns when it died (time.monotonic())."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    return time.monotonic()


def seconds_until_interrupted(engine: Engine, run_id: str, since: float) -> float:
    """Poll the database until the run reads interrupted; the seconds from `since` (time.monotonic()) to then.

    Polls past the required bound, so a failure says how late it came rather than only that it did.
    """
    deadline = since + 2 * REQUIRED_WITHIN_S
    while time.monotonic() < deadline:
        row = get_run_row(engine, run_id)
        assert row is not None and row.status in (RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value), row
        if row.status == RunStatus.INTERRUPTED.value:
            took_s = time.monotonic() - since
            print(f"run {run_id} read interrupted {took_s:.1f} s after the reference time")
            return took_s
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} still reads {row.status} {2 * REQUIRED_WITHIN_S:g} s later")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


def test_killed_probe_process_is_marked_interrupted_with_its_samples_by_the_next_start(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    engine = engine_for(url)
    with serve_in_thread() as server:
        proc = start_cli(
            url, probe_command(server.base_url, STEADY_MODEL, "doomed", tmp_path / "run.json"), tmp_path / "cli.log"
        )
        try:
            run_id = run_labelled(engine, "doomed", proc).id
            wait_for_samples(engine, run_id, proc, 5)
        finally:
            kill_9(proc)
    stored_before = len(load_samples(engine, run_id))
    assert list_runs(engine)[0].status == "running"  # nobody has noticed yet: no other process uses the database
    # The next command line started on this host marks it before it probes (here an endpoint that is down).
    command = probe_command("http://127.0.0.1:9/v1", "m", "next", tmp_path / "next.json", requests=1)
    next_start = subprocess.run(command, cwd=ROOT, env={**os.environ, "DATABASE_URL": url}, capture_output=True)
    assert next_start.returncode == 1, next_start.stderr.decode()
    run = get_run_row(engine, run_id)
    assert run is not None and run.status == "interrupted" and "stopped" in (run.error or "")
    result = get_run(engine, run_id)
    assert result is not None and len(result.samples) == stored_before >= 5
    assert all(s.ok for s in result.samples)
    assert recover_orphaned_runs(engine) == 0
    engine.dispose()


def test_a_live_probe_is_not_marked_interrupted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    engine = engine_for(url)
    with serve_in_thread() as server:
        proc = start_cli(
            url, probe_command(server.base_url, STEADY_MODEL, "live", tmp_path / "run.json"), tmp_path / "cli.log"
        )
        try:
            run_id = run_labelled(engine, "live", proc).id
            assert recover_orphaned_runs(engine) == 0
            assert get_run_row(engine, run_id).status == "running"
        finally:
            stop(proc)
    engine.dispose()


@pytest.mark.e2e
def test_the_apps_sweeper_marks_a_killed_command_line_run_interrupted_within_30_s(
    browser: object, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    engine = engine_for(url)
    with serve_in_thread() as server, running_app(url, log_path=tmp_path / "app.log") as base:
        context = browser.new_context()
        tab = context.new_page()
        try:
            # The app makes its engine, and so its sweeper, when a page runs; the empty run list shows it was made.
            tab.goto(f"{base}/runs")
            tab.get_by_text("No stored runs match").first.wait_for(state="attached", timeout=60_000)
            proc = start_cli(
                url, probe_command(server.base_url, STEADY_MODEL, "doomed", tmp_path / "run.json"), tmp_path / "cli.log"
            )
            try:
                run_id = run_labelled(engine, "doomed", proc).id
                before = wait_for_samples(engine, run_id, proc, 3)
            finally:
                killed_at = kill_9(proc)
            stored_at_kill = stored_requests(engine, run_id)
            took_s = seconds_until_interrupted(engine, run_id, killed_at)  # the app's sweeper, no restart, no call here
            assert took_s <= REQUIRED_WITHIN_S, f"interrupted {took_s:.1f} s after the kill"
            assert before <= stored_at_kill == stored_requests(engine, run_id)
            assert all(s.ok for s in load_samples(engine, run_id))
            tab.goto(f"{base}/runs?runs={run_id}")  # and the page says so
            tab.get_by_text("interrupted").first.wait_for(timeout=30_000)
        finally:
            tab.goto("about:blank")
            context.close()
    engine.dispose()


@pytest.fixture
def pg_url(postgres_base_url: str, request: pytest.FixtureRequest) -> str:
    """A fresh PostgreSQL database for this test."""
    return create_database(postgres_base_url, f"t_recovery_{request.node.name[5:40]}")


def test_on_postgresql_another_command_lines_sweeper_marks_a_killed_run_interrupted(
    pg_url: str, tmp_path: Path
) -> None:
    engine = engine_for(pg_url)
    with serve_in_thread() as server:
        watcher = start_cli(
            pg_url, probe_command(server.base_url, SLOW_MODEL, "watcher", tmp_path / "w.json", 1), tmp_path / "w.log"
        )
        try:
            watching = run_labelled(engine, "watcher", watcher)  # its process sweeps from before it stored its run
            doomed = start_cli(
                pg_url, probe_command(server.base_url, STEADY_MODEL, "doomed", tmp_path / "d.json"), tmp_path / "d.log"
            )
            try:
                run_id = run_labelled(engine, "doomed", doomed).id
                before = wait_for_samples(engine, run_id, doomed, 3)
            finally:
                killed_at = kill_9(doomed)
            stored_at_kill = stored_requests(engine, run_id)
            took_s = seconds_until_interrupted(engine, run_id, killed_at)
            assert took_s <= REQUIRED_WITHIN_S, f"interrupted {took_s:.1f} s after the kill"
            assert before <= stored_at_kill == stored_requests(engine, run_id)
            assert get_run_row(engine, watching.id).status == RunStatus.RUNNING.value
        finally:
            stop(watcher)
    engine.dispose()


def _another_hosts_run(engine: Engine) -> tuple[str, datetime]:
    """A run of a process on another host (its pid means nothing here) that stored a level and a half, then
    stopped beating: returns its id and its last heartbeat."""
    settings = RunSettings(base_url="http://gpu-box:8000/v1", model="m", concurrency=(1, 2), requests_per_level=2)
    run_id = create_run(engine, settings)
    samples = [
        RequestSample(
            level_index=level,
            concurrency=level + 1,
            index=i,
            start_s=0.1 * i,
            ttft_ms=40.0,
            tpot_ms=5.0,
            e2e_ms=140.0,
            chunk_ms=[40.0, 45.0],
            input_tokens=10,
            output_tokens=20,
            token_source=TokenSource.USAGE,
        )
        for level, i in ((0, 0), (0, 1), (1, 0))
    ]
    for sample in samples:
        add_sample(engine, run_id, sample)
    now = datetime.now(UTC)
    add_level(
        engine,
        run_id,
        summarize_level(0, 1, samples[:2], started_at=now, finished_at=now, duration_s=0.3, slo=SloTargets()),
    )
    last_beat = datetime.now(UTC)
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE probe_runs SET owner = 'otherhost:123:tok', heartbeat_at = :t WHERE id = :id"),
            {"t": last_beat, "id": run_id},
        )
    return run_id, last_beat


def test_on_postgresql_a_run_of_another_host_reads_interrupted_once_its_heartbeat_is_stale(
    pg_url: str, tmp_path: Path
) -> None:
    engine = engine_for(pg_url)
    with serve_in_thread() as server:
        watcher = start_cli(
            pg_url, probe_command(server.base_url, SLOW_MODEL, "watcher", tmp_path / "w.json", 1), tmp_path / "w.log"
        )
        try:
            watching = run_labelled(engine, "watcher", watcher)
            run_id, last_beat = _another_hosts_run(engine)
            since = time.monotonic() - (datetime.now(UTC) - last_beat).total_seconds()
            took_s = seconds_until_interrupted(engine, run_id, since)
            # Not before its heartbeat is stale; then within one sweep.
            message = f"interrupted {took_s:.1f} s after its last heartbeat"
            assert HEARTBEAT_STALE_S - 0.5 <= took_s <= INTERRUPTED_WITHIN_S + 2.0, message
            result = get_run(engine, run_id)
            assert result is not None and len(result.samples) == 3
            assert [lv.completed for lv in result.levels] == [2, 1]
            # Meanwhile the watcher's slow run stored nothing for longer than the staleness: its heartbeat, beating
            # on its own, kept it running.
            assert get_run_row(engine, watching.id).status == RunStatus.RUNNING.value
            assert load_samples(engine, watching.id) == []
            assert watcher.poll() is None
        finally:
            stop(watcher)
    engine.dispose()
