"""Each decision cites the sources of the facts it used, not every source of the engine's catalog row."""

import pytest

from catalog import get_engine
from selector import AdviceRequest, advise


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
def test_no_decision_ends_with_the_engines_whole_source_list(engine: str) -> None:
    advice = advise(AdviceRequest(gpu="H100", model="qwen2.5-7b", engine=engine))
    whole = get_engine(engine).source
    assert advice.engine == engine
    assert all(whole not in d.source for d in advice.reasons), "a decision cites the engine's whole row"


def test_prefix_caching_cites_the_prefix_cache_not_the_gguf_or_bitsandbytes_plugins() -> None:
    advice = advise(AdviceRequest(gpu="H100", model="qwen2.5-7b", engine="vllm"))
    by_topic = {d.topic: d.source for d in advice.reasons}
    assert "v1_guide.md" in by_topic["prefix_caching"]
    for topic in ("prefix_caching", "chunked_prefill", "kv_cache_dtype", "batching"):
        assert "gguf" not in by_topic[topic].lower() and "bitsandbytes" not in by_topic[topic].lower()


def test_an_engine_gate_cites_the_engines_quantization_sources() -> None:
    advice = advise(AdviceRequest(gpu="RTX 4090", model="qwen2.5-7b", engine="vllm", quant="nf4"))
    gates = [d for d in advice.reasons if d.topic in {"engine gate", "architecture gate", "quantization"}]
    assert gates
    assert all("speculative_decoding" not in d.source and "kv_offloading" not in d.source for d in gates)
