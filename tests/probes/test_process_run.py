"""A probe in a process of its own (the page's probe): stored there as it runs, refused settings raised here, cancel,
and neither a dead parent nor a dead child leaves a run hitting the server or reading `running` forever."""

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from db import Engine, init_db, make_engine
from db.recovery import recover_orphaned_runs
from db.run_queries import get_run
from fakeserver import Behaviour, FakeServer, serve_in_thread
from probes import ProbeSettingsError, ProcessProbeRun, RunSettings, RunStatus
from tests.probes.conftest import settings_for
from tests.support import ROOT, wait_until

KEY = "sk-child-SECRET-9031"
SLOW = "fake:ttft_ms=20,tpot_ms=20,tokens=20"  # about 0.4 s a request: a run long enough to interrupt


@pytest.fixture(scope="module")
def keyed() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=8), max_running=None, api_key=KEY) as server:
        yield server


@pytest.fixture
def engine(database_url: str) -> Engine:
    engine = make_engine(database_url)
    init_db(engine)
    return engine


def _stored(engine: Engine, run_id: str) -> tuple[str, int, str]:
    """The stored run's status, its sample count and its owner (host:pid:token)."""
    with engine.connect() as conn:
        status, owner = conn.execute(text("SELECT status, owner FROM probe_runs WHERE id = :id"), {"id": run_id}).one()
        (count,) = conn.execute(text("SELECT count(*) FROM probe_samples WHERE run_id = :id"), {"id": run_id}).one()
    return str(status), int(count), str(owner)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie has stopped


def _long_run(server: FakeServer) -> RunSettings:
    return settings_for(server, model=SLOW, concurrency=(2,), requests_per_level=400, api_key=KEY)


def test_the_run_is_recorded_by_its_own_process_with_every_request_and_the_key_only_reaches_the_server(
    keyed: FakeServer, engine: Engine, database_url: str
) -> None:
    before = len(keyed.records())
    run = ProcessProbeRun(
        settings_for(keyed, concurrency=(1, 3), requests_per_level=9, api_key=KEY), database_url=database_url
    ).start()
    assert run.run_id is not None and run.pid is not None and run.pid != os.getpid()
    _, _, owner = _stored(engine, run.run_id)
    assert f":{run.pid}:" in owner  # the child records the run: its heartbeat and its death are its own
    exposed = Path(f"/proc/{run.pid}/cmdline").read_bytes() + Path(f"/proc/{run.pid}/environ").read_bytes()
    assert KEY.encode() not in exposed  # the key went over the socket, not on the command line or in the environment
    assert run.wait(60)
    result = run.result()
    assert run.error is None and result is not None and result.status == RunStatus.COMPLETED
    status, count, _ = _stored(engine, run.run_id)
    assert status == RunStatus.COMPLETED.value
    assert count == len(keyed.records()) - before == 18  # every request the server answered, stored once
    assert [level.concurrency for level in run.progress().levels] == [1, 3]  # the last progress came up too
    stored = get_run(engine, run.run_id, with_samples=False)
    assert stored is not None and KEY not in stored.model_dump_json()
    wait_until(lambda: not _alive(run.pid or 0), timeout_s=15)


def test_refused_settings_are_raised_here_with_the_childs_words_and_the_run_ends_failed(
    keyed: FakeServer, engine: Engine, database_url: str
) -> None:
    run = ProcessProbeRun(settings_for(keyed, requests_per_level=0), database_url=database_url)
    with pytest.raises(ProbeSettingsError, match="requests per level must be at least 1"):
        run.start()
    assert run.run_id is not None and _stored(engine, run.run_id)[0] == RunStatus.FAILED.value
    wait_until(lambda: not _alive(run.pid or 0), timeout_s=15)


def test_cancel_reaches_the_child_which_keeps_what_finished(
    keyed: FakeServer, engine: Engine, database_url: str
) -> None:
    run = ProcessProbeRun(_long_run(keyed), database_url=database_url).start()
    assert run.run_id is not None
    wait_until(lambda: run.progress().finished >= 2, timeout_s=60)
    run.cancel()
    assert run.wait(30)
    result = run.result()
    assert result is not None and result.status == RunStatus.CANCELLED
    status, count, _ = _stored(engine, run.run_id)
    assert status == RunStatus.CANCELLED.value and 2 <= count < 400


def test_a_child_that_dies_ends_the_handle_and_its_run_is_marked_interrupted_with_its_samples(
    keyed: FakeServer, engine: Engine, database_url: str
) -> None:
    run = ProcessProbeRun(_long_run(keyed), database_url=database_url).start()
    assert run.run_id is not None and run.pid is not None
    run_id = run.run_id
    wait_until(lambda: _stored(engine, run_id)[1] >= 2, timeout_s=60)
    os.kill(run.pid, signal.SIGKILL)
    assert run.wait(30)
    assert run.result() is None and "the probe's process stopped (exit code -9)" in str(run.error)
    assert run.progress().status == RunStatus.FAILED
    assert recover_orphaned_runs(engine) == 1  # what the app's sweeper does: the owner's process is gone
    status, count, _ = _stored(engine, run_id)
    assert status == RunStatus.INTERRUPTED.value and count >= 2


PARENT = """
import json, sys
from probes import ProcessProbeRun, RunSettings
settings = RunSettings.model_validate({**json.loads(sys.argv[1]), "api_key": sys.argv[2]})
run = ProcessProbeRun(settings, database_url=sys.argv[3]).start()
print(json.dumps({"pid": run.pid, "run_id": run.run_id}), flush=True)
sys.stdin.read()  # alive, holding its end of the socket, until the test kills it
"""


def test_a_parent_that_dies_stops_its_child_which_records_the_run_as_cancelled(
    keyed: FakeServer, engine: Engine, database_url: str
) -> None:
    settings = _long_run(keyed)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, settings.model_dump_json(), KEY, database_url],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        started = json.loads(parent.stdout.readline())
        wait_until(lambda: _stored(engine, started["run_id"])[1] >= 2, timeout_s=60)
        parent.kill()  # no goodbye: the child hears of it only by its end of the socket closing
        parent.wait(10)
        sent = len(keyed.records())
        wait_until(lambda: not _alive(started["pid"]), timeout_s=10)
        status, count, _ = _stored(engine, started["run_id"])
        assert status == RunStatus.CANCELLED.value and 2 <= count < 400
        assert len(keyed.records()) - sent <= 4  # at most the requests in flight then: no orphan load
    finally:
        parent.kill()
        parent.wait(10)
