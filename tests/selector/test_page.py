"""The advisor page under AppTest: smoke, URL round trip, bad links, contradictions, and the "Price this" link."""

from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from streamlit.testing.v1 import AppTest

from selector import AdviceRequest
from selector.hfconfig import parse_config
from tests.pages.apptest import metric, open_page, open_tab, texts, url_params


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def _tab(at: AppTest, label: str) -> AppTest:
    """Open a tab of the advice (lazy: only the open tab runs)."""
    return open_tab(at, "_selector.tab", label)


def test_default_page_recommends_vllm_with_awq_on_the_handbooks_a800() -> None:
    at = open_page("selector")
    assert not at.exception
    assert metric(at, "Engine") == "vLLM"
    assert metric(at, "Quantization") == "AWQ 4-bit"
    assert not at.error and not at.warning
    assert not at.code  # lazy tabs: the reasons first, the command once its tab is opened
    assert any("vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ" in c.value for c in _tab(at, "Launch command").code)
    assert len(_tab(at, "Engines compared").dataframe[0].value) >= 8  # the engine comparison table
    assert url_params(at) == {}  # defaults are omitted from the link


def test_link_reproduces_the_advice_and_editing_rewrites_the_link() -> None:
    link = {"gpu": "H100", "workload": "rag", "priority": "latency", "concurrency": "32"}
    at = open_page("selector", link)
    assert metric(at, "Engine") == "SGLang"
    assert url_params(at) == {"gpu": "h100-80gb-sxm", "workload": "rag", "concurrency": "32"}
    at.selectbox(key="selector.ecosystem").set_value("hf").run()
    at.selectbox(key="selector.workload").set_value("chat").run()
    at.toggle(key="selector.build_engines").set_value(True).run()
    params = url_params(at)
    assert params == {"gpu": "h100-80gb-sxm", "ecosystem": "hf", "build_engines": "yes", "concurrency": "32"}
    assert metric(at, "Engine") == "TensorRT-LLM"
    again = open_page("selector", params)
    assert metric(again, "Engine") == "TensorRT-LLM"
    assert again.toggle(key="selector.build_engines").value is True


def test_price_this_links_to_the_cost_page_with_gpu_count_and_catalog_price() -> None:
    at = open_page("selector", {"gpu": "H100", "gpus": "2", "model": "llama3.1-70b"})
    link = next(p for p in at.get("page_link") if p.proto.label == "Price this")
    assert link.proto.page == "tco"
    carried = dict(parse_qsl(link.proto.query_string))
    assert {k: carried[k] for k in ("gpu", "price", "currency", "gpus")} == {
        "gpu": "h100-80gb-sxm",
        "price": "1.99",
        "currency": "USD",
        "gpus": "2",
    }
    assert float(carried["tps"]) > 0  # the estimate, and what it is for
    assert (carried["tps_source"], carried["model"]) == ("estimate", "llama3.1-70b")
    assert (carried["prefix"], carried["spot"]) == ("false", "false")  # what-if levers start off on an estimate


def test_price_this_without_an_estimate_carries_gpu_count_and_catalog_price() -> None:
    at = open_page("selector", {"gpu": "H100", "gpus": "2", "model": "llama3.1-70b", "engine": "tgi"})
    link = next(p for p in at.get("page_link") if p.proto.label == "Price this")
    assert dict(parse_qsl(link.proto.query_string)) == {
        "gpu": "h100-80gb-sxm",
        "price": "1.99",
        "currency": "USD",
        "gpus": "2",
        "in_tokens": "500",
        "out_tokens": "200",
    }  # the request shape travels too


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"gpu": "Z9000"}, "`gpu`"),
        ({"model": "gpt-17"}, "`model`"),
        ({"gpus": "99"}, "`gpus`"),
        ({"workload": "poetry"}, "`workload`"),
        ({"context": "-5"}, "`context`"),
        ({"build_engines": "maybe"}, "`build_engines`"),
    ],
)
def test_bad_link_warns_once_names_the_parameter_and_shows_the_default_advice(
    params: dict[str, str], named: str
) -> None:
    at = open_page("selector", params)
    assert not at.exception
    warnings = texts(at.warning)
    assert len(warnings) == 1 and named in warnings[0]
    assert metric(at, "Engine") == "vLLM"


def test_unknown_but_close_gpu_shows_the_nearest_advice_and_says_so() -> None:
    at = open_page("selector", {"gpu": "H1000", "priority": "throughput"})
    assert not at.exception
    warnings = texts(at.warning)
    assert any("`gpu`" in w and "H1000" in w and "h100-80gb-sxm" in w for w in warnings)
    assert metric(at, "Quantization") == "FP8 W8A8"
    assert url_params(at)["gpu"] == "h100-80gb-sxm"


def test_apple_with_tensorrt_llm_names_the_contradiction_and_advises_llama_cpp() -> None:
    at = open_page("selector", {"gpu": "M2 Ultra", "deploy": "apple", "engine": "tensorrt-llm"})
    assert not at.exception
    assert any("TensorRT-LLM does not run on Apple M2 Ultra" in w for w in texts(at.warning))
    assert metric(at, "Engine") == "llama.cpp (llama-server)"


def test_model_that_fits_nowhere_names_the_problem_and_the_nearest_setup() -> None:
    at = open_page("selector", {"gpu": "RTX 4090", "gpus": "8", "model": "llama3.1-405b"})
    assert not at.exception
    assert metric(at, "Max sequences") == "does not fit"
    assert any("does not fit on any count" in w and "Nearest valid setup" in w for w in texts(at.warning))


def test_custom_model_with_impossible_heads_is_an_error_not_a_traceback() -> None:
    at = open_page("selector", {"model": "custom", "heads": "30", "kv_heads": "8"})
    assert not at.exception
    assert any("KV heads must divide" in e for e in texts(at.error))


# -- issue 9: every bad parameter named; the page shows what it says ----------------------------------------------

BAD_LINK = {
    "gpu": "nope",
    "model": "\x00",
    "gpus": "999",
    "context": "-5",
    "concurrency": "1e9",
    "engine": "x",
    "quant": "y",
}


def test_a_link_with_seven_bad_values_gets_one_warning_each_and_shows_the_defaults_it_names() -> None:
    at = open_page("selector", BAD_LINK)
    assert not at.exception and not at.error
    warnings = texts(at.warning)
    assert len(warnings) == len(BAD_LINK), warnings
    for alias in BAD_LINK:
        named = [w for w in warnings if f"`{alias}`" in w]
        assert len(named) == 1, (alias, warnings)
        assert "Using the default" in named[0]
    assert "'\\x00'" in next(w for w in warnings if "`model`" in w)  # the invisible byte is shown, escaped
    assert "from 1 to 4096" in next(w for w in warnings if "`concurrency`" in w)  # what is allowed
    assert "nf4" in next(w for w in warnings if "`quant`" in w)  # the allowed values are listed ...
    assert not any("nearest match" in w for w in warnings)  # ... but nothing was read as a near name
    # What the warnings say is used is what the page shows: the defaults.
    assert metric(at, "Engine") == "vLLM"
    assert metric(at, "Quantization") == "AWQ 4-bit"
    assert at.selectbox(key="selector.engine").value == "auto"
    assert at.selectbox(key="selector.quant").value == "auto"
    assert at.selectbox(key="selector.gpu").value == "a800-40gb-sxm"
    assert url_params(at) == {}


def test_quant_y_is_not_nf4() -> None:
    at = open_page("selector", {"quant": "y"})
    warnings = texts(at.warning)
    assert len(warnings) == 1 and "`quant`" in warnings[0] and "'y'" in warnings[0]
    assert "NF4" not in metric(at, "Quantization")
    assert not any("bitsandbytes" in c.value for c in _tab(at, "Launch command").code)


def test_a_near_engine_name_that_cannot_run_says_which_engine_is_shown() -> None:
    # 'exlama' is clearly ExLlamaV2, which the advisor gives no launch command for: the page says it shows vLLM.
    at = open_page("selector", {"engine": "exlama"})
    assert not at.exception
    note = next(w for w in texts(at.warning) if "`engine`" in w)
    assert "'exlama'" in note and "exllamav2" in note
    assert "the advice below is for vLLM" in note
    assert metric(at, "Engine") == "vLLM"
    assert at.selectbox(key="selector.engine").value == "exllamav2"  # the link's pin is kept, not lost


def test_a_near_engine_name_that_runs_is_what_the_page_shows() -> None:
    at = open_page("selector", {"engine": "vlm", "gpu": "H100"})
    note = next(w for w in texts(at.warning) if "`engine`" in w)
    assert "read as 'vllm'" in note and "The advice below is for vLLM." in note
    assert metric(at, "Engine") == "vLLM"
    assert url_params(at)["engine"] == "vllm"


# -- issue 9: a model from its config.json -------------------------------------------------------------------------

CONFIGS = sorted((Path(__file__).parent / "configs").glob("*.json"))


def _paste(config_text: str, link: dict[str, str] | None = None) -> AppTest:
    at = open_page("selector", link or {"model": "custom", "gpu": "h200", "gpus": "8"})
    at.text_area(key="selector.config_text").input(config_text).run()
    return at


def test_there_are_moe_and_mla_configs_to_paste() -> None:
    assert any(parse_config(p.read_text()).fields["kv_lora_rank"] for p in CONFIGS), "no MLA config fixture"
    assert any(parse_config(p.read_text()).fields["experts"] for p in CONFIGS), "no MoE config fixture"


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_a_pasted_config_fills_the_fields_the_link_and_the_models_facts(path: Path) -> None:
    fields = parse_config(path.read_text()).fields
    at = _paste(path.read_text())
    assert not at.exception
    assert not texts(at.error), texts(at.error)
    assert texts(at.success) and texts(at.success)[0].startswith(f"Read {parse_config(path.read_text()).architecture}")
    params = url_params(at)
    assert params["model"] == "custom"
    for alias in ("layers", "hidden_size", "experts", "kv_lora_rank", "sliding_window"):
        shown = at.number_input(key=f"selector.{alias}").value
        assert shown == fields[alias], alias
        if fields[alias] != getattr(AdviceRequest(), alias):
            assert params[alias] == str(fields[alias])  # the link carries the model
    experts, per_token = fields["experts"], fields["experts_per_token"]
    assert metric(at, "Experts") == (f"{experts} experts, {per_token} per token" if experts else "dense")
    if fields["kv_lora_rank"]:
        assert metric(at, "KV kind") == "MLA"
    else:
        assert metric(at, "KV kind") in {"GQA", "MHA"}
    assert metric(at, "Sliding window") == (
        f"{fields['sliding_window']:,} tokens" if fields["sliding_window"] else "none"
    )
    again = open_page("selector", params)  # the shared link opens the same model
    assert metric(again, "Experts") == metric(at, "Experts")
    assert metric(again, "Total parameters") == metric(at, "Total parameters")


def test_an_invalid_config_names_the_missing_fields_and_keeps_the_previous_model() -> None:
    moe = next(p for p in CONFIGS if parse_config(p.read_text()).fields["experts"])
    at = _paste(moe.read_text())
    before = url_params(at)
    experts = metric(at, "Experts")
    at.text_area(key="selector.config_text").input(
        '{"architectures": ["MambaForCausalLM"], "d_model": 2560, "n_layer": 64}'
    ).run()
    assert not at.exception
    error = " ".join(texts(at.error))
    assert "MambaForCausalLM" in error and "hidden_size" in error and "num_hidden_layers" in error
    assert "unchanged" in error
    assert url_params(at) == before and metric(at, "Experts") == experts  # the page keeps working on the last model
    at.text_area(key="selector.config_text").input("{not json").run()
    assert any("not valid JSON" in e for e in texts(at.error))
    assert url_params(at) == before


def test_the_custom_form_shows_the_moe_mla_and_window_fields() -> None:
    at = open_page("selector", {"model": "custom"})
    keys = {n.key for n in at.number_input}
    for alias in (
        "params_b",
        "layers",
        "hidden_size",
        "heads",
        "kv_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
        "max_context",
        "experts",
        "experts_per_token",
        "shared_experts",
        "moe_intermediate_size",
        "moe_layers",
        "active_params_b",
        "kv_lora_rank",
        "rope_head_dim",
        "sliding_window",
        "sliding_window_layers",
    ):
        assert f"selector.{alias}" in keys, alias
    labels = {n.label for n in at.number_input}
    assert "Routed experts (0 = dense model)" in labels and "Experts per token" in labels
    assert at.selectbox(key="selector.native_format").value == "bf16"
    assert at.toggle(key="selector.tie_embeddings").value is False


def test_custom_values_survive_a_visit_to_a_preset() -> None:
    at = open_page(
        "selector",
        {"model": "custom", "layers": "40", "experts": "8", "experts_per_token": "2", "moe_intermediate_size": "1024"},
    )
    assert metric(at, "Experts") == "8 experts, 2 per token"
    at.selectbox(key="selector.model").set_value("qwen2.5-7b").run()
    assert metric(at, "Experts") == "dense" and not at.error
    at.selectbox(key="selector.model").set_value("custom").run()
    assert metric(at, "Experts") == "8 experts, 2 per token"
    assert at.number_input(key="selector.layers").value == 40


def test_the_layout_names_tensor_and_expert_parallelism() -> None:
    moe = next(p for p in CONFIGS if parse_config(p.read_text()).fields["experts"])
    at = _tab(_paste(moe.read_text()), "Memory fit")
    layout = metric(at, "Layout")
    assert layout.startswith("TP ")
    assert any("Parallel layout:" in m.value and layout in m.value for m in at.markdown)


def test_a_recommendation_that_misses_the_slo_says_so_in_its_headline() -> None:
    """The handbook's A800 with 4,096 users of a 72B model cannot meet its SLO: the card's headline says it."""
    missing = open_page("selector", {"gpu": "a800", "gpus": "2", "model": "qwen2.5-72b", "concurrency": "4096"})
    assert not missing.exception
    assert "estimated to miss the SLO at concurrency 4096" in missing.subheader[0].value
    meeting = open_page("selector", {"gpu": "h100", "model": "qwen2.5-7b", "concurrency": "4"})
    assert "miss the SLO" not in meeting.subheader[0].value
