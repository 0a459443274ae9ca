"""The engine advisor in a real browser: a shared link opens the same advice, read off the page."""

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.helpers import assert_no_traceback, metric

pytestmark = pytest.mark.e2e

LINK = "/selector?gpu=H100&workload=rag&priority=latency&concurrency=32"


def test_link_opens_the_advice_with_engine_and_launch_command(page: Page, app_url: str) -> None:
    page.goto(app_url + LINK)
    expect(metric(page, "Engine")).to_have_text("SGLang")
    expect(metric(page, "KV cache")).to_have_text("fp8")
    page.get_by_role("tab", name="Launch command").click()
    expect(page.locator('[data-testid="stCode"]').first).to_contain_text("sglang.launch_server")
    expect(page.get_by_role("link", name="Price this")).to_have_count(1)
    assert_no_traceback(page)
