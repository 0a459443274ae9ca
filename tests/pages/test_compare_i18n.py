"""The comparison page in Chinese: ranked, with nothing ranked, with a bad input; and in English as before."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from i18n import translate
from tests.pages.apptest import english_leftovers, metric, open_page, open_tab, texts

NARROW = {"engines": "vllm", "counts": "1"}  # about 90 options: a few seconds to estimate cold
TIMEOUT_S = 180


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def _leftovers(at: AppTest) -> list[str]:
    """english_leftovers without the option labels: GPU, engine and quantization names ('1x H100 80GB SXM · vLLM')."""
    names = {e.value for e in at.subheader if str(e.value).startswith(":material/trophy:")}
    return [t for t in english_leftovers(at) if t not in names]


def test_compare_in_chinese_ranks_with_every_text_translated() -> None:
    at = open_page("compare", {"lang": "zh", **NARROW}, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    datasheet_only = bool(at.dataframe[0].value["datasheet only"].iloc[0])
    assert [w.value.startswith("该方案只依据规格参数") for w in at.warning] == ([True] if datasheet_only else [])
    assert all("。依据为实测（拟合或校准）的最优方案排第 " in w.value for w in at.warning)
    assert at.title[0].value == "哪个方案最便宜？"
    assert _leftovers(at) == []
    assert [t.label for t in at.tabs] == ["排名", "成本与延迟", "方案详情"]
    assert metric(at, translate("zh", "Per million output tokens")).endswith(" 元")  # a label /tco shares
    assert any(c.startswith("折合USD（汇率") for c in texts(at.caption))  # the other currency beside the headline
    band = [c for c in texts(at.caption) if c.startswith("估算值：留出验证的实测中，10 次有 8 次落在")]
    assert band and all("依据：规格参数：" in c or "依据：拟合：" in c for c in band)
    table = at.dataframe[0].value  # the data keeps its English keys; the headers are translated by column_config
    assert set(table["SLO"]) <= {"满足", "未满足 SLO"} and set(table["basis"]) <= {"拟合", "规格参数", "校准", "外推"}
    assert all(d.startswith(("规格参数：", "拟合：", "外推：", "由")) for d in table["basis detail"])
    open_tab(at, "_compare.tab", "成本与延迟")  # lazy: the chart runs once its tab is opened
    layout = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]
    assert layout["title"]["text"].startswith("成本与延迟：") and layout["title"]["text"].endswith("个方案（估算）")
    assert (layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]) == (
        "TPOT p50（ms，估算）",
        "每百万输出 token 成本（CNY）",
    )
    labels = {link.proto.label for link in at.get("page_link")}
    assert {"在成本计算器中计价", "在引擎选型助手中打开"} <= labels


def test_compare_in_chinese_says_why_nothing_is_ranked() -> None:
    at = open_page("compare", {"lang": "zh", "model": "kimi-k2", **NARROW}, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    assert texts(at.warning)[0].startswith("在有价格的目录 GPU 上用 1–8 张卡")
    assert _leftovers(at) == []
    reasons = texts(at.markdown)
    assert any(r.startswith("- 显存装不下该模型: ") for r in reasons)
    assert any(r.startswith("- ") and "（没有单步耗时模型）" in r and ("Apple" in r or "CPU" in r) for r in reasons)


def test_compare_in_chinese_with_a_bad_input_shows_the_error_in_chinese() -> None:
    at = open_page("compare", {"lang": "zh", **NARROW}, timeout_s=TIMEOUT_S)
    at.text_input(key="compare.prices").set_value("Z9000:3").run()
    assert not at.exception
    assert len(at.error) == 1 and "请检查这些输入；输入有效后排名会随之更新。" in at.error[0].value
    assert _leftovers(at) == []  # the package's own message stays English inside the Chinese sentence


def test_compare_in_chinese_with_a_bad_link_warns_in_chinese_and_still_ranks() -> None:
    at = open_page("compare", {"lang": "zh", **NARROW, "tpot_p50": "-5"}, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    warnings = [w.value for w in at.warning if not w.value.startswith("该方案只依据规格参数")]
    assert len(warnings) == 1 and "`tpot_p50`" in warnings[0]
    assert _leftovers(at) == []
    assert len(at.dataframe[0].value) > 20


def test_compare_in_english_reads_as_before() -> None:
    at = open_page("compare", {"lang": "en", **NARROW}, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    assert all(w.value.startswith("This option rests on datasheet figures alone") for w in at.warning)
    assert at.title[0].value == "Which option is cheapest?"
    assert metric(at, "Per million output tokens").endswith(" CNY")
    band = [c for c in texts(at.caption) if c.startswith("Estimate: 8 in 10 held-out measurements fell within")]
    assert band and all("Basis: datasheet: " in c or "Basis: fitted: " in c for c in band)
    assert all("tok/s " in c and ", TPOT " in c and ", TTFT " in c for c in band), "a band for each figure"
    table = at.dataframe[0].value
    assert set(table["SLO"]) <= {"meets", "misses SLO"} and "per 1M output tokens (CNY)" in table
    assert [t.label for t in at.tabs] == ["Ranking", "Cost vs latency", "Option details"]


def test_compare_in_chinese_words_a_reserved_tier_and_its_seller() -> None:
    params = {"lang": "zh", **NARROW, "price_tier": "reserved_1y", "gpu_names": "H100,MI300X", "currency": "USD"}
    at = open_page("compare", params, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    assert set(at.dataframe[0].value["price tier"]) == {"1 年预留 · Qubrid (未注明地区)"}
    assert any(r.startswith("- MI300X 192GB: 没有1 年预留价格记录") for r in texts(at.markdown)), texts(at.markdown)
    assert _leftovers(at) == []


def test_compare_in_chinese_for_the_china_market_names_ascend_as_dropped_with_why() -> None:
    at = open_page("compare", {"lang": "zh", "market": "cn", **NARROW}, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    shown = texts(at.markdown)
    npu = "NPU（华为昇腾）（没有单步耗时模型；引擎选型页列出了在它上面公开发布的实测数据）"
    assert f"- Ascend 910B 64GB: {npu}" in shown and f"- Ascend 910C 128GB: {npu}" in shown
    assert _leftovers(at) == []
