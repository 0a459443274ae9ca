"""The engine advisor in a real browser: a shared link opens the same advice, read off the page."""

import pytest

pytestmark = pytest.mark.e2e

LINK = "/selector?gpu=H100&workload=rag&priority=latency&concurrency=32"


def metric_value(page: object, label: str) -> str:
    card = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    card.wait_for(timeout=30_000)
    return card.locator('[data-testid="stMetricValue"]').inner_text().strip()


def test_link_opens_the_advice_with_engine_and_launch_command(page: object, app_url: str) -> None:
    page.goto(app_url + LINK)
    assert metric_value(page, "Engine") == "SGLang"
    assert metric_value(page, "KV cache") == "fp8"
    page.get_by_role("tab", name="Launch command").click()
    code = page.locator('[data-testid="stCode"]').first
    code.wait_for(timeout=30_000)
    assert "sglang.launch_server" in code.inner_text()
    assert page.get_by_role("link", name="Price this").count() == 1
    assert page.locator('[data-testid="stException"]').count() == 0
