"""The split of GPU time by kind of token on /tco and /compare: its basis named, in the URL, in both languages."""

import pytest

from tco import TcoInputs
from tco.throughput import estimate_tps
from tests.pages.apptest import english_leftovers, open_page, open_tab, texts

HANDBOOK_LINK = {"price": "15", "currency": "CNY", "tps": "588", "out_tokens": "200", "hours": "720"}
H100 = {"gpu": "h100", "currency": "USD", "model": "qwen2.5-7b", "engine": "vllm", "quant_method": "bf16"}
COMPARE = {"engines": "vllm", "counts": "1", "gpu_names": "l40s,a100-80gb-sxm", "in_tokens": "8000"}
TIMEOUT_S = 180


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def _estimate_link(**extra: str) -> dict[str, str]:
    tps = estimate_tps(TcoInputs.model_validate(H100)).output_tok_s
    return {**H100, "tps": f"{tps:g}", "tps_source": "estimate", **extra}


def _by_kind(at: object) -> "dict[str, str]":
    table = next(d.value for d in at.dataframe if "kind" in d.value.columns)  # type: ignore[attr-defined]
    return dict(zip(table["kind"], table["one replica at full load"], strict=True))


def test_a_throughput_typed_by_hand_names_the_assumed_share() -> None:
    at = open_page("tco", HANDBOOK_LINK)
    assert "Split: **assumed prefill share 68%**" in texts(at.markdown)
    assert _by_kind(at)["input"] == "1.93 CNY"  # the handbook's figures stay exact
    assert any(c.startswith("**Assumed split:**") for c in texts(at.caption))


def test_an_estimate_link_is_split_by_the_estimate_and_says_so() -> None:
    at = open_page("tco", _estimate_link())
    assert not at.exception and not at.warning
    point = estimate_tps(TcoInputs.model_validate(H100))
    assert f"Split: **estimated split (concurrency {point.concurrency})**" in texts(at.markdown)
    assert any(c.startswith("**Estimated split:**") for c in texts(at.caption))
    assert _by_kind(at)["cached input"] not in ("0 USD", "—")  # a cached token costs its KV read and attention
    assert "split" not in at.query_params  # the default for an estimate: not written into the link
    # the user asks for the assumed share instead: the link says so, and a fresh session opens it
    at.segmented_control(key="tco.split").set_value("share").run()
    assert at.query_params["split"] == "share"
    assert "Split: **assumed prefill share 68%**" in texts(at.markdown)
    again = open_page("tco", {k: at.query_params[k] for k in at.query_params})
    assert "Split: **assumed prefill share 68%**" in texts(again.markdown)


def test_in_chinese_the_basis_is_named_in_chinese() -> None:
    at = open_page("tco", _estimate_link(lang="zh"))
    assert any(m.startswith("划分：**估算划分（并发") for m in texts(at.markdown))
    assert any(c.startswith("**估算划分：**") for c in texts(at.caption))
    assert not english_leftovers(at)


def test_a_cached_share_is_a_what_if_priced_and_shown_beside_the_apis() -> None:
    at = open_page("tco", _estimate_link(cached="50"))
    assert any("What-if: 50% of each prompt is assumed to hit the prefix cache" in c for c in texts(at.caption))
    apis = next(d.value for d in at.dataframe if "API model" in d.value.columns)
    mine = apis.iloc[0]
    assert mine["provider"] == "self-hosted (this page)" and mine["kind"].startswith("estimated split")
    assert mine["cached input per million"] not in ("0 USD", "—")


def test_an_estimated_split_the_inputs_cannot_have_says_why_and_uses_the_share() -> None:
    at = open_page("tco", {**HANDBOOK_LINK, "gpu": "custom", "split": "estimate"})
    assert any(w.startswith("No estimated split for these inputs (a custom GPU") for w in texts(at.warning))
    assert "Split: **assumed prefill share 68%**" in texts(at.markdown)


def test_compare_splits_each_option_by_its_estimate_and_the_link_can_ask_for_the_share() -> None:
    at = open_tab(open_page("compare", COMPARE, TIMEOUT_S), "_compare.tab", "Option details")
    assert not at.exception
    assert at.segmented_control(key="compare.split").value == "estimate"
    assert any(c.startswith("**Estimated split:**") for c in texts(at.caption))
    assert any("the top option" in c and "(estimated split (concurrency" in c for c in texts(at.caption))
    at.segmented_control(key="compare.split").set_value("share").run()
    assert at.query_params["split"] == "share"
    assert any(c.startswith("**Assumed split:**") for c in texts(at.caption))
