"""A shared link opened first on a fresh server goes through the router: page config, sidebar, its inputs."""

import pytest

from tests.support import running_app

pytestmark = pytest.mark.e2e


def test_first_request_of_a_fresh_server_on_a_page_link_gets_the_router(page: object, tmp_path) -> None:
    with running_app(f"sqlite:///{tmp_path / 'fresh.db'}") as base:
        page.goto(base + "/tco?tps=700&hours=720")
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_text("Cost calculator").first.wait_for(timeout=30_000)
        sidebar.get_by_text("Database:").first.wait_for(timeout=30_000)
        card = page.locator('[data-testid="stMetric"]').filter(has_text="Requests/s per replica").first
        assert card.locator('[data-testid="stMetricValue"]').inner_text() == "3.50"
        assert page.title() == "Cost calculator"
        assert "tps=700" in page.url
        page.goto("about:blank")  # leave before this test's server stops, or the page logs its reconnects
