"""The live probe in a real browser: a link to a local test server, Start, live progress, the chart, the JSON
export, and the run in /runs."""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from probes.fakeserver import Behaviour, FakeServer, serve_in_thread
from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-SECRET-0042"


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    # About 0.25 s per request: slow enough to watch the progress, quick enough for a test.
    with serve_in_thread(defaults=Behaviour(ttft_ms=50, tpot_ms=10, tokens=20), max_running=None) as server:
        yield server


def metric_value(page: object, label: str) -> str:
    card = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    card.wait_for(timeout=30_000)
    return card.locator('[data-testid="stMetricValue"]').inner_text().strip()


def test_a_small_probe_from_the_page_shows_progress_and_the_chart(
    page: object, app_url: str, fake: FakeServer, tmp_path: Path
) -> None:
    page.goto(f"{app_url}/probe?url={fake.base_url}&model=fake&levels=1,2,4&requests=6&label=e2e-run")
    key_box = page.get_by_role("textbox", name="API key")
    key_box.fill(KEY)
    key_box.press("Enter")
    page.get_by_role("button", name="Start probe").click()
    # Live progress while the worker runs.
    status = page.locator('[data-testid="stExpander"]').filter(has_text="Probing")
    expect(status).to_contain_text(re.compile(r"Level \d of 3: concurrency \d"), timeout=30_000)
    expect(page.locator('[data-testid="stProgress"]').first).to_be_visible()
    page.get_by_role("button", name="Cancel probe").wait_for(timeout=10_000)
    # Then the results: figures and the charts.
    assert metric_value(page, "Max concurrency in SLO") == "4"
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    assert page.locator(".js-plotly-plot").first.inner_text().count("SLO TTFT") == 2
    assert page.get_by_role("link", name="Cost this").count() == 1
    assert page.locator('[data-testid="stException"]').count() == 0
    assert KEY not in page.url
    page.screenshot(path=str(ARTIFACTS / "probe_result.png"), full_page=False)
    # The JSON export is the run, without the key.
    with page.expect_download() as download:
        page.get_by_role("button", name="Download JSON").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    exported = json.loads(saved.read_text(encoding="utf-8"))
    assert exported["status"] == "completed" and len(exported["samples"]) == 18
    assert KEY not in saved.read_text(encoding="utf-8")
    # The run is kept and opens in /runs.
    page.get_by_role("link", name="Open in Probe runs").click()
    page.wait_for_url(re.compile(r"/runs\?runs=" + exported["run_id"]))
    assert metric_value(page, "Max concurrency in SLO") == "4"
    assert page.get_by_text("e2e-run").first.is_visible()
    assert page.locator('[data-testid="stException"]').count() == 0
