"""Headline first, in a real browser: a shared link's headline shows, the beacon reports its paint, the rest of the
page follows, and the headline has not moved."""

from collections.abc import Callable

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.helpers import BEACON, assert_no_traceback, metric, number_field, wait_idle

pytestmark = pytest.mark.e2e

Find = Callable[[Page], Locator]

PAGES: dict[str, tuple[str, Find, Find]] = {  # link, its headline, something only the rest of the page has
    "tco": (
        "/tco?price=15&currency=CNY&tps=588&out_tokens=200&hours=720",
        lambda p: metric(p, "Cost per request"),
        lambda p: number_field(p, "Price per GPU-hour (in the currency above)"),
    ),
    "selector": (
        "/selector?gpu=H100&gpus=2&model=llama3.1-70b&workload=rag",
        lambda p: metric(p, "Max sequences"),
        lambda p: p.get_by_role("tab", name="Memory fit"),
    ),
    "compare": (
        "/compare?engines=vllm&counts=1",
        lambda p: metric(p, "Per million output tokens"),
        lambda p: p.get_by_role("tab", name="Cost vs latency"),
    ),
    "probe": (
        "/probe",
        lambda p: p.get_by_role("button", name="Start probe"),
        lambda p: number_field(p, "Max tokens"),
    ),
}


def drawn_box(shown: Locator) -> dict[str, float]:
    """Where the headline is drawn, once it is: a rerun that starts as it appears can redraw it in the same place,
    and between the two it has no box for an instant (CI once read the box in that instant)."""
    for _ in range(20):
        expect(shown).to_be_visible()
        box = shown.bounding_box()
        if box is not None:
            return dict(box)
    raise AssertionError("the headline never stayed visible long enough to be measured")


@pytest.mark.parametrize("name", list(PAGES))
def test_the_headline_comes_first_and_stays_where_it_was_drawn(page: Page, app_url: str, name: str) -> None:
    path, headline, rest = PAGES[name]
    page.goto(app_url + path)
    shown = headline(page).first
    first = drawn_box(shown)
    wait_idle(page)  # the beacon has reported and the run that draws the rest is over
    expect(page.locator(BEACON)).to_have_count(0)
    page.get_by_text("Language / 语言").first.wait_for()  # the sidebar's switch came with the rest
    assert drawn_box(shown) == first, "the headline moved once the rest of the page came"
    if name == "probe":
        page.get_by_text("Load and generation").first.click()  # a closed section: its fields came with the rest
    expect(rest(page).first).to_be_attached()
    assert_no_traceback(page)
