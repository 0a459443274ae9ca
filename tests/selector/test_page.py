"""The advisor page under AppTest: smoke, URL round trip, bad links, contradictions, and the "Price this" link."""

import pytest

from tests.pages.apptest import metric, open_page, texts


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def _params(at: object) -> dict[str, str]:
    return {
        k: at.query_params[k][0] if isinstance(at.query_params[k], list) else at.query_params[k]
        for k in at.query_params
    }


def test_default_page_recommends_vllm_with_awq_on_the_handbooks_a800() -> None:
    at = open_page("selector")
    assert not at.exception
    assert metric(at, "Engine") == "vLLM"
    assert metric(at, "Quantization") == "AWQ 4-bit"
    assert not at.error and not at.warning
    assert any("vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ" in c.value for c in at.code)
    assert len(at.dataframe[0].value) >= 8  # the engine comparison table
    assert _params(at) == {}  # defaults are omitted from the link


def test_link_reproduces_the_advice_and_editing_rewrites_the_link() -> None:
    link = {"gpu": "H100", "workload": "rag", "priority": "latency", "concurrency": "32"}
    at = open_page("selector", link)
    assert metric(at, "Engine") == "SGLang"
    assert _params(at) == {"gpu": "h100-80gb-sxm", "workload": "rag", "concurrency": "32"}
    at.selectbox(key="selector.ecosystem").set_value("hf").run()
    at.selectbox(key="selector.workload").set_value("chat").run()
    at.toggle(key="selector.build_engines").set_value(True).run()
    params = _params(at)
    assert params == {"gpu": "h100-80gb-sxm", "ecosystem": "hf", "build_engines": "yes", "concurrency": "32"}
    assert metric(at, "Engine") == "TensorRT-LLM"
    again = open_page("selector", params)
    assert metric(again, "Engine") == "TensorRT-LLM"
    assert again.toggle(key="selector.build_engines").value is True


def test_price_this_links_to_the_cost_page_with_gpu_count_and_catalog_price() -> None:
    at = open_page("selector", {"gpu": "H100", "gpus": "2", "model": "llama3.1-70b"})
    link = next(p for p in at.get("page_link") if p.proto.label == "Price this")
    assert link.proto.page == "tco"
    assert link.proto.query_string == "gpu=h100-80gb-sxm&gpus=2&price=1.99&currency=USD"


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
    assert _params(at)["gpu"] == "h100-80gb-sxm"


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
