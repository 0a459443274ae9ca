"""A shared link opened first on a fresh server goes through the router: page config, sidebar, its inputs."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.helpers import metric
from tests.support import running_app

pytestmark = pytest.mark.e2e


def test_first_request_of_a_fresh_server_on_a_page_link_gets_the_router(page: Page, tmp_path: Path) -> None:
    with running_app(f"sqlite:///{tmp_path / 'fresh.db'}") as base:
        page.goto(base + "/tco?tps=700&hours=720")
        sidebar = page.locator('[data-testid="stSidebar"]')
        expect(sidebar.get_by_text("Cost calculator").first).to_be_visible()
        expect(sidebar.get_by_text("Database:").first).to_be_visible()
        expect(metric(page, "Requests/s per replica")).to_have_text("3.50")
        expect(page).to_have_title("Cost calculator")
        expect(page).to_have_url(re.compile(r"[?&]tps=700\b"))
        page.goto("about:blank")  # leave before this test's server stops, or the page logs its reconnects
