"""The live probe in a real browser: a link to a local test server, Start, live progress, the chart, the JSON
export, and the run in /runs."""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from fakeserver import Behaviour, FakeServer, serve_in_thread
from tests.conftest import ARTIFACTS
from tests.e2e.helpers import (
    MAX_IN_SLO,
    assert_no_traceback,
    download,
    metric,
    show_tab,
    shown_run_id,
    start_probe,
    wait_probe_done,
    wait_until,
)

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-SECRET-0042"
# Seen together in one look at the page while the worker runs: the level, a progress bar and the Cancel button.
LIVE_PROGRESS = """() => {
    const status = [...document.querySelectorAll('[data-testid="stExpander"]')]
        .find(el => el.innerText.includes('Probing'));
    return Boolean(status && /Level \\d of 3: concurrency \\d/.test(status.innerText)
        && status.querySelector('[data-testid="stProgress"]')
        && [...document.querySelectorAll('button')].some(b => b.innerText.includes('Cancel probe')));
}"""


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    # About 0.45 s per request (18 of them, about 5 s of levels), quick for a test.
    with serve_in_thread(defaults=Behaviour(ttft_ms=50, tpot_ms=10, tokens=40), max_running=None) as server:
        yield server


def test_a_small_probe_from_the_page_shows_progress_and_the_chart(
    page: object, app_url: str, fake: FakeServer, tmp_path: Path
) -> None:
    # The server holds the first level's requests until the page has shown them in flight: on a busy machine the
    # page may draw later than the levels take, and the progress must be seen while the worker runs.
    fake.hold()
    start_probe(page, f"{app_url}/probe?url={fake.base_url}&model=fake&levels=1,2,4&requests=6&label=e2e-run", KEY)
    page.wait_for_function(LIVE_PROGRESS)  # live progress while the worker runs
    fake.release()
    # Then the results: figures, the charts (the latency one with its two TTFT targets) and "Cost this".
    wait_probe_done(page)
    expect(metric(page, MAX_IN_SLO)).to_have_text("4")
    show_tab(page, "Latency")  # the levels table opens first; a chart runs once its tab is opened
    chart = page.locator(".js-plotly-plot").first
    expect(chart).to_contain_text("SLO TTFT")
    wait_until(lambda: chart.inner_text().count("SLO TTFT") == 2, "the latency chart shows the two TTFT targets")
    expect(page.get_by_role("link", name="Cost this")).to_have_count(1)
    assert_no_traceback(page)
    assert KEY not in page.url
    page.screenshot(path=str(ARTIFACTS / "probe_result.png"), full_page=False)
    # The JSON export is the run, without the key.
    saved = download(page, page.get_by_role("button", name="Download JSON"), tmp_path)
    exported = json.loads(saved.read_text(encoding="utf-8"))
    assert exported["run_id"] == shown_run_id(page)
    assert exported["status"] == "completed" and len(exported["samples"]) == 18
    assert KEY not in saved.read_text(encoding="utf-8")
    # The run is kept and opens in /runs.
    page.get_by_role("link", name="Open in Probe runs").click()
    page.wait_for_url(re.compile(r"/runs\?runs=" + exported["run_id"]))
    expect(page.get_by_role("heading", name="e2e-run")).to_be_visible()
    expect(metric(page, MAX_IN_SLO)).to_have_text("4")
    assert_no_traceback(page)
