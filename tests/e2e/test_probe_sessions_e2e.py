"""Multi-turn sessions in a real browser: 8 sessions of 4 turns from /probe, the figures by turn, the run compared on
/runs with another, and "Cost this" carrying the measured throughput to the cost calculator."""

import re
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from fakeserver import Behaviour, FakeServer, serve_in_thread
from tests.e2e.helpers import (
    PROBE_MS,
    assert_no_traceback,
    metric,
    number_field,
    query,
    show_tab,
    shown_run_id,
    start_probe,
    wait_for_query,
    wait_idle,
    wait_probe_done,
)

pytestmark = pytest.mark.e2e

TURNS_TITLE = "Sessions: time to first token by turn, as the history grows"


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=2, tokens=8), max_running=None) as server:
        yield server


def test_sessions_run_from_the_page_are_shown_by_turn_compared_on_runs_and_costed(
    page: Page, app_url: str, fake: FakeServer
) -> None:
    link = {"url": fake.base_url, "model": "fake", "workload": "sessions", "sessions": "8", "turns": "4"}
    start_probe(page, f"{app_url}/probe?{urlencode({**link, 'label': 'e2e-sessions'})}")
    wait_probe_done(page)
    first = shown_run_id(page)
    expect(page.get_by_text("32 requests, 0 failed")).to_be_visible()
    expect(metric(page, "SLO")).to_have_text("met")
    show_tab(page, "By turn")
    expect(page.locator(".js-plotly-plot").filter(has_text=TURNS_TITLE)).to_be_visible()
    expect(page.get_by_text(re.compile(r"prefix-cache hit ratio over the level: \d+%"))).to_be_visible()
    assert_no_traceback(page)

    # A second run (the agent kind), then both compared on /runs.
    start_probe(page, f"{app_url}/probe?{urlencode({**link, 'session_variant': 'agent', 'label': 'e2e-agent'})}")
    expect(page.get_by_text(re.compile(r"^Run (?!" + first + r")[0-9a-f]{32}\b"))).to_be_visible(timeout=PROBE_MS)
    wait_probe_done(page)
    second = shown_run_id(page)
    page.goto(f"{app_url}/runs?{urlencode({'runs': f'{first},{second}'})}")
    wait_idle(page)
    show_tab(page, "Latency")
    expect(page.locator(".js-plotly-plot").first).to_be_visible()  # the runs overlaid on the same charts
    for label in ("e2e-sessions", "e2e-agent"):  # and each in its own expander below
        expect(page.locator('[data-testid="stExpander"]').filter(has_text=label)).to_have_count(1)
    assert_no_traceback(page)

    # One run opened: its figures by turn, and "Cost this" carries its throughput to the cost calculator.
    page.goto(f"{app_url}/runs?runs={first}")
    wait_idle(page)
    show_tab(page, "By turn")
    expect(page.locator(".js-plotly-plot").filter(has_text=TURNS_TITLE)).to_be_visible()
    page.get_by_role("link", name="Cost this").click()
    page.wait_for_url(re.compile(r"/tco\?"))
    wait_for_query(page, {"out_tokens": "8"})
    carried = query(page.url)
    assert set(carried) >= {"tps", "out_tokens"}, carried
    expect(number_field(page, "Throughput per replica (output tokens/s)")).to_have_value(carried["tps"])
    assert_no_traceback(page)
