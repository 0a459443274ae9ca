"""Prices on the pages: /tco names the tier a GPU's price is (seller, region, kind, when fetched) and refreshes it;
/compare ranks one market at one tier and names every GPU it dropped, in both languages."""

from pathlib import Path

import pytest

from db import stored_prices
from tests.pages.apptest import english_leftovers, metric, open_page, texts, url_params

CATALOG = Path(__file__).parents[1] / "tco" / "gpuhunt_catalog"
BROKEN = Path(__file__).parents[1] / "tco" / "gpuhunt_broken"
CHINA = {"market": "cn", "engines": "vllm", "counts": "1", "currency": "CNY"}
TIMEOUT_S = 180


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine, price_book

    get_engine.clear()
    price_book.clear()


def _use_source(monkeypatch: pytest.MonkeyPatch, source: Path) -> None:
    from settings import get_settings

    monkeypatch.setenv("PRICES_SOURCE", str(source))
    get_settings.cache_clear()


def test_picking_a_china_market_gpu_fills_its_yuan_price_and_names_the_seller() -> None:
    at = open_page("tco")
    at.selectbox(key="tco.gpu").set_value("h20-96gb").run()
    assert at.number_input(key="tco.price").value == pytest.approx(7.5)
    shown = " ".join(texts(at.caption))
    assert "Lowest on-demand price on record: 7.50 CNY/GPU-hour, on-demand, 优云智算 (mainland China)" in shown
    assert "fetched 2026-12-05" in shown


def test_a_gpu_without_a_price_asks_for_one_and_says_why() -> None:
    at = open_page("tco", {"gpu": "a800-40gb-pcie"})
    assert any("No public hourly price on record for A800 40GB PCIe" in c for c in texts(at.caption))


def test_a_gpu_rented_by_the_month_fills_in_no_price_and_lists_its_monthly_tier() -> None:
    at = open_page("tco", {"gpu": "h800-80gb-sxm"})
    assert any("No on-demand price on record for H800 80GB SXM" in c for c in texts(at.caption))
    assert at.number_input(key="tco.price").value is None
    tiers = next(d.value for d in at.dataframe if "Kind" in d.value.columns)
    assert list(tiers["Kind"]) == ["monthly rental"] and list(tiers["Provider"]) == ["云擎天下"]
    assert list(tiers["Price per GPU-hour"]) == ["11.98 CNY"]
    # One click puts the monthly rent in, and the costs follow.
    (use,) = [b for b in at.button if b.key == "tco.use_tier"]
    assert use.label == "Use the monthly rental price: 11.98 CNY/GPU-hour (云擎天下)"
    use.click().run()
    assert at.number_input(key="tco.price").value == pytest.approx(11.9792)
    assert url_params(at)["price"] == "11.9792" and metric(at, "Cost per request").endswith(" CNY")


def test_the_rtx_4090_d_fills_its_yuan_price_from_its_chinese_seller() -> None:
    at = open_page("tco")
    at.selectbox(key="tco.gpu").set_value("rtx-4090d-24gb").run()
    assert at.number_input(key="tco.price").value == pytest.approx(1.14)
    assert "1.14 CNY/GPU-hour, on-demand, 算家云 (mainland China)" in " ".join(texts(at.caption))


def test_an_ascend_npu_fills_its_yuan_price_and_says_in_chinese_there_is_no_estimate() -> None:
    at = open_page("tco", {"gpu": "910B", "lang": "zh"})
    assert not at.exception
    assert at.number_input(key="tco.price").value == pytest.approx(4.0)  # 模力方舟, per card-hour
    assert any("模力方舟（Gitee AI）（中国大陆）" in c for c in texts(at.caption))
    assert any("Ascend 910B 64GB 上没有估算" in c for c in texts(at.caption))  # no throughput figure offered
    assert "**Ascend 910B 64GB 上公开发布的实测数据**" in texts(at.markdown)  # what was measured there, as published
    assert english_leftovers(at) == []


def test_refresh_prices_stores_the_catalog_and_a_failed_one_keeps_it(
    monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    from ui.resources import get_engine

    _use_source(monkeypatch, CATALOG)
    at = open_page("tco", {"currency": "USD"})
    at.button(key="tco.refresh_prices").click().run()
    assert any(s.startswith("Prices refreshed: 9 tiers from 3 providers") for s in texts(at.success))
    stored = stored_prices(get_engine())
    assert {t.provider for t in stored} == {"aws", "lambdalabs", "runpod"}
    at.selectbox(key="tco.gpu").set_value("a10g-24gb").run()
    assert any("aws (us-east-1), fetched 20" in c for c in texts(at.caption))
    _use_source(monkeypatch, BROKEN)
    at.button(key="tco.refresh_prices").click().run()
    assert any("previous prices stay in use" in e and "runpod" in e for e in texts(at.error))
    assert stored_prices(get_engine()) == stored


def test_compare_in_one_market_names_each_dropped_gpu_and_the_tier_each_option_used() -> None:
    at = open_page("compare", CHINA, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert set(table["GPU"]) <= {
        "A800 40GB SXM",
        "A800 80GB SXM",
        "H20 96GB",
        "L20 48GB",
        "RTX 3090 24GB",
        "RTX 4090 24GB",
        "RTX 4090 D 24GB",
        "T4 16GB",
    }
    a800 = table[table["GPU"] == "A800 80GB SXM"].iloc[0]
    assert a800["price tier"] == "on-demand · 晨涧云 (mainland China)"
    dropped = " ".join(texts(at.markdown))
    assert "- H800 80GB SXM: no on-demand price on record (give one in prices)" in dropped
    assert "- B300 (HGX): not in the market chosen (available in mainland China)" in dropped
    assert (
        "- Ascend 910B 64GB: GPU types of kind NPU (Huawei Ascend) (no step-time model; the engine advisor lists"
        in dropped
    )


def test_compare_at_monthly_rent_ranks_the_gpus_rented_by_the_month() -> None:
    at = open_page("compare", {**CHINA, "counts": "8", "price_tier": "monthly"}, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert set(table["GPU"]) == {"H800 80GB SXM", "L20 48GB"}
    h800 = table[table["GPU"] == "H800 80GB SXM"].iloc[0]
    assert h800["price tier"] == "monthly rental · 云擎天下 (mainland China)"
    assert "- H20 96GB: no monthly rental price on record (give one in prices)" in " ".join(texts(at.markdown))


def test_compare_in_chinese_words_the_market_and_the_dropped_gpus() -> None:
    at = open_page("compare", {**CHINA, "lang": "zh"}, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    dropped = " ".join(texts(at.markdown))
    assert "- H800 80GB SXM: 没有按需价格记录" in dropped and "不在所选市场（中国大陆可得）" in dropped
    assert not english_leftovers(at)
