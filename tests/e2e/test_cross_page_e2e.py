"""Values that travel in a real browser: a saved scenario's short link (opened elsewhere, then deleted), "Price this"
from the advisor and "Cost this" from a probe run, each landing on the cost page with the numbers filled in."""

import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from catalog import find_gpu, load_handbook
from fakeserver import serve_in_thread
from selector import AdviceRequest, advise
from tco.prices import snapshot_book
from tco.throughput import estimate_advice
from tests.e2e.helpers import (
    MAX_IN_SLO,
    PROBE_MS,
    WARNING,
    assert_no_traceback,
    choose,
    combobox,
    fresh_tab,
    metric,
    metric_value,
    metric_values,
    number_field,
    open_expander,
    open_page,
    query,
    show_tab,
    start_probe,
    type_into,
    wait_for_query,
    wait_for_url,
    wait_idle,
    warnings,
)
from tests.e2e.screens import keep_screenshot

pytestmark = pytest.mark.e2e

CARDS = [
    "Cost per request",
    "Per million tokens (in + out)",
    "Per replica per month",
    "Replicas at peak",
    "Fleet per month",
    "Optimized cost per request",
]
# A name a hostile colleague might type: it must come back as these characters, never as markup or script.
HOSTILE_NAME = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> <b>Q3</b> & *plan*'


def _shown_number(text: str) -> float:
    """'0.00038 USD' -> 0.00038; '1,234.5' -> 1234.5."""
    return float(text.split()[0].replace(",", ""))


def test_saved_scenario_short_link_opens_elsewhere_and_dies_with_delete(
    page: Page, app_url: str, browser: Browser
) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_page(page, app_url + "/tco", "Cost per request")
    type_into(number_field(page, "Price per GPU-hour (in the currency above)"), 30)
    wait_for_query(page, {"price": "30"})
    type_into(number_field(page, "Throughput per replica (output tokens/s)"), 900, key="Tab")
    wait_for_query(page, {"price": "30", "tps": "900"})
    expect(metric(page, "Cost per request")).to_have_text("0.0019 CNY")  # 30 CNY/h over 900/200 = 4.5 requests/s
    seen = metric_values(page, CARDS)

    open_expander(page, "Saved scenarios")
    type_into(page.get_by_role("textbox", name="Scenario name", exact=True), HOSTILE_NAME, key="Tab")
    page.get_by_role("button", name="Save scenario").click()
    wait_for_url(page, lambda url: re.fullmatch(r"[a-z0-9]{6}", query(url).get("s", "")) is not None)
    short_id = query(page.url)["s"]
    assert query(page.url) == {"s": short_id, "price": "30", "tps": "900"}
    saved = page.locator('[data-testid="stAlertContentSuccess"]')
    expect(saved).to_contain_text(f"Saved “{HOSTILE_NAME}”")
    expect(saved).to_contain_text(f"/tco?s={short_id}")
    listed = page.locator('[data-testid="stText"]').filter(has_text=short_id)
    expect(listed).to_contain_text(HOSTILE_NAME)
    # Shown as text: no element made from the name, no script ran.
    expect(page.locator("b", has_text="Q3")).to_have_count(0)
    assert page.evaluate("window.__pwned") is None and not dialogs

    with fresh_tab(browser, "scenario_short_link_fresh") as other:
        other.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        open_page(other, f"{app_url}/tco?s={short_id}", "Cost per request")
        assert metric_values(other, CARDS) == seen
        expect(number_field(other, "Price per GPU-hour (in the currency above)")).to_have_value("30")
        expect(number_field(other, "Throughput per replica (output tokens/s)")).to_have_value("900")
        opened = other.locator('[data-testid="stAlertContentInfo"]').filter(has_text="Opened saved scenario")
        expect(opened).to_contain_text(f"Opened saved scenario “{HOSTILE_NAME}”")
        expect(other.locator("b", has_text="Q3")).to_have_count(0)
        assert other.evaluate("window.__pwned") is None and not dialogs
        assert_no_traceback(other)

    # Deleted from the list on the first screen ...
    row = page.locator('[data-testid="stHorizontalBlock"]').filter(has=listed)
    row.get_by_role("button", name="Delete").click()
    expect(page.locator('[data-testid="stText"]').filter(has_text=short_id)).to_have_count(0)
    assert_no_traceback(page)

    # ... the short link then says so and shows the defaults (15 CNY/h, 588 tok/s: the handbook's 0.0014 CNY).
    with fresh_tab(browser, "scenario_deleted_link_fresh") as other:
        open_page(other, f"{app_url}/tco?s={short_id}", "Cost per request")
        shown = warnings(other, 1)
        assert len(shown) == 1 and f"Scenario '{short_id}' does not exist" in shown[0], shown
        expect(number_field(other, "Price per GPU-hour (in the currency above)")).to_have_value("15")
        expect(number_field(other, "Throughput per replica (output tokens/s)")).to_have_value("588")
        expect(metric(other, "Cost per request")).to_have_text("0.0014 CNY")
        assert_no_traceback(other)


def test_price_this_opens_the_cost_page_with_the_gpu_its_count_catalog_price_and_estimate(
    page: Page, app_url: str
) -> None:
    h100 = find_gpu("H100")
    tier = snapshot_book().lowest(h100.id, "on_demand", "USD", load_handbook().fx.cny_per_usd)
    assert tier is not None
    price = f"{tier.price_per_gpu_hour:g}"  # the catalog's lowest public on-demand price
    open_page(page, app_url + "/selector", "Engine")
    choose(page, "GPU", "H100 80GB SXM · 80 GB")
    wait_for_query(page, {"gpu": h100.id})
    type_into(number_field(page, "GPUs (one node)"), 2)
    wait_for_query(page, {"gpu": h100.id, "gpus": "2"})
    # The throughput it carries: perf's estimate of the recommendation at its SLO operating point.
    chosen = estimate_advice(advise(AdviceRequest(gpu=h100.id, gpus=2)))
    assert chosen.point is not None
    tps = chosen.point.output_tok_s
    expect(page.get_by_text(f"Carries the estimated {tps:,.0f} tok/s per replica")).to_be_visible()

    page.get_by_role("link", name="Price this").click()
    page.wait_for_url(re.compile(r"/tco\?"))
    wait_for_query(
        page,
        {"gpu": h100.id, "gpus": "2", "price": price, "currency": tier.currency, "tps": f"{tps:g}"}
        | {"tps_source": "estimate"},
    )
    expect(combobox(page, "GPU")).to_have_value("H100 80GB SXM · 80 GB")
    expect(number_field(page, "GPUs per replica")).to_have_value("2")
    expect(number_field(page, "Price per GPU-hour (in the currency above)")).to_have_value(price)
    expect(number_field(page, "Throughput per replica (output tokens/s)")).to_have_value(f"{tps:g}")
    expect(page.get_by_role("radio", name=tier.currency, exact=True)).to_be_checked()
    named = f"Lowest on-demand price on record: {price} {tier.currency}/GPU-hour, on-demand, {tier.provider}"
    expect(page.get_by_text(named)).to_be_visible()
    expect(
        page.get_by_text(
            re.compile(
                r"estimate: bands tok/s [\d.]+–[\d.]+×, TPOT [\d.]+–[\d.]+×, TTFT [\d.]+–[\d.]+× of the estimate"
            )
        ).first
    ).to_be_visible()
    # Two GPUs at the catalog price over the estimated tok/s and 200 output tokens per request.
    cost = _shown_number(metric_value(page, "Cost per request"))
    assert cost == pytest.approx(tier.price_per_gpu_hour * 2 / (tps / 200 * 3600), rel=0.05)  # shown to 2-3 figures
    assert metric_value(page, "Cost per request").endswith(" USD")
    month = _shown_number(metric_value(page, "Per replica per month"))
    assert month == pytest.approx(tier.price_per_gpu_hour * 2 * 730, abs=0.5)
    expect(page.locator(WARNING)).to_have_count(0)
    assert_no_traceback(page)


def test_cost_this_carries_the_measured_throughput_to_the_cost_page(page: Page, app_url: str) -> None:
    model = "fake:ttft_ms=20,tpot_ms=5,tokens=16"  # about 0.1 s per request
    with serve_in_thread() as fake:
        link = urlencode({"url": fake.base_url, "model": model, "levels": "1,2", "requests": "4", "label": "cost this"})
        start_probe(page, f"{app_url}/probe?{link}")
        expect(metric(page, MAX_IN_SLO)).to_have_text("2", timeout=PROBE_MS)
        wait_idle(page)
        measured = metric_value(page, "Output tokens/s")  # at concurrency 2, the highest within the SLO
        expect(combobox(page, "Level to cost")).to_have_value(f"concurrency 2: {measured} tok/s (highest within SLO)")
        show_tab(page, "Latency")
        expect(page.locator(".js-plotly-plot").first).to_contain_text("SLO TTFT")
        # The README's picture: the result with its figures and the latency chart, scrolled to the top.
        page.get_by_role("heading", name="Result").evaluate(
            "el => el.scrollIntoView({block: 'start', behavior: 'instant'})"
        )
        keep_screenshot(page, "probe.png")

        page.get_by_role("link", name="Cost this").click()
        page.wait_for_url(re.compile(r"/tco\?"))
        wait_for_query(page, {"out_tokens": "16"})
        carried = query(page.url)
        assert set(carried) >= {"tps", "out_tokens", "in_tokens"}, carried  # the fake server reports usage
        # measured by a run: the assumed levers (prompt reuse, spot prices) start off
        assert (carried["tps_source"], carried["prefix"], carried["spot"]) == ("measured", "false", "false")
        tps = float(carried["tps"])
        assert tps == pytest.approx(_shown_number(measured), abs=0.051)  # the card shows one decimal too
        expect(number_field(page, "Throughput per replica (output tokens/s)")).to_have_value(carried["tps"])
        expect(number_field(page, "Output tokens per request")).to_have_value("16")
        expect(number_field(page, "Input tokens per request")).to_have_value(carried["in_tokens"])
        # One replica at the default 15 CNY/h serving tps / 16 requests per second.
        cost = _shown_number(metric_value(page, "Cost per request"))
        assert cost == pytest.approx(15 / (tps / 16 * 3600), rel=0.05)  # shown to 2-3 figures
        assert metric_value(page, "Requests/s per replica") == f"{tps / 16:,.2f}"
        expect(page.locator(WARNING)).to_have_count(0)
        assert_no_traceback(page)
