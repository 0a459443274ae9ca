"""The cost page's owning, energy and hosted-API sections, as a user reads them, in English and Chinese."""

import re

import pytest

from tests.pages.apptest import english_leftovers, metric, open_page, texts


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def test_the_a800_owned_beside_rented_with_both_break_evens() -> None:
    at = open_page("tco")
    assert not at.exception
    # 12,000 USD x 7.2 over 5 years at 3.5%, hosting, power and support: 72,060 CNY a year = 8.23 CNY per hour
    assert metric(at, "Owned cost per GPU-hour") == "8.23 CNY"
    assert metric(at, "Rental price per GPU-hour") == "15.00 CNY"
    assert metric(at, "Owning beats renting from") == "55%"
    assert metric(at, "Payback vs renting") == "13.2 months"
    assert any("Source: A800 sold at 12000 USD: http://m.boke.042.cn" in c for c in texts(at.caption))
    assert metric(at, "Joules per output token") == "2.07 J"  # 1,218.75 W at the wall / 588 tok/s


def test_a_half_used_fleet_costs_more_per_used_hour_and_the_link_keeps_it() -> None:
    at = open_page("tco")
    at.number_input(key="tco.own_util").set_value(50.0).run()
    assert metric(at, "Owned cost per GPU-hour") == "16.45 CNY"
    assert at.query_params["own_util"] == "50"


def test_a_gpu_without_a_purchase_price_asks_for_one() -> None:
    at = open_page("tco", {"gpu": "h20-96gb", "price": "10"})
    assert not [m for m in at.metric if m.label == "Owned cost per GPU-hour"]
    assert any("enter a purchase price" in i for i in texts(at.info))
    at.number_input(key="tco.own_price").set_value(100000.0).run()
    assert metric(at, "Owned cost per GPU-hour").endswith(" CNY")


def test_the_apis_of_the_72b_against_self_hosting_at_the_traffic() -> None:
    at = open_page("tco", {"model": "qwen2.5-72b", "tps": "4000", "gpus": "4", "price": "10"})
    assert metric(at, "Self-hosted fleet per month") == "58,400 CNY"  # 2 replicas of 4 GPUs at 10 CNY, 730 h
    assert metric(at, "Cheapest API per month") == "56,940 CNY"  # DeepInfra, 0.36 / 0.40 USD per million
    # the API is cheaper at this traffic (1,000,000 requests a day of 500 + 200 tokens: 21.3B tokens a month), so
    # self-hosting wins only above it
    number, unit = re.fullmatch(r"([\d.]+)([MB])", metric(at, "Self-hosting cheaper from (tokens/month)")).groups()
    assert float(number) * {"M": 1e6, "B": 1e9}[unit] > 1_000_000 * 700 * 730 / 24
    apis = next(d.value for d in at.dataframe if "provider" in d.value.columns)
    assert apis.columns[-1] == "self-hosting cheaper from (tokens/month)"  # a header in lowercase like the others
    assert any("LiteLLM" in c and "2026-12-05" in c for c in texts(at.caption))
    carbon = open_page("tco", {"carbon": "550"})
    assert metric(carbon, "kg CO2e per million output tokens") == "0.317"


def test_in_chinese_the_sections_read_in_chinese() -> None:
    at = open_page("tco", {"model": "qwen2.5-72b", "lang": "zh"})
    assert metric(at, "自有 GPU 每小时成本") == "8.23 元"
    assert metric(at, "相对租用的回本时间") == "13.2 个月"
    assert metric(at, "每百万输出 token 的能耗") == "0.576 千瓦时"
    assert not english_leftovers(at)
