"""Two app processes on one PostgreSQL share saved scenarios (a team behind several replicas)."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.pg import create_database
from tests.support import running_app

pytestmark = pytest.mark.e2e


def _metric(page: object, label: str) -> str:
    card = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    card.wait_for(timeout=30_000)
    return card.locator('[data-testid="stMetricValue"]').inner_text().strip()


def test_a_scenario_saved_on_one_replica_opens_on_another(browser: object, postgres_base_url: str) -> None:
    url = create_database(postgres_base_url, "shared_replicas")
    with running_app(url) as first, running_app(url) as second:
        context = browser.new_context()
        page = context.new_page()
        page.goto(first + "/tco?price=30&tps=900&hours=720")
        cost = _metric(page, "Cost per request")
        assert cost == "0.0019 CNY"  # 30 CNY/h over 4.5 requests/s
        page.get_by_text("Saved scenarios", exact=True).click()
        page.get_by_label("Scenario name").fill("Shared <b>across</b> replicas")
        page.get_by_role("button", name="Save scenario").click()
        page.wait_for_url(re.compile(r"[?&]s=[a-z0-9]{6}"), timeout=30_000)
        short_id = parse_qs(urlsplit(page.url).query)["s"][0]
        context.close()

        other = browser.new_context()
        tab = other.new_page()
        tab.goto(second + f"/tco?s={short_id}")
        assert _metric(tab, "Cost per request") == cost
        alert = tab.locator('[data-testid="stAlert"]').filter(has_text="Shared <b>across</b> replicas")
        alert.first.wait_for(timeout=30_000)  # shown as typed, not as HTML
        assert tab.locator("b", has_text="across").count() == 0
        other.close()


def test_a_probe_run_on_one_replica_is_listed_and_opened_on_another(browser: object, postgres_base_url: str) -> None:
    from probes.fakeserver import Behaviour, serve_in_thread

    url = create_database(postgres_base_url, "shared_runs")
    with (
        serve_in_thread(defaults=Behaviour(ttft_ms=10, tpot_ms=2, tokens=8)) as fake,
        running_app(url) as first,
        running_app(url) as second,
    ):
        context = browser.new_context()
        tab = context.new_page()
        tab.goto(f"{first}/probe?url={fake.base_url}&model=fake&levels=1,2&requests=4&label=from-replica-one")
        tab.get_by_role("button", name="Start probe").click()
        tab.locator('[data-testid="stMetric"]').filter(has_text="Max concurrency in SLO").first.wait_for(timeout=60_000)
        tab.goto("about:blank")
        context.close()

        other = browser.new_context()
        runs = other.new_page()
        runs.goto(f"{second}/runs")
        runs.get_by_role("combobox", name="Open runs").click()
        runs.get_by_role("option").filter(has_text="from-replica-one").first.click()
        assert _metric(runs, "Max concurrency in SLO") == "2"
        runs.goto("about:blank")
        other.close()
