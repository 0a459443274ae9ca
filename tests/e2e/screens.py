"""Screenshots for the README: kept under tests/e2e/artifacts/, copied to docs/screenshots/ on request."""

import os
import shutil

from playwright.sync_api import Page

from tests.support import ROOT

ARTIFACTS = ROOT / "tests" / "e2e" / "artifacts"
DOCS = ROOT / "docs" / "screenshots"


def keep_screenshot(page: Page, name: str) -> None:
    """Save what the page shows now; with UPDATE_SCREENSHOTS=1 also refresh the README's copy.

    CSS animations and transitions are finished first (the tab indicator, a hover fade), so the picture shows the
    settled page without waiting for any time."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=False, animations="disabled", caret="hide")
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copy(ARTIFACTS / name, DOCS / name)
