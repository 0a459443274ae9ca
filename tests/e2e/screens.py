"""Screenshots for the README: kept under tests/e2e/artifacts/, copied to docs/screenshots/ on request."""

import os
import shutil

from playwright.sync_api import Page, expect

from tests.e2e.helpers import wait_idle
from tests.support import ROOT

ARTIFACTS = ROOT / "tests" / "e2e" / "artifacts"
DOCS = ROOT / "docs" / "screenshots"
SKELETON = '[data-testid="stSkeleton"], [data-testid="stSkeletonElement"]'  # a widget still loading its code
RUNNING = '[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]'  # "Running..."


def wait_drawn(page: Page) -> None:
    """Wait until the page is whole: its run over, no widget still a grey placeholder, its fonts loaded.

    The README's pictures once showed the sidebar's widgets as loading placeholders: a run can be over while the
    browser still fetches a widget's code, so each of these is waited for (a state, never a time)."""
    wait_idle(page)
    expect(page.locator(SKELETON)).to_have_count(0)
    expect(page.locator(RUNNING)).to_have_count(0)
    page.wait_for_function("document.fonts.status === 'loaded'")
    page.evaluate("document.fonts.ready.then(() => true)")


def keep_screenshot(page: Page, name: str) -> None:
    """Save what the page shows once it is whole; with UPDATE_SCREENSHOTS=1 also refresh the README's copy.

    CSS animations and transitions are finished first (the tab indicator, a hover fade), so the picture shows the
    settled page without waiting for any time."""
    wait_drawn(page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=False, animations="disabled", caret="hide")
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copy(ARTIFACTS / name, DOCS / name)
