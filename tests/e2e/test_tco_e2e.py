"""The cost calculator in a real browser: the handbook link reads 0.0014 CNY per request."""

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.helpers import assert_no_traceback, metric, scroll_to_top, wait_idle
from tests.e2e.screens import keep_screenshot

pytestmark = pytest.mark.e2e

HANDBOOK_LINK = "/tco?price=15&currency=CNY&tps=588&out_tokens=200&hours=720"


def test_handbook_link_reads_the_handbook_cost(page: Page, app_url: str) -> None:
    page.goto(app_url + HANDBOOK_LINK)
    expect(metric(page, "Cost per request")).to_have_text("0.0014 CNY")
    expect(metric(page, "Requests/s per replica")).to_have_text("2.94")
    expect(metric(page, "Per replica per month")).to_have_text("10,800 CNY")
    assert_no_traceback(page)


def test_readme_screenshot_of_the_cost_page(page: Page, app_url: str) -> None:
    """The README's screenshot comes from here (written to docs/ with UPDATE_SCREENSHOTS=1, `make screenshots`)."""
    page.goto(app_url + HANDBOOK_LINK + "&traffic=1000000")
    expect(metric(page, "Optimized cost per request")).to_have_text("0.00017 CNY")
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    wait_idle(page)
    scroll_to_top(page)
    keep_screenshot(page, "tco.png")
