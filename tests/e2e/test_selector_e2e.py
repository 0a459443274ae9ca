"""The engine advisor in a real browser: a shared link opens the same advice, read off the page."""

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.helpers import assert_no_traceback, metric, show_tab, wait_for_query, wait_idle, warnings
from tests.support import ROOT

pytestmark = pytest.mark.e2e

LINK = "/selector?gpu=H100&workload=rag&priority=latency&concurrency=32"


def test_link_opens_the_advice_with_engine_and_launch_command(page: Page, app_url: str) -> None:
    page.goto(app_url + LINK)
    expect(metric(page, "Engine")).to_have_text("SGLang")
    expect(metric(page, "KV cache")).to_have_text("fp8")
    show_tab(page, "Launch command")  # a click that lands while the page redraws its tabs is lost: show_tab retries
    expect(page.locator('[data-testid="stCode"]').first).to_contain_text("sglang.launch_server")
    expect(page.get_by_role("link", name="Price this")).to_have_count(1)
    assert_no_traceback(page)


BAD_LINK = "/selector?gpu=nope&model=%00&gpus=999&context=-5&concurrency=1e9&engine=x&quant=y"


def test_a_link_with_seven_bad_values_names_each_and_shows_the_defaults(page: Page, app_url: str) -> None:
    page.goto(app_url + BAD_LINK)
    expect(metric(page, "Engine")).to_have_text("vLLM")
    texts = warnings(page, 7)
    for alias in ("gpu", "model", "gpus", "context", "concurrency", "engine", "quant"):
        assert sum(f"URL parameter {alias} " in t for t in texts) == 1, (alias, texts)
    expect(metric(page, "Quantization")).to_have_text("AWQ 4-bit")  # quant=y is not NF4
    assert_no_traceback(page)


def test_an_uploaded_config_json_describes_the_model_and_the_link_keeps_it(page: Page, app_url: str) -> None:
    config = ROOT / "tests" / "selector" / "configs" / "qwen3-30b-a3b.json"
    page.goto(app_url + "/selector?model=custom&gpu=h100")
    uploader = page.locator('[data-testid="stFileUploader"] input[type="file"]')
    expect(uploader).to_be_attached()
    wait_idle(page)
    uploader.set_input_files(str(config))
    expect(metric(page, "Experts")).to_have_text("128 experts, 8 per token")
    wait_for_query(page, {"model": "custom", "experts": "128", "experts_per_token": "8"})
    link = page.url
    page.goto(link)
    expect(metric(page, "Experts")).to_have_text("128 experts, 8 per token")
    assert_no_traceback(page)
