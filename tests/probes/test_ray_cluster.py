"""--workers on a real two-node Ray cluster started here (ray start --head, then a second node joining it).

The probe's workers send to the test server; the driver (this process, or a `python -m probes` child) stores the run.
Each node has one CPU, and each worker takes one, so the two workers run on the two nodes.
"""

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from db import RunRecorder, get_run, init_db, make_engine
from db.run_queries import list_runs, load_samples
from fakeserver import Behaviour, FakeServer, serve_in_thread
from probes import ProbeRun, RunSettings
from probes.metrics import summarize_level
from probes.models import RunStatus
from tests.probes.conftest import SHORT_TIMEOUTS
from tests.support import ROOT, free_port, wait_until

RAY = str(Path(sys.executable).parent / "ray")
QUICK = Behaviour(ttft_ms=5, tpot_ms=1, tokens=4)
CLUSTER_DIRS: list[Path] = []  # the cluster's session directory (logs, its record of actors and tasks)


def _port() -> int:
    """A free port outside the range Ray keeps for its workers (10002-19999)."""
    while True:
        port = free_port()
        if not 10_002 <= port <= 19_999:
            return port


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A head node and a second node of one CPU each, with their own token; their processes ended after."""
    root = tmp_path_factory.mktemp("ray")
    CLUSTER_DIRS.append(root)
    token = root / "token"
    token.write_text(secrets.token_hex(32))
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_USAGE_STATS_ENABLED": "0"}
    saved = {key: os.environ.get(key) for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    address = f"127.0.0.1:{_port()}"
    common = ["--block", "--num-cpus=1", "--disable-usage-stats"]
    head = subprocess.Popen(
        [RAY, "start", "--head", f"--port={address.split(':')[1]}", "--include-dashboard=false",
         f"--temp-dir={root / 'tmp'}", *common],
        env=env, stdout=subprocess.DEVNULL, stderr=(root / "head.log").open("w"), start_new_session=True,
    )  # fmt: skip
    procs = [head]
    try:
        wait_until(lambda: _nodes(address, env) >= 1, timeout_s=120)
        node = subprocess.Popen(
            [RAY, "start", f"--address={address}", *common],
            env=env, stdout=subprocess.DEVNULL, stderr=(root / "node.log").open("w"), start_new_session=True,
        )  # fmt: skip
        procs.append(node)
        wait_until(lambda: _nodes(address, env) >= 2, timeout_s=120)
        yield address
    finally:
        for proc in reversed(procs):
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _nodes(address: str, env: dict[str, str]) -> int:
    """Alive nodes of the cluster (0 while it does not answer)."""
    alive = "sum(n['Alive'] for n in ray.nodes())"
    code = f"import ray; ray.init(address='{address}', logging_level='ERROR'); print({alive})"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=QUICK, max_running=None) as fake:
        yield fake


def _settings(server: FakeServer, address: str, **changes: object) -> RunSettings:
    values: dict[str, object] = {
        "base_url": server.base_url,
        "model": "fake",
        "timeouts": SHORT_TIMEOUTS.model_copy(update={"ttft_s": 30, "stall_s": 30}),
        "workers": 2,
        "ray_address": address,
        "scrape_metrics": False,
    }
    values.update(changes)
    return RunSettings(**values)  # type: ignore[arg-type]


def _run(settings: RunSettings, tmp_path: Path) -> tuple[ProbeRun, object]:
    engine = make_engine(f"sqlite:///{tmp_path / 'runs.db'}")
    init_db(engine)
    return ProbeRun(settings, sink=RunRecorder(engine)).start(), engine


def test_every_request_is_stored_once_and_the_merged_percentiles_are_the_stored_ones(
    cluster: str, server: FakeServer, tmp_path: Path
) -> None:
    probe, engine = _run(_settings(server, cluster, concurrency=(3,), requests_per_level=21), tmp_path)
    assert probe.wait(240)
    result = probe.result()
    assert result is not None and result.status == RunStatus.COMPLETED, probe.error
    stored = load_samples(engine, probe.run_id)
    assert len(stored) == len(server.records()) == 21  # the server's count: nothing lost, nothing twice
    assert sorted(s.index for s in stored) == list(range(21))
    level = result.levels[0]
    again = summarize_level(
        0, 3, stored, started_at=level.started_at, finished_at=level.finished_at, duration_s=level.duration_s,
        slo=result.settings.slo,
    )  # fmt: skip
    assert (again.ttft_ms, again.tpot_ms, again.e2e_ms, again.itl_ms) == (
        level.ttft_ms, level.tpot_ms, level.e2e_ms, level.itl_ms,
    )  # fmt: skip
    # concurrency 3 over two workers: 2 and 1 in flight; 21 requests: 11 and 10
    per_worker = {w: sum(1 for s in stored if s.worker == w) for w in (0, 1)}
    assert per_worker == {0: 11, 1: 10}
    workers = {w.id: w for w in result.workers}
    assert {w: workers[w].requests for w in (0, 1)} == per_worker
    assert workers[0].node != workers[1].node  # one per node
    assert all(s.scheduled_s is not None for s in stored)
    loaded = get_run(engine, probe.run_id)
    assert loaded is not None and [w.id for w in loaded.workers] == [0, 1] and not loaded.partial


def test_poisson_arrivals_thinned_over_the_workers_add_up_to_poisson_at_the_rate(
    cluster: str, server: FakeServer, tmp_path: Path
) -> None:
    rate = 100.0
    settings = _settings(server, cluster, request_rate_rps=(rate,), requests_per_level=400, max_in_flight=32)
    probe, engine = _run(settings, tmp_path)
    assert probe.wait(240)
    stored = load_samples(engine, probe.run_id)
    assert len(stored) == len(server.records()) == 400
    due = sorted(s.scheduled_s for s in stored if s.scheduled_s is not None)
    assert {s.worker for s in stored} == {0, 1}
    window_s = 0.1
    counts = [0] * int(due[-1] / window_s)
    for t in due:
        if int(t / window_s) < len(counts):
            counts[int(t / window_s)] += 1
    mean = sum(counts) / len(counts)
    dispersion = sum((c - mean) ** 2 for c in counts) / (len(counts) - 1) / mean
    assert 0.6 < dispersion < 1.5  # Poisson: variance = mean (a regular or bunched split would be far off)
    assert abs(len(due) / due[-1] - rate) < 0.2 * rate
    # Both workers start from the one shared instant.
    first = {w: min(s.start_s for s in stored if s.worker == w) for w in (0, 1)}
    assert max(first.values()) < 0.2


def test_the_key_reaches_the_workers_and_nothing_of_the_cluster_keeps_it(cluster: str, tmp_path: Path) -> None:
    key = "sk-ray-" + secrets.token_hex(12)
    with serve_in_thread(defaults=QUICK, max_running=None, api_key=key) as keyed:
        settings = _settings(keyed, cluster, concurrency=(2,), requests_per_level=6, api_key=key)
        probe, engine = _run(settings, tmp_path)
        assert probe.wait(240)
        result = probe.result()
        assert result is not None and result.levels[0].completed == 6  # the server took the key from both workers
        assert {s.worker for s in load_samples(engine, probe.run_id)} == {0, 1}
    leaks = []
    for path in CLUSTER_DIRS[0].rglob("*"):
        if path.is_file() and not path.is_socket():
            try:
                if key.encode() in path.read_bytes():
                    leaks.append(path)
            except OSError:
                continue
    assert not leaks  # no log, no record of the actors' arguments
    assert key not in (tmp_path / "runs.db").read_bytes().decode("latin-1")


def _long(server: FakeServer, cluster: str) -> RunSettings:
    return _settings(server, cluster, model="fake:ttft_ms=20,tokens=8", concurrency=(4,), requests_per_level=2000)


def test_a_worker_killed_mid_run_gives_a_partial_run_with_its_batches_kept(
    cluster: str, server: FakeServer, tmp_path: Path
) -> None:
    probe, engine = _run(_long(server, cluster).model_copy(update={"requests_per_level": 300}), tmp_path)
    wait_until(lambda: _finished(probe, 1) >= 20, timeout_s=240)
    pid = probe.progress().workers[1].pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # the worker's process on its node (this machine)
    assert probe.wait(240)
    result = probe.result()
    assert result is not None and result.status == RunStatus.COMPLETED
    assert result.partial and "worker 1" in (result.partial_reason or "")
    stored = load_samples(engine, probe.run_id)
    kept = sum(1 for s in stored if s.worker == 1)
    assert kept >= 20 and kept == {w.id: w for w in result.workers}[1].requests  # every batch it sent
    assert sum(1 for s in stored if s.worker == 0) == 150  # the level finished on the other
    loaded = get_run(engine, probe.run_id)
    assert loaded is not None and loaded.partial and loaded.partial_reason == result.partial_reason


def test_cancel_stops_every_worker_within_two_seconds(cluster: str, server: FakeServer, tmp_path: Path) -> None:
    begun_s = time.perf_counter()
    probe, engine = _run(_long(server, cluster), tmp_path)
    wait_until(lambda: _finished(probe, 0) >= 5 and _finished(probe, 1) >= 5, timeout_s=240)
    cancelled_s = time.perf_counter()
    probe.cancel()
    assert probe.wait(30)
    result = probe.result()
    assert result is not None and result.status == RunStatus.CANCELLED
    assert 0 < result.levels[0].duration_s < cancelled_s - begun_s + 2.0  # from the shared start to the cancel
    # The run ends only after its workers were stopped (or killed): nothing reached the server 2 s after the cancel.
    assert max(r.received_s for r in server.records()) < cancelled_s + 2.0
    assert len(load_samples(engine, probe.run_id)) > 10


def test_a_dead_driver_leaves_no_worker_sending(cluster: str, server: FakeServer, tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}", "PYTHONPATH": str(ROOT)}
    argv = ["--base-url", server.base_url, "--model", "fake:ttft_ms=20,tokens=8", "--concurrency", "4"]
    argv += ["--requests", "2000", "--workers", "2", "--ray-address", cluster, "--no-metrics", "--quiet"]
    driver = subprocess.Popen([sys.executable, "-m", "probes", *argv], cwd=ROOT, env=env, start_new_session=True)
    try:
        wait_until(lambda: len(server.records()) >= 40, timeout_s=240)
    finally:
        killed_s = time.perf_counter()
        driver.kill()
        driver.wait(timeout=30)
    wait_until(lambda: time.perf_counter() - max(r.received_s for r in server.records()) > 1.0, timeout_s=60)
    assert max(r.received_s for r in server.records()) < killed_s + 10.0


def test_ctrl_c_on_the_command_line_stops_every_worker_within_two_seconds_and_keeps_the_run(
    cluster: str, server: FakeServer, tmp_path: Path
) -> None:
    database_url = f"sqlite:///{tmp_path / 'cli.db'}"
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT)}
    argv = ["--base-url", server.base_url, "--model", "fake:ttft_ms=20,tokens=8", "--concurrency", "4"]
    argv += ["--requests", "2000", "--workers", "2", "--ray-address", cluster, "--no-metrics", "--quiet"]
    driver = subprocess.Popen([sys.executable, "-m", "probes", *argv], cwd=ROOT, env=env, start_new_session=True)
    try:
        wait_until(lambda: len(server.records()) >= 40, timeout_s=240)
        interrupted_s = time.perf_counter()
        driver.send_signal(signal.SIGINT)  # what Ctrl-C in its terminal sends
        assert driver.wait(timeout=60) == 130  # cancelled: the exit code the command line documents
    finally:
        driver.kill()
        driver.wait(timeout=30)
    assert max(r.received_s for r in server.records()) < interrupted_s + 2.0  # every worker stopped within 2 s
    engine = make_engine(database_url)
    (run_id,) = [row.id for row in list_runs(engine)]
    stored = get_run(engine, run_id)
    assert stored is not None and stored.status == RunStatus.CANCELLED
    in_flight = 4  # the level's concurrency: requests sent but not finished at the cancel are dropped
    assert len(server.records()) - in_flight <= len(stored.samples) <= len(server.records())


def _finished(probe: ProbeRun, worker: int) -> int:
    workers = probe.progress().workers
    return workers[worker].finished if len(workers) > worker else 0


def test_the_probe_page_spreads_its_run_and_shows_each_worker(
    cluster: str, server: FakeServer, database_url: str
) -> None:
    from tests.pages.apptest import finish_probe, open_page, open_result_tab
    from ui.resources import get_engine

    get_engine.clear()
    link = {"url": server.base_url, "model": "fake", "levels": "2", "requests": "6", "workers": "2"}
    at = open_page("probe", {**link, "ray_address": cluster})
    at.button(key="probe.start").click().run()
    assert not at.exception and not at.error
    finish_probe(at, timeout_s=240)
    assert not at.exception and not at.error
    at = open_result_tab(at, "Workers")
    table = next(df.value for df in at.dataframe if "Node" in df.value.columns)
    assert list(table["Worker"]) == [0, 1] and list(table["Requests"]) == [3, 3]
    engine = make_engine(database_url)
    run_id = at.session_state["_probe.last_run_id"]
    assert len(load_samples(engine, run_id)) == len(server.records()) == 6
