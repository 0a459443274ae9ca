"""Catalog facts: model configurations, KV bytes per token, weight sizes, engines, and forgiving names."""

import pytest

from catalog import (
    GpuLookupError,
    find_engine,
    find_gpu,
    find_model,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    load_engines,
    load_models,
    weights_gb,
)
from catalog.errors import UnknownModelError
from selector import AdviceRequest, gate, load_rules

# Published Hugging Face config.json values: layers, attention heads, KV heads, head size, context.
CONFIGS = [
    ("qwen2.5-3b", 36, 16, 2, 128, 32768),
    ("qwen2.5-7b", 28, 28, 4, 128, 32768),
    ("qwen2.5-14b", 48, 40, 8, 128, 32768),
    ("qwen2.5-32b", 64, 40, 8, 128, 32768),
    ("qwen2.5-72b", 80, 64, 8, 128, 32768),
    ("qwen3-8b", 36, 32, 8, 128, 40960),
    ("qwen3-32b", 64, 64, 8, 128, 40960),
    ("llama3.1-8b", 32, 32, 8, 128, 131072),
    ("llama3.1-70b", 80, 64, 8, 128, 131072),
]


@pytest.mark.parametrize(("model_id", "layers", "heads", "kv_heads", "head_dim", "context"), CONFIGS)
def test_model_presets_carry_their_published_configuration(
    model_id: str, layers: int, heads: int, kv_heads: int, head_dim: int, context: int
) -> None:
    m = find_model(model_id)
    assert (m.layers, m.attention_heads, m.kv_heads, m.head_dim, m.max_context) == (
        layers,
        heads,
        kv_heads,
        head_dim,
        context,
    )
    assert m.source


KV_BYTES = [
    ("llama3.1-8b", "auto", 131_072),  # 128 KiB per token, as published
    ("llama3.1-8b", "fp8", 65_536),
    ("llama3.1-70b", "auto", 327_680),
    ("qwen2.5-7b", "auto", 57_344),
    ("qwen2.5-3b", "auto", 36_864),
    ("qwen3-8b", "auto", 147_456),
    ("qwen2.5-72b", "fp8", 163_840),
    ("llama3.1-8b", "q8_0", 69_632),
]


@pytest.mark.parametrize(("model_id", "dtype", "expected"), KV_BYTES)
def test_kv_bytes_per_token(model_id: str, dtype: str, expected: int) -> None:
    assert kv_bytes_per_token(find_model(model_id), dtype) == expected


def test_tensor_parallel_divides_kv_heads_and_replicates_when_there_are_fewer_heads_than_gpus() -> None:
    llama = find_model("llama3.1-8b")
    assert kv_bytes_per_token_per_gpu(llama, "auto", 2) == 65_536
    assert kv_bytes_per_token_per_gpu(llama, "auto", 8) == 16_384
    qwen3b = find_model("qwen2.5-3b")  # 2 KV heads over 4 GPUs: each GPU keeps one
    assert kv_bytes_per_token_per_gpu(qwen3b, "auto", 4) == 18_432


def test_handbooks_7b_example_is_the_mha_figure_while_gqa_models_need_far_less() -> None:
    # The handbook's "7B at 2048 tokens ~ 1.5 GB" assumes full multi-head attention; Qwen2.5-7B has 4 KV heads.
    per_sequence_gb = kv_bytes_per_token(find_model("qwen2.5-7b")) * 2048 / 1e9
    assert per_sequence_gb == pytest.approx(0.117, abs=0.001)


@pytest.mark.parametrize(
    ("model_id", "quant", "published_gb"),
    [
        ("qwen2.5-7b", "bf16", 15.2),
        ("qwen2.5-7b", "awq", 5.58),
        ("llama3.1-8b", "bf16", 16.1),
        ("llama3.1-8b", "gguf-q4_k_m", 4.92),
        ("llama3.1-70b", "bf16", 141.1),
    ],
)
def test_weight_sizes_match_published_checkpoints(model_id: str, quant: str, published_gb: float) -> None:
    assert weights_gb(find_model(model_id), quant) == pytest.approx(published_gb, rel=0.04)


GATES = [
    ("fp8", "H100", True, False),
    ("fp8", "L40S", True, False),
    ("fp8", "A100", True, True),
    ("fp8", "M2 Ultra", False, False),
    ("nvfp4", "B200", True, False),
    ("nvfp4", "RTX 5090", True, False),
    ("nvfp4", "H100", False, False),
    ("awq", "A800", True, False),
    ("awq", "MI300X", False, False),
    ("awq", "M4 Max", False, False),
    ("gguf-q4_k_m", "M4 Max", True, False),
    ("w8a8-int8", "A100", True, False),
]


@pytest.mark.parametrize(("method", "gpu", "allowed", "degraded"), GATES)
def test_architecture_gates(method: str, gpu: str, allowed: bool, degraded: bool) -> None:
    result = gate(method, find_gpu(gpu))
    assert (result.allowed, result.degraded) == (allowed, degraded), result.reason
    assert result.reason


def test_fp8_on_ampere_runs_weight_only_and_the_gate_says_so() -> None:
    assert "W8A16" in gate("fp8", find_gpu("A100")).reason


def test_marlin_needs_sm80_and_older_cards_fall_back_or_are_refused() -> None:
    a100 = find_gpu("A100")
    t4 = a100.model_copy(update={"name": "T4", "compute_capability": "7.5", "marlin_kernels": False})
    v100 = a100.model_copy(update={"name": "V100", "compute_capability": "7.0", "marlin_kernels": False})
    assert (gate("awq", t4).allowed, gate("awq", t4).degraded) == (True, True)
    assert "sm80" in gate("awq", t4).reason
    assert not gate("awq", v100).allowed
    assert not gate("fp8", v100).allowed


def test_engine_catalog_has_at_least_eight_engines_with_sources_and_dates() -> None:
    engines = load_engines()
    assert len(engines) >= 8
    for engine in engines:
        assert engine.source and engine.source_snapshot and engine.status and engine.openai_server
    assert find_engine("tgi").lifecycle == "maintenance"
    assert find_engine("lmdeploy").prefix_caching_default == "off"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("A800", "a800-40gb-sxm"),
        ("a800-40gb", "a800-40gb-sxm"),
        ("NVIDIA A800 40GB", "a800-40gb-sxm"),
        ("h100", "h100-80gb-sxm"),
        ("rtx 4090", "rtx-4090-24gb"),
    ],
)
def test_gpu_names_are_matched_forgivingly(query: str, expected: str) -> None:
    assert AdviceRequest(gpu=query).gpu == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("qwen2.5-7b", "qwen2.5-7b"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("Qwen2.5 7B", "qwen2.5-7b"),
        ("llama 3.1 70b", "llama3.1-70b"),
        ("Meta-Llama-3.1-8B-Instruct", "llama3.1-8b"),
        ("qwen3-32b", "qwen3-32b"),
    ],
)
def test_model_names_are_matched_forgivingly(query: str, expected: str) -> None:
    assert find_model(query).id == expected


def test_unknown_or_ambiguous_names_list_the_close_matches() -> None:
    with pytest.raises(UnknownModelError, match=r"did you mean: .*qwen2\.5-7b"):
        find_model("qwen2.5")
    with pytest.raises(GpuLookupError, match="h100-80gb-sxm"):
        find_gpu("H1000")


def test_every_rule_has_an_id_a_reason_and_a_source_and_every_table_ends_with_a_catch_all() -> None:
    book = load_rules()
    ids = [r.id for r in book.all_rules()]
    assert len(ids) == len(set(ids))
    assert all(r.reason and r.source for r in book.all_rules())
    for table in (book.engine, book.quantization, book.speculative, book.kv_cache):
        assert table[-1].when == {}


def test_every_model_has_a_source_and_drafts_point_at_presets() -> None:
    ids = {m.id for m in load_models()}
    for model in load_models():
        assert model.source
        assert not model.draft_model or model.draft_model in ids
