"""Trace replay in a real browser: choose the workload, upload a small Mooncake trace, Start, and read the result
(the requests, the send lag, the timeline), then find the run in /runs."""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from fakeserver import Behaviour, FakeServer, serve_in_thread
from tests.e2e.helpers import (
    assert_no_traceback,
    choose,
    combobox,
    metric,
    number_field,
    open_page,
    show_tab,
    shown_run_id,
    type_into,
    wait_for_query,
    wait_probe_done,
    wait_uploaded,
)

pytestmark = pytest.mark.e2e

TRACE_LABEL = "Trace replay (arrival times and lengths)"
UPLOADER = "Trace file (used when no built-in trace is picked)"
TIMELINE = "Trace replay: TTFT and E2E of each request over time"
OFFSETS_MS = (0, 50, 120, 200, 260, 330, 400, 480)  # eight requests over half a second of trace time
SPEED = 2  # replayed in about a quarter of a second


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=2, tokens=8), max_running=None) as server:
        yield server


def mooncake(path: Path) -> Path:
    lines = [
        json.dumps({"timestamp": 1_700_000 + t, "input_length": 600, "output_length": 4, "hash_ids": [0, i % 2]})
        for i, t in enumerate(OFFSETS_MS)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_trace_uploaded_on_the_page_is_replayed_and_its_run_is_kept(
    page: Page, app_url: str, fake: FakeServer, tmp_path: Path
) -> None:
    open_page(page, f"{app_url}/probe?url={fake.base_url}&model=fake&label=e2e-trace", "Start probe")
    choose(page, "Workload", TRACE_LABEL)
    wait_for_query(page, {"workload": "trace"})
    # The trace's own fields: upload the file (no built-in trace picked), then the speed.
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text=UPLOADER)
    uploader.locator('input[type="file"]').set_input_files(str(mooncake(tmp_path / "small-trace.jsonl")))
    wait_uploaded(uploader, "small-trace.jsonl")
    type_into(number_field(page, "Trace speed"), SPEED)
    wait_for_query(page, {"trace_speed": str(SPEED)})
    page.get_by_role("button", name="Start probe").click()
    # The result, once the replay is over: its requests, the send lag and the timeline of the requests.
    wait_probe_done(page)
    run_id = shown_run_id(page)
    requests = len(OFFSETS_MS)
    expect(page.get_by_text(f"{requests} requests, 0 failed")).to_be_visible()
    show_tab(page, "Timeline")  # the replay's own figures and timeline have a tab of their own
    expect(metric(page, "Requests replayed")).to_have_text(str(requests))
    for name in ("Send lag p50", "Send lag p99"):
        expect(metric(page, name)).to_have_text(re.compile(r"^-?[\d,]+\.\d ms$"))
    timeline = page.locator(".js-plotly-plot").filter(has_text=TIMELINE)
    expect(timeline).to_be_visible()
    expect(timeline.locator(".scatterlayer .point")).to_have_count(2 * requests)  # each request's TTFT and E2E
    assert_no_traceback(page)
    assert len(fake.records()) == requests + 2  # the replay's requests and the two that calibrate the prompts
    # The run is in the list of /runs, and opens there with its timeline.
    page.goto(f"{app_url}/runs")
    runs = combobox(page, "Open runs")
    expect(runs).to_be_visible()
    runs.click()
    option = page.get_by_role("option").filter(has_text=re.compile(rf"^e2e-trace · .* · completed · {run_id[:8]}$"))
    expect(option).to_have_count(1)
    option.click()
    wait_for_query(page, {"runs": run_id})
    page.keyboard.press("Escape")  # close the list of runs
    show_tab(page, "Timeline")
    expect(page.locator(".js-plotly-plot").filter(has_text=TIMELINE)).to_be_visible()
    assert_no_traceback(page)
