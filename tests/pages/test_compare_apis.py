"""/compare's hosted-API line: the top option's fleet beside the model's cheapest API at the traffic."""

import pytest

from tests.pages.apptest import english_leftovers, metric, open_page

NARROW = {"engines": "vllm", "counts": "1"}  # about 90 options: a few seconds to estimate cold
TIMEOUT_S = 180


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def test_the_cheapest_api_of_the_model_at_the_traffic_beside_the_top_option() -> None:
    at = open_page("compare", NARROW, timeout_s=TIMEOUT_S)
    assert not at.exception
    # Qwen2.5-7B on DeepInfra: (500 x 0.04 + 200 x 0.10) USD per million = 0.00004 USD a request, x 7.2 CNY,
    # x 1,000,000 a day x 730 / 24 days = 8,760 CNY a month
    assert metric(at, "Cheapest API per month") == "8,760 CNY"
    assert metric(at, "Top option's fleet per month").endswith(" CNY")
    assert metric(at, "Self-hosting cheaper from (tokens/month)")
    assert metric(at, "Energy per million output tokens (estimated)").endswith(" kWh")


def test_in_chinese() -> None:
    at = open_page("compare", {**NARROW, "lang": "zh"}, timeout_s=TIMEOUT_S)
    assert metric(at, "最便宜的 API 每月") == "8,760 元"
    assert not english_leftovers(at)
