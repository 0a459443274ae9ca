"""Metric cards in a real browser, in English and Chinese: no figure and no label is cut short with an ellipsis.

Streamlit draws a metric's value and label on one line and hides what does not fit; a figure that reads '147.82M C…'
or '0.576 千…' has lost its unit. The pages are opened with large traffic, where the figures are longest.
"""

import pytest
from playwright.sync_api import Page, expect

from i18n import translate
from tests.e2e.helpers import assert_no_traceback, metric

pytestmark = pytest.mark.e2e

# (path, a card's label that shows the page has drawn the cards checked)
PAGES = [
    ("/tco?traffic=100000000", "Self-hosting cheaper from (tokens/month)"),
    ("/tco?lang=zh&traffic=100000000", "Self-hosting cheaper from (tokens/month)"),
    ("/compare", "Self-hosting cheaper from (tokens/month)"),
    ("/compare?lang=zh", "Self-hosting cheaper from (tokens/month)"),
    ("/selector", "KV cache"),
    ("/selector?lang=zh", "KV cache"),
    ("/selector?gpu=t4-16gb", "KV cache"),  # SmoothQuant W8A8
    ("/selector?gpu=apple-m2-ultra", "KV cache"),  # llama.cpp (llama-server), GGUF Q4_K_M
]
# Every element of a metric's value or label whose text is wider than its box (scrolled out of sight).
_CUT_SHORT = """() => [...document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stMetricValue"], [data-testid="stMain"] [data-testid="stMetricLabel"]')]
    .filter(m => [m, ...m.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1))
    .map(m => m.innerText.trim())"""


@pytest.mark.parametrize(("path", "label"), PAGES, ids=[p[0].strip("/") for p in PAGES])
def test_no_metric_is_cut_short(page: Page, app_url: str, path: str, label: str) -> None:
    page.goto(app_url + path)
    expect(metric(page, translate("zh" if "lang=zh" in path else "en", label))).to_be_visible()
    assert_no_traceback(page)  # the page has finished running: every card of this run is drawn
    cut = page.evaluate(_CUT_SHORT)
    assert not cut, f"cut short on {path}: {cut}"
