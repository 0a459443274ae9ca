"""The handbook's tables as tests: every engine-tree row, every quantization row, the gates, speculation and caching."""

import pytest

from selector import AdviceRequest, advise

# (inputs, engine, rule, runner-up) — handbook section 1.2, one row each (plus the hardware variants of a row).
ENGINE_TREE = [
    ({"deploy": "edge", "gpu": "RTX 4090"}, "llama.cpp", "engine.edge", "ollama"),
    ({"deploy": "apple", "gpu": "M2 Ultra"}, "llama.cpp", "engine.edge", "ollama"),
    ({"gpu": "H100", "priority": "latency", "build_engines": "yes"}, "tensorrt-llm", "engine.tensorrt_llm", "vllm"),
    ({"gpu": "A800", "workload": "rag"}, "sglang", "engine.prefix_reuse", "vllm"),
    ({"gpu": "A800", "workload": "agent"}, "sglang", "engine.prefix_reuse", "vllm"),
    ({"gpu": "A800", "ecosystem": "hf"}, "vllm", "engine.hf_hub", "tgi"),
    ({"gpu": "A800", "ecosystem": "chinese"}, "lmdeploy", "engine.chinese", "vllm"),
    ({"gpu": "A800", "ecosystem": "international"}, "vllm", "engine.default", "sglang"),
]


@pytest.mark.parametrize(("inputs", "engine", "rule", "runner_up"), ENGINE_TREE)
def test_engine_tree_row(inputs: dict[str, str], engine: str, rule: str, runner_up: str) -> None:
    advice = advise(AdviceRequest.model_validate(inputs))
    assert advice.engine == engine
    assert advice.runner_up == runner_up
    decision = next(d for d in advice.reasons if d.topic == "engine")
    assert decision.rule_id == rule
    assert decision.reason and decision.source.startswith("handbook 1.2")
    assert advice.switch_when


def test_hf_hub_row_names_tgi_as_the_handbooks_choice_and_says_it_is_in_maintenance() -> None:
    advice = advise(AdviceRequest(gpu="a800-40gb-sxm", ecosystem="hf"))
    decision = next(d for d in advice.reasons if d.topic == "engine")
    assert decision.handbook_choice == "TGI"
    assert "maintenance mode" in decision.reason
    assert any("maintenance mode" in t for t in advice.today_vs_handbook)


def test_tensorrt_llm_needs_nvidia_so_amd_falls_through_with_a_warning() -> None:
    advice = advise(AdviceRequest(gpu="mi300x-192gb", priority="latency", build_engines="yes"))
    assert advice.engine == "vllm"
    assert any("TensorRT-LLM needs NVIDIA" in w for w in advice.warnings)


def test_lmdeploy_does_not_run_on_amd_so_the_gate_says_so() -> None:
    advice = advise(AdviceRequest(gpu="mi300x-192gb", ecosystem="chinese"))
    assert advice.engine == "vllm"
    gate = next(d for d in advice.reasons if d.topic == "hardware gate")
    assert "LMDeploy" in gate.reason and gate.rule_id == "gate.engine_hardware"


# (inputs, quantization, rule) — handbook section 3.2, one row each, plus the gates' fallbacks.
QUANT_TABLE = [
    ({"gpu": "H100", "priority": "throughput"}, "fp8", "quant.fp8_hseries"),
    ({"gpu": "H200", "priority": "throughput"}, "fp8", "quant.fp8_hseries"),
    ({"gpu": "A100", "priority": "latency"}, "awq", "quant.general"),
    ({"gpu": "A800", "priority": "cost"}, "awq", "quant.general"),
    ({"gpu": "L40S", "priority": "latency"}, "awq", "quant.general"),
    ({"gpu": "RTX 3090"}, "awq", "quant.consumer"),
    ({"gpu": "RTX 4090"}, "awq", "quant.consumer"),
    ({"gpu": "M2 Ultra", "deploy": "apple"}, "gguf-q4_k_m", "quant.edge"),
    ({"gpu": "RTX 4090", "deploy": "edge"}, "gguf-q4_k_m", "quant.edge"),
    ({"gpu": "A800", "gpus": "4", "model": "qwen2.5-72b", "priority": "throughput"}, "w8a8-int8", "quant.smoothquant"),
    ({"gpu": "A10G", "qlora": "yes", "engine": "sglang"}, "nf4", "quant.qlora"),
    ({"gpu": "A10G", "qlora": "yes"}, "awq", "quant.general"),  # vLLM (0.28+) no longer loads bitsandbytes NF4
    ({"gpu": "MI300X"}, "fp8", "quant.fp8_no_marlin"),
]


@pytest.mark.parametrize(("inputs", "quant", "rule"), QUANT_TABLE)
def test_quantization_row(inputs: dict[str, str], quant: str, rule: str) -> None:
    advice = advise(AdviceRequest.model_validate(inputs))
    assert advice.quantization == quant
    decision = next(d for d in advice.reasons if d.topic == "quantization")
    assert decision.rule_id == rule
    assert decision.reason and decision.source


def test_fp8_on_hopper_for_throughput_names_tensorrt_llm_as_the_handbooks_engine() -> None:
    advice = advise(AdviceRequest(gpu="h100-80gb-sxm", priority="throughput"))
    decision = next(d for d in advice.reasons if d.topic == "quantization")
    assert decision.handbook_choice == "FP8 (TensorRT-LLM)"


def test_a_format_that_does_not_fit_steps_down_to_one_that_does() -> None:
    # SmoothQuant's 8-bit 72B does not fit on 2x A800 40GB; AWQ 4-bit does.
    advice = advise(AdviceRequest(gpu="a800-40gb-sxm", gpus=2, model="qwen2.5-72b", priority="throughput"))
    assert advice.quantization == "awq"
    assert any(d.rule_id == "quant.fit" for d in advice.reasons)
    assert advice.memory.fits


# (inputs, enabled, method, rule) — handbook section 4 and Q4.
SPECULATIVE = [
    ({"workload": "code"}, True, "ngram", "spec.code"),
    ({"workload": "agent", "gpu": "H100"}, True, "ngram", "spec.agent"),
    ({"workload": "chat"}, False, "none", "spec.chat"),
    ({"workload": "rag"}, False, "none", "spec.rag"),
    ({"workload": "batch"}, False, "none", "spec.batch"),
    ({"workload": "code", "concurrency": "64"}, False, "none", "spec.high_concurrency"),
    ({"workload": "code", "ecosystem": "chinese"}, False, "none", "spec.engine_no_ngram"),
    ({"workload": "code", "engine": "ollama"}, False, "none", "spec.engine_has_none"),
]


@pytest.mark.parametrize(("inputs", "enabled", "method", "rule"), SPECULATIVE)
def test_speculative_decoding(inputs: dict[str, str], enabled: bool, method: str, rule: str) -> None:
    spec = advise(AdviceRequest.model_validate(inputs)).speculative
    assert (spec.enabled, spec.method, spec.rule_id) == (enabled, method, rule)


def test_ngram_uses_the_handbooks_numbers_and_todays_vllm_flag() -> None:
    advice = advise(AdviceRequest(workload="code"))
    assert (advice.speculative.num_speculative_tokens, advice.speculative.prompt_lookup_max) == (5, 4)
    assert "--speculative-config" in advice.launch.argv
    assert "--speculative-model" not in advice.launch_command
    assert any("Measure acceptance" in w for w in advice.speculative.warnings)


def test_a_tiny_draft_for_a_huge_target_is_warned_about() -> None:
    spec = advise(AdviceRequest(gpu="h100-80gb-sxm", gpus=2, model="llama3.1-70b", workload="code")).speculative
    assert any("may accept under 40%" in w for w in spec.warnings)
    assert "EAGLE" in spec.next_step
    small = advise(AdviceRequest(model="qwen2.5-7b", workload="code")).speculative
    assert not any("under 40%" in w for w in small.warnings)


# KV cache (handbook section 5 and 6.2).
def test_fp8_kv_on_h_series_and_16_bit_on_ampere_when_memory_is_not_tight() -> None:
    assert advise(AdviceRequest(gpu="h100-80gb-sxm")).kv_cache_dtype == "fp8"
    assert advise(AdviceRequest(gpu="a100-80gb-sxm")).kv_cache_dtype == "auto"


def test_tight_memory_on_ampere_takes_each_engines_8_bit_kv() -> None:
    tight = {"gpu": "a800-40gb-sxm", "gpus": 2, "model": "llama3.1-70b", "concurrency": 64}
    assert advise(AdviceRequest.model_validate(tight)).kv_cache_dtype == "fp8"
    lmdeploy = advise(AdviceRequest.model_validate({**tight, "ecosystem": "chinese"}))
    assert lmdeploy.kv_cache_dtype == "int8"
    assert "--quant-policy" in lmdeploy.launch.argv


def test_vllm_prefix_caching_and_chunked_prefill_are_default_and_the_advisor_says_the_handbook_differs() -> None:
    advice = advise(AdviceRequest())
    assert "--enable-prefix-caching" not in advice.launch.argv
    assert "--enable-chunked-prefill" not in advice.launch.argv
    prefix = next(d for d in advice.reasons if d.topic == "prefix_caching")
    assert prefix.handbook_choice == "--enable-prefix-caching" and "default" in prefix.choice
    assert any("on by default" in t for t in advice.today_vs_handbook)


def test_lmdeploy_prefix_caching_is_off_by_default_so_the_command_turns_it_on() -> None:
    advice = advise(AdviceRequest(ecosystem="chinese"))
    assert "--enable-prefix-caching" in advice.launch.argv
    assert any("off by default" in t for t in advice.today_vs_handbook)


def test_offload_for_peaks_uses_todays_vllm_flags_not_swap_space() -> None:
    advice = advise(
        AdviceRequest(gpu="a800-40gb-sxm", gpus=2, model="llama3.1-70b", priority="throughput", concurrency=64)
    )
    assert advice.kv_offload_gb is not None
    assert "--kv-offloading-backend" in advice.launch.argv
    assert "--swap-space" not in advice.launch_command
    offload = next(d for d in advice.reasons if d.topic == "kv_offload")
    assert offload.handbook_choice == "--swap-space 16"
    assert "does not let more run at once" in offload.reason, "offload keeps evicted KV; it adds no running capacity"


def test_the_estimate_counts_the_gpu_cache_alone_whatever_the_offload_advice() -> None:
    from perf import PerfRequest, estimate

    request = AdviceRequest(gpu="a800-40gb-sxm", gpus=2, model="llama3.1-70b", priority="throughput", concurrency=64)
    advice = advise(request)
    assert advice.kv_offload_gb
    result = estimate(
        PerfRequest(gpu="a800-40gb-sxm", gpus=2, model="llama3.1-70b", engine=advice.engine, quant=advice.quantization)
    )
    per_sequence = advice.memory.context_tokens
    assert result.kv_capacity_tokens // per_sequence <= advice.memory.max_concurrent_sequences + 1


def test_every_decision_carries_a_rule_a_reason_and_a_source() -> None:
    for inputs, *_ in ENGINE_TREE + QUANT_TABLE:
        for decision in advise(AdviceRequest.model_validate(inputs)).reasons:
            assert decision.rule_id and decision.reason and decision.source, decision


def test_paged_kv_fits_about_four_times_the_sequences_that_end_at_a_quarter_of_the_context() -> None:
    """Handbook 5.1 / Q1: PagedAttention's 16-token blocks hold only what a sequence fills (3-4x the requests)."""
    advice = advise(AdviceRequest.model_validate({"gpu": "A800", "model": "qwen2.5-7b", "context": "2048"}))
    paging = next(d for d in advice.reasons if d.topic == "kv_paging")
    full = advice.memory.max_concurrent_sequences
    assert paging.rule_id == "kv.paged" and "16-token blocks" in paging.choice
    assert f"about {full * 4} sequences fit instead of {full}" in paging.reason  # 512 of 2048 tokens used
    assert "5.1" in paging.source


def test_engines_without_paged_kv_get_no_paging_claim() -> None:
    advice = advise(AdviceRequest.model_validate({"gpu": "RTX 4090", "deploy": "edge", "model": "qwen2.5-7b"}))
    assert advice.engine == "llama.cpp"
    assert all(d.topic != "kv_paging" for d in advice.reasons)
