"""The comparison in a real browser: a /compare link ranks the options, and an option's cost-calculator link opens
/tco with that option's GPU and its estimated throughput, marked as an estimate."""

import re

import pytest
from playwright.sync_api import Page, expect

from catalog import find_gpu
from tests.e2e.helpers import (
    assert_no_traceback,
    combobox,
    metric,
    metric_value,
    number_field,
    open_page,
    query,
    scroll_to_top,
    wait_for_query,
)
from tests.e2e.screens import keep_screenshot

pytestmark = pytest.mark.e2e

# One engine, one GPU per replica, dollars: about 90 options, a few seconds to estimate on a cold server.
COMPARE_LINK = "/compare?engines=vllm&counts=1&currency=USD&traffic=5000000"
TO_TCO = "Price this in the cost calculator"


def test_compare_link_ranks_and_an_options_link_opens_the_cost_page(page: Page, app_url: str) -> None:
    open_page(page, app_url + COMPARE_LINK, "Which option is cheapest?")
    expect(metric(page, "Per million output tokens")).to_contain_text(" USD")  # the ranking is done
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Considered [\d,]+ combinations; ranked [\d,]+$"))).to_be_visible()
    assert query(page.url) == {"engines": "vllm", "counts": "1", "currency": "USD", "traffic": "5000000"}
    shown_tps = metric_value(page, "Tok/s per replica (estimate)")  # '14,370 tok/s'
    gpus_needed = metric_value(page, "GPUs needed")
    fleet = metric_value(page, "Fleet per month")
    keep_screenshot(page, "compare.png")

    link = page.get_by_role("link", name=TO_TCO).first
    carried = query(link.get_attribute("href") or "")
    gpu = find_gpu(carried["gpu"])
    assert carried["tps_source"] == "estimate"
    assert float(carried["tps"]) == float(shown_tps.split()[0].replace(",", ""))
    link.click()
    page.wait_for_url(re.compile(r"/tco\?"))
    wait_for_query(page, {"gpu": gpu.id, "tps": carried["tps"], "tps_source": "estimate"})
    expect(combobox(page, "GPU")).to_have_value(f"{gpu.name} · {gpu.memory_gb:g} GB")
    expect(number_field(page, "Throughput per replica (output tokens/s)")).to_have_value(carried["tps"])
    expect(page.get_by_text("Throughput source: estimate")).to_be_visible()
    expect(
        page.get_by_text(
            re.compile(
                r"estimate: bands tok/s [\d.]+–[\d.]+×, TPOT [\d.]+–[\d.]+×, TTFT [\d.]+–[\d.]+× of the estimate"
            )
        ).first
    ).to_be_visible()
    # The cost page prices the option as the comparison did.
    expect(metric(page, "GPUs needed")).to_have_text(gpus_needed)
    expect(metric(page, "Fleet per month")).to_have_text(fleet)
    assert_no_traceback(page)


def test_readme_screenshot_of_the_compare_page_in_chinese(page: Page, app_url: str) -> None:
    """The README's Chinese picture of /compare (docs/screenshots/ with UPDATE_SCREENSHOTS=1, `make screenshots`)."""
    open_page(page, app_url + COMPARE_LINK + "&lang=zh", "哪个方案最便宜？")
    expect(metric(page, "每百万输出 token")).to_contain_text("$")  # the ranking is done, in dollars
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    scroll_to_top(page)
    keep_screenshot(page, "compare-zh.png")
