"""/selector's "Separate pools" tab: both topologies with the estimated gain when two pools could pay, else why not."""

import pytest

from tests.pages.apptest import metric, open_page, open_tab, texts

LONG = {"gpu": "H200", "gpus": "8", "model": "qwen3-32b", "engine": "vllm", "in_tokens": "4000", "out_tokens": "500"}


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def test_long_prompts_show_both_topologies_the_gain_the_rule_and_recipes() -> None:
    at = open_tab(open_page("selector", LONG, timeout_s=120), "_selector.tab", "Separate pools")
    assert not at.exception and not at.error
    assert any("prefill interference" in s.value for s in at.success)
    assert any("disagg.interference" in c for c in texts(at.caption))
    one = float(metric(at, "One pool: tok/s per GPU (estimate)").replace(",", ""))
    two = float(metric(at, "Two pools: tok/s per GPU (estimate)").replace(",", ""))
    gain = metric(at, "Estimated gain of two pools")
    assert gain == f"{two / one - 1:+.0%}" or abs(float(gain.strip("%+")) - (two / one - 1) * 100) <= 1
    assert any("**Two pools:**" in m.value and "P" in m.value and "D (prefill" in m.value for m in at.markdown)
    assert any(c.startswith("Basis: extrapolated") for c in texts(at.caption))
    assert len(at.get("plotly_chart")) == 1  # tok/s per GPU against tok/s per user, both topologies
    codes = [c.value for c in at.code]
    assert any("--kv-transfer-config" in c for c in codes) and any("--disaggregation-mode prefill" in c for c in codes)
    assert any("trtllm-serve disaggregated -c disagg_config.yaml" in c for c in codes)


def test_short_prompts_say_one_pool_serves_it() -> None:
    at = open_tab(open_page("selector", {**LONG, "in_tokens": "200"}, timeout_s=120), "_selector.tab", "Separate pools")
    assert not at.exception and not at.error
    assert any("disagg.short_prompts" in c for c in texts(at.caption)) or any(
        "would pay here" in i.value for i in at.info
    )
    assert not at.code


def test_in_chinese() -> None:
    at = open_tab(open_page("selector", {**LONG, "lang": "zh"}, timeout_s=120), "_selector.tab", "分离部署")
    assert not at.exception and not at.error
    assert any("干扰" in s.value for s in at.success)


def test_a_mixture_of_experts_that_needs_the_whole_node_is_sent_to_compare_for_pools_over_nodes() -> None:
    """DeepSeek-R1 on 8x H20: one node holds one copy, so the tab points to /compare, which ranks pools over nodes."""
    from urllib.parse import parse_qsl

    asked = {"gpu": "H20", "gpus": "8", "model": "deepseek-r1", "engine": "vllm", "in_tokens": "1500"}
    at = open_tab(open_page("selector", asked, timeout_s=120), "_selector.tab", "Separate pools")
    assert not at.exception and not at.error
    assert any("disagg.too_few_gpus" in c for c in texts(at.caption))
    assert any("needs a whole node of H20" in i.value and "up to 4 nodes" in i.value for i in at.info)
    link = next(p for p in at.get("page_link") if p.proto.label == "Compare one pool and separate pools over nodes")
    assert link.proto.page == "compare"
    carried = dict(parse_qsl(link.proto.query_string))
    assert (carried["model"], carried["gpu_names"], carried["engines"]) == ("deepseek-r1", "h20-96gb", "vllm")
    ranked = open_page("compare", carried, timeout_s=240)
    assert not ranked.exception and not ranked.error
    table = ranked.dataframe[0].value
    wide = table[table["topology"].str.startswith("disaggregated")]
    assert len(wide) >= 1 and wide.iloc[0]["GPUs per replica"] > 8
