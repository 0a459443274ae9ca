"""Two app processes on one PostgreSQL share saved scenarios (a team behind several replicas)."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.helpers import (
    MAX_IN_SLO,
    choose,
    metric,
    new_context,
    open_expander,
    open_page,
    start_probe,
    text_field,
    type_into,
    wait_for_url,
    wait_probe_done,
)
from tests.pg import create_database
from tests.support import running_app

pytestmark = pytest.mark.e2e


def test_a_scenario_saved_on_one_replica_opens_on_another(browser: Browser, postgres_base_url: str) -> None:
    url = create_database(postgres_base_url, "shared_replicas")
    with running_app(url) as first, running_app(url) as second:
        context = new_context(browser)
        page = context.new_page()
        open_page(page, first + "/tco?price=30&tps=900&hours=720", "Cost per request")
        expect(metric(page, "Cost per request")).to_have_text("0.0019 CNY")  # 30 CNY/h over 4.5 requests/s
        open_expander(page, "Saved scenarios")
        type_into(text_field(page, "Scenario name"), "Shared <b>across</b> replicas", key="Tab")
        page.get_by_role("button", name="Save scenario").click()
        wait_for_url(page, lambda link: re.search(r"[?&]s=[a-z0-9]{6}\b", link) is not None)
        short_id = parse_qs(urlsplit(page.url).query)["s"][0]
        page.goto("about:blank")
        context.close()

        other = new_context(browser)
        tab = other.new_page()
        open_page(tab, second + f"/tco?s={short_id}", "Cost per request")
        expect(metric(tab, "Cost per request")).to_have_text("0.0019 CNY")
        alert = tab.locator('[data-testid="stAlert"]').filter(has_text="Shared <b>across</b> replicas")
        expect(alert.first).to_be_visible()  # shown as typed, not as HTML
        expect(tab.locator("b", has_text="across")).to_have_count(0)
        tab.goto("about:blank")
        other.close()


def test_a_probe_run_on_one_replica_is_listed_and_opened_on_another(browser: Browser, postgres_base_url: str) -> None:
    from fakeserver import Behaviour, serve_in_thread

    url = create_database(postgres_base_url, "shared_runs")
    with (
        serve_in_thread(defaults=Behaviour(ttft_ms=10, tpot_ms=2, tokens=8)) as fake,
        running_app(url) as first,
        running_app(url) as second,
    ):
        context = new_context(browser)
        tab = context.new_page()
        start_probe(tab, f"{first}/probe?url={fake.base_url}&model=fake&levels=1,2&requests=4&label=from-replica-one")
        wait_probe_done(tab)
        tab.goto("about:blank")
        context.close()

        other = new_context(browser)
        runs = other.new_page()
        open_page(runs, f"{second}/runs", "Open runs")
        choose(runs, "Open runs", re.compile(r"^from-replica-one · "))
        expect(metric(runs, MAX_IN_SLO)).to_have_text("2")
        runs.goto("about:blank")
        other.close()
