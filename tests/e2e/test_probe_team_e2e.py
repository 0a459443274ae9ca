"""The probe under team conditions, in real browsers: two probes at once while a third session browses /runs,
the API key kept out of every store, cancel + compare + export from /runs, and kill -9 in the middle of a probe."""

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from sqlalchemy import text

from db import init_db, list_runs, make_engine
from db.run_queries import load_samples
from fakeserver import Behaviour, FakeServer, serve_in_thread
from tests.e2e.helpers import (
    PROBE_MS,
    assert_no_traceback,
    download,
    new_context,
    open_expander,
    open_page,
    show_tab,
    shown_run_id,
    start_probe,
    wait_idle,
    wait_probe_done,
    wait_until,
)
from tests.support import APP_START_S, ROOT, free_port, running_app, wait_http

pytestmark = pytest.mark.e2e

KEY = "sk-team-KNOWN-7731"
LEVELS = (1, 2)
REQUESTS = 8


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    """A test server that refuses any request without the key (so a passing run proves the key was sent)."""
    with serve_in_thread(defaults=Behaviour(ttft_ms=30, tpot_ms=8, tokens=24), api_key=KEY) as server:
        yield server


def _start_probe(
    context: BrowserContext, base: str, fake: FakeServer, label: str, model: str = "fake", requests: int = REQUESTS
) -> Page:
    """A new tab in this context that has started a probe (with the key) and shows it running."""
    tab = context.new_page()
    levels = ",".join(map(str, LEVELS))
    start_probe(
        tab, f"{base}/probe?url={fake.base_url}&model={model}&levels={levels}&requests={requests}&label={label}", KEY
    )
    return tab


def _dump(url: str) -> str:
    engine = make_engine(url)
    with engine.connect() as connection:
        rows = []
        for table in ("scenarios", "probe_runs", "probe_levels", "probe_samples"):
            rows += [repr(tuple(r)) for r in connection.execute(text(f"SELECT * FROM {table}"))]
    engine.dispose()
    return "\n".join(rows)


def test_two_probes_at_once_while_a_third_session_browses_runs(
    browser: object, fake: FakeServer, tmp_path: Path
) -> None:
    db_url = f"sqlite:///{tmp_path / 'team.db'}"
    log = tmp_path / "app.log"
    urls: list[str] = []
    engine = make_engine(db_url)
    with running_app(db_url, log_path=log) as base:
        first, second, third = (new_context(browser) for _ in range(3))
        tab_a = _start_probe(first, base, fake, "probe-A")
        tab_b = _start_probe(second, base, fake, "probe-B")
        browsing = third.new_page()

        def both_stored() -> bool:
            return sum(row.status == "completed" for row in list_runs(engine)) == 2

        reads = 0
        deadline = time.monotonic() + PROBE_MS / 1000
        while reads < 4 or not both_stored():  # a third person reads /runs until both probes have written it all
            assert time.monotonic() < deadline, "the two probes did not both finish"
            open_page(browsing, f"{base}/runs", "Probe runs")
            assert_no_traceback(browsing)
            urls.append(browsing.url)
            reads += 1
        wait_probe_done(tab_a)
        wait_probe_done(tab_b)
        urls += [tab_a.url, tab_b.url]
        # Export the first run as a person would, then search the files for the key.
        exports = []
        for button in ("Download JSON", "Download levels CSV", "Download requests CSV"):
            saved = download(tab_a, tab_a.get_by_role("button", name=button), tmp_path)
            exports.append(saved.read_text(encoding="utf-8"))
        open_page(browsing, f"{base}/runs", "Probe runs")
        expect(browsing.locator('[data-testid="stMarkdownContainer"] table tbody tr').first).to_be_visible()
        assert_no_traceback(browsing)
        engine.dispose()
        for context in (first, second, third):
            for tab in context.pages:
                tab.goto("about:blank")
            context.close()

    engine = make_engine(db_url)
    runs = {row.label: row for row in list_runs(engine)}
    assert set(runs) == {"probe-A", "probe-B"}
    expected = REQUESTS * len(LEVELS)
    for row in runs.values():
        assert row.status == "completed"
        samples = load_samples(engine, row.id)
        keys = [(s.level_index, s.index) for s in samples]
        assert len(samples) == expected, "a sample was lost or duplicated"
        assert len(set(keys)) == expected
        assert all(s.ok for s in samples), "the server refused a request: the key was not sent"
    # Every request the server answered is a stored sample (no preflight or check counted twice).
    answered = [r for r in fake.records() if r.done_s is not None]
    assert len(answered) == 2 * expected
    stored_ids = {s.server_request_id for row in runs.values() for s in load_samples(engine, row.id)}
    assert stored_ids == {r.request_id for r in answered}
    # The key is nowhere: database, links, the app's log, the exports.
    logged = log.read_text(encoding="utf-8", errors="replace")
    assert "database is locked" not in logged
    assert KEY not in _dump(db_url)
    assert all(KEY not in u for u in urls)
    assert KEY not in logged
    assert exports and all(KEY not in e for e in exports)
    exported = json.loads(exports[0])
    assert len(exported["samples"]) == expected
    rows = list(csv.DictReader(io.StringIO(exports[2])))
    assert len(rows) == expected and "ttft_ms" in rows[0]


def test_cancel_one_then_compare_and_export_both_from_runs(
    page: object, app_url: str, fake: FakeServer, tmp_path: Path
) -> None:
    done = _start_probe(page.context, app_url, fake, "finished-run")
    wait_probe_done(done)
    done_id = shown_run_id(done)
    slow = _start_probe(page.context, app_url, fake, "cancelled-run", model="fake:ttft_ms=30,tpot_ms=60,tokens=30")
    # Cancel once some requests of the first level are done (so it has something to keep).
    level_bar = slow.locator('[data-testid="stProgress"]').filter(has_text="This level").first
    expect(level_bar).to_contain_text(re.compile(r"This level: [2-7] of"), timeout=PROBE_MS)
    slow.get_by_role("button", name="Cancel probe").click()
    expect(slow.locator('[data-testid="stAlert"]').filter(has_text="cancelled").first).to_be_visible(timeout=PROBE_MS)
    wait_idle(slow)
    cancelled_id = shown_run_id(slow)
    done.goto("about:blank")
    slow.goto("about:blank")

    open_page(page, f"{app_url}/runs?runs={done_id},{cancelled_id}", "Comparing 2 runs")
    show_tab(page, "Latency")
    legend = page.locator(".js-plotly-plot").first
    expect(legend).to_contain_text("finished-run")
    expect(legend).to_contain_text("cancelled-run")
    # Export both, from their expanders, and read the files back.
    counts = {}
    for label, run_id in (("finished-run", done_id), ("cancelled-run", cancelled_id)):
        section = open_expander(page, label)
        path = download(page, section.get_by_role("button", name="Download JSON"), tmp_path, f"{label}.json")
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["run_id"] == run_id
        counts[label] = (data["status"], len(data["samples"]))
        path = download(page, section.get_by_role("button", name="Download requests CSV"), tmp_path, f"{label}.csv")
        assert len(list(csv.DictReader(path.open(encoding="utf-8")))) == len(data["samples"])
    assert counts["finished-run"] == ("completed", REQUESTS * len(LEVELS))
    status, kept = counts["cancelled-run"]
    assert status == "cancelled" and 0 < kept < REQUESTS * len(LEVELS)


def test_kill_9_in_the_middle_of_a_probe_keeps_every_finished_request(
    browser: object, fake: FakeServer, tmp_path: Path
) -> None:
    db_url = f"sqlite:///{tmp_path / 'crash.db'}"
    engine = make_engine(db_url)
    init_db(engine)
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
    ]
    env = {**os.environ, "DATABASE_URL": db_url}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    context = new_context(browser)
    try:
        wait_http(f"{base}/_stcore/health", timeout_s=APP_START_S, proc=proc)
        # 0.5 s per request, 2 x 12 requests: the kill lands in the middle.
        _start_probe(context, base, fake, "doomed", model="fake:ttft_ms=20,tpot_ms=20,tokens=24", requests=12)

        def five_stored() -> bool:
            runs = list_runs(engine)
            return bool(runs) and len(load_samples(engine, runs[0].id)) >= 5

        wait_until(five_stored, "five requests of the probe stored", PROBE_MS)
        # The probe runs in a process of its own, which records the run (its owner). A crash takes both down; an app
        # killed alone would let the probe's process cancel the run cleanly (tests/probes/test_process_run.py).
        with engine.connect() as conn:
            (owner,) = conn.execute(text("SELECT owner FROM probe_runs")).scalars().all()
        probe_pid = int(owner.split(":")[1])
        assert probe_pid != proc.pid
        os.kill(proc.pid, signal.SIGKILL)
        os.kill(probe_pid, signal.SIGKILL)
        killed_at = time.perf_counter()
        proc.wait(10)
    finally:
        for tab in context.pages:
            tab.goto("about:blank")
        context.close()
        if proc.poll() is None:
            proc.kill()
    (row,) = list_runs(engine)
    assert row.status == "running"  # nobody has looked yet
    with running_app(db_url) as restarted:
        tab = new_context(browser).new_page()
        tab.goto(f"{restarted}/runs?runs={row.id}")
        expect(tab.get_by_text("interrupted").first).to_be_visible()
        tab.goto("about:blank")
        tab.context.close()
    (row,) = list_runs(engine)
    assert row.status == "interrupted"
    stored = {s.server_request_id for s in load_samples(engine, row.id)}
    finished_well_before = {r.request_id for r in fake.records() if r.done_s is not None and r.done_s < killed_at - 0.2}
    assert len(finished_well_before) >= 3
    assert finished_well_before <= stored, "a request that had finished before the kill is missing"
