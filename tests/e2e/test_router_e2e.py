"""A shared link opened first on a fresh server goes through the router: page config, sidebar, its inputs."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.helpers import assert_no_traceback, metric, open_expander, open_page
from tests.support import running_app

pytestmark = pytest.mark.e2e


def test_first_request_of_a_fresh_server_on_a_page_link_gets_the_router(page: Page, tmp_path: Path) -> None:
    with running_app(f"sqlite:///{tmp_path / 'fresh.db'}") as base:
        page.goto(base + "/tco?tps=700&hours=720")
        sidebar = page.locator('[data-testid="stSidebar"]')
        expect(sidebar.get_by_text("Cost calculator").first).to_be_visible()
        expect(metric(page, "Requests/s per replica")).to_have_text("3.50")
        expect(page).to_have_title("Cost calculator")
        expect(page).to_have_url(re.compile(r"[?&]tps=700\b"))
        page.goto("about:blank")  # leave before this test's server stops, or the page logs its reconnects


def test_the_database_url_is_in_the_overviews_settings_not_in_every_sidebar(page: Page, tmp_path: Path) -> None:
    with running_app(f"sqlite:///{tmp_path / 'about.db'}") as base:
        open_page(page, base + "/tco?tps=700", "Cost calculator")
        expect(page.locator('[data-testid="stSidebar"]').get_by_text("English", exact=True)).to_be_visible()
        expect(page.get_by_text("Database:")).to_have_count(0)
        open_page(page, base + "/", "About this app")
        settings = open_expander(page, "Settings")
        expect(settings.get_by_text("Database:")).to_be_visible()
        expect(settings.get_by_text("about.db")).to_be_visible()
        page.goto("about:blank")


def test_home_opens_the_overview_without_a_page_not_found_dialog(page: Page, app_url: str) -> None:
    """/home was the overview's address: it leads there, in the link's language, with no English dialog on the way."""
    open_page(page, app_url + "/home?lang=zh", "LLM 推理部署决策")
    expect(page).to_have_url(re.compile(r"^[^?]*/\?lang=zh$"))
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    assert_no_traceback(page)
