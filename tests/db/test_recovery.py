"""kill -9 in the middle of a probe: the run is marked interrupted on the next start, its samples kept."""

import os
import signal
import subprocess
import sys
import time

from db import get_run, init_db, list_runs, make_engine, recover_orphaned_runs
from db.runs import load_samples
from probes.fakeserver import serve_in_thread
from tests.support import ROOT


def test_killed_probe_process_is_marked_interrupted_with_its_samples(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    engine = make_engine(url)
    init_db(engine)
    with serve_in_thread() as server:
        # 40 requests of ~0.3 s each at concurrency 2: about 6 s in all; killed after some have finished.
        cmd = [
            sys.executable,
            "-m",
            "probes",
            "--base-url",
            server.base_url,
            "--model",
            "fake:ttft_ms=20,tpot_ms=10,tokens=30",
            "--concurrency",
            "2",
            "--requests",
            "40",
            "--max-tokens",
            "30",
            "--output",
            str(tmp_path / "run.json"),
        ]
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env={**os.environ, "DATABASE_URL": url}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 30
        run_id = None
        while time.monotonic() < deadline:
            runs = list_runs(engine)
            if runs and len(load_samples(engine, runs[0].id)) >= 5:
                run_id = runs[0].id
                break
            time.sleep(0.1)
        assert run_id is not None, "the probe stored no samples"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    stored_before = len(load_samples(engine, run_id))
    assert list_runs(engine)[0].status == "running"  # nobody has noticed yet
    assert recover_orphaned_runs(engine) == 1  # what the app does on start
    run = list_runs(engine)[0]
    assert run.status == "interrupted" and "stopped" in (run.error or "")
    result = get_run(engine, run_id)
    assert len(result.samples) == stored_before >= 5
    assert all(s.ok for s in result.samples)
    assert recover_orphaned_runs(engine) == 0


def test_a_live_probe_is_not_marked_interrupted(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    engine = make_engine(url)
    init_db(engine)
    with serve_in_thread() as server:
        cmd = [
            sys.executable,
            "-m",
            "probes",
            "--base-url",
            server.base_url,
            "--model",
            "fake:ttft_ms=20,tpot_ms=20,tokens=40",
            "--concurrency",
            "1",
            "--requests",
            "30",
            "--max-tokens",
            "40",
            "--output",
            str(tmp_path / "run.json"),
        ]
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env={**os.environ, "DATABASE_URL": url}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not list_runs(engine):
                time.sleep(0.1)
            assert recover_orphaned_runs(engine) == 0
            assert list_runs(engine)[0].status == "running"
        finally:
            proc.kill()
            proc.wait(10)
