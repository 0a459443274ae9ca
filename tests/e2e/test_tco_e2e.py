"""The cost calculator in a real browser: the handbook link reads 0.0014 CNY per request."""

import pytest

from tests.e2e.screens import keep_screenshot

pytestmark = pytest.mark.e2e

HANDBOOK_LINK = "/tco?price=15&currency=CNY&tps=588&out_tokens=200&hours=720"


def metric_value(page: object, label: str) -> str:
    card = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    card.wait_for(timeout=30_000)
    return card.locator('[data-testid="stMetricValue"]').inner_text().strip()


def test_handbook_link_reads_the_handbook_cost(page: object, app_url: str) -> None:
    page.goto(app_url + HANDBOOK_LINK)
    assert metric_value(page, "Cost per request") == "0.0014 CNY"
    assert metric_value(page, "Requests/s per replica") == "2.94"
    assert metric_value(page, "Per replica per month") == "10,800 CNY"
    assert page.locator('[data-testid="stException"]').count() == 0


def test_readme_screenshot_of_the_cost_page(page: object, app_url: str) -> None:
    """The README's screenshot comes from here (written to docs/ with UPDATE_SCREENSHOTS=1, `make screenshots`)."""
    page.goto(app_url + HANDBOOK_LINK + "&traffic=1000000")
    assert metric_value(page, "Optimized cost per request") == "0.00017 CNY"
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    keep_screenshot(page, "tco.png")
