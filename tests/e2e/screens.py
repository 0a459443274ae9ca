"""Screenshots for the README: kept under tests/e2e/artifacts/, copied to docs/screenshots/ on request."""

import os
import shutil

from tests.support import ROOT

ARTIFACTS = ROOT / "tests" / "e2e" / "artifacts"
DOCS = ROOT / "docs" / "screenshots"


def keep_screenshot(page: object, name: str) -> None:
    """Save what the page shows now; with UPDATE_SCREENSHOTS=1 also refresh the README's copy."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=False)
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copy(ARTIFACTS / name, DOCS / name)
