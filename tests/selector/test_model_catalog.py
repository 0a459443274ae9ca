"""The model catalog: sourced rows, common names, architecture numbers that agree with published config.json files."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from catalog.models import CHECKPOINT_COLUMNS, ModelSpec, find_model, load_models

CONFIGS = Path(__file__).parent / "configs"
FIXTURES = sorted(CONFIGS.glob("*.json"))
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

# Gemma3TextConfig defaults (huggingface/transformers models/gemma3/configuration_gemma3.py): the published
# gemma-3-*-it files leave these keys out of text_config.
GEMMA3_TEXT_DEFAULTS = {
    "vocab_size": 262_208,
    "max_position_embeddings": 131_072,
    "tie_word_embeddings": True,
    "sliding_window_pattern": 6,
}
# Llama 4 puts a global (NoPE, full attention) layer every 4th layer; the others use chunked local attention.
LLAMA4_NO_ROPE_LAYER_INTERVAL = 4

COMMON_NAMES = [
    ("deepseek-v3", "deepseek-v3"),
    ("DeepSeek-R1", "deepseek-r1"),
    ("qwen3-235b-a22b", "qwen3-235b-a22b"),
    ("Qwen3-30B-A3B", "qwen3-30b-a3b"),
    ("gpt-oss-120b", "gpt-oss-120b"),
    ("gpt-oss-20b", "gpt-oss-20b"),
    ("Llama 4 Scout", "llama4-scout"),
    ("llama 4 maverick", "llama4-maverick"),
    ("kimi k2", "kimi-k2"),
    ("glm-4.5", "glm-4.5"),
    ("glm-4.5-air", "glm-4.5-air"),
    ("mixtral 8x7b", "mixtral-8x7b"),
    ("qwen3 1.7b", "qwen3-1.7b"),
    ("qwen3 4b", "qwen3-4b"),
    ("qwen3 14b", "qwen3-14b"),
    ("gemma 3 4b", "gemma-3-4b"),
    ("gemma 3 12b", "gemma-3-12b"),
    ("gemma 3 27b", "gemma-3-27b"),
    ("mistral small", "mistral-small-3.2-24b"),
    ("llama 3.3 70b", "llama3.3-70b"),
    ("internlm3", "internlm3-8b"),
    ("internlm2.5 7b", "internlm2.5-7b"),
    ("openai/gpt-oss-120b", "gpt-oss-120b"),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama4-scout"),
]

MOE_IDS = [m.id for m in load_models() if m.is_moe]


def named_checkpoints(model: ModelSpec) -> list[str]:
    """Every published artefact a row names besides its official repo."""
    columns = [*CHECKPOINT_COLUMNS.values(), "eagle_repo", "ollama_tag"]
    return [value for value in (str(getattr(model, c)) for c in columns) if value]


def windowed_layers(text: dict[str, Any], layers: int) -> tuple[int, int]:
    """(window, layers that use it) as a config.json states them; (0, 0) when every layer sees the whole context."""
    if "layer_types" in text:
        local = sum(kind in ("sliding_attention", "chunked_attention") for kind in text["layer_types"])
        return (text.get("sliding_window") or text.get("attention_chunk_size") or 0, local) if local else (0, 0)
    if text.get("attention_chunk_size"):
        if "no_rope_layers" in text:
            return text["attention_chunk_size"], sum(text["no_rope_layers"])
        return text["attention_chunk_size"], layers - layers // LLAMA4_NO_ROPE_LAYER_INTERVAL
    if not text.get("sliding_window") or text.get("use_sliding_window") is False:
        return 0, 0
    pattern = text.get("sliding_window_pattern")
    return text["sliding_window"], (layers - layers // pattern if pattern else layers)


def moe_layer_count(text: dict[str, Any], layers: int) -> int:
    """Layers that hold routed experts: DeepSeek/GLM first_k_dense_replace, Llama 4 interleave, Qwen sparse step."""
    if "first_k_dense_replace" in text:
        return layers - text["first_k_dense_replace"]
    if "interleave_moe_layer_step" in text:
        return layers // text["interleave_moe_layer_step"]
    step = text.get("decoder_sparse_step", 1)
    dense = set(text.get("mlp_only_layers") or [])
    return sum(1 for i in range(layers) if i not in dense and (i + 1) % step == 0)


def published_architecture(config: dict[str, Any]) -> dict[str, Any]:
    """The catalog fields a config.json states, read directly (nested text_config, MLA, expert layouts)."""
    text = dict(config.get("text_config", config))
    if text.get("model_type") == "gemma3_text":
        text = {**GEMMA3_TEXT_DEFAULTS, **text}
    layers = text["num_hidden_layers"]
    found: dict[str, Any] = {"architecture": config["architectures"][0], "layers": layers}
    for field, key in [
        ("hidden_size", "hidden_size"),
        ("attention_heads", "num_attention_heads"),
        ("kv_heads", "num_key_value_heads"),
        ("vocab_size", "vocab_size"),
        ("max_context", "max_position_embeddings"),
    ]:
        if text.get(key) is not None:
            found[field] = text[key]
    tie = text.get("tie_word_embeddings", config.get("tie_word_embeddings"))
    if tie is not None:
        found["tie_word_embeddings"] = tie
    if "kv_lora_rank" in text:  # MLA: the cache holds a latent of kv_lora_rank plus the decoupled RoPE key
        found |= {"kv_lora_rank": text["kv_lora_rank"], "qk_rope_head_dim": text["qk_rope_head_dim"]}
        found["head_dim"] = text["v_head_dim"]
    elif text.get("head_dim"):
        found["head_dim"] = text["head_dim"]
    elif "num_attention_heads" in found:
        found["head_dim"] = found["hidden_size"] // found["attention_heads"]
    experts = text.get("n_routed_experts") or text.get("num_experts") or text.get("num_local_experts") or 0
    if experts:
        moe_layers = moe_layer_count(text, layers)
        llama4 = text.get("model_type") == "llama4_text"
        found |= {
            "experts": experts,
            "experts_per_token": text["num_experts_per_tok"],
            "shared_experts": text.get("n_shared_experts", 1 if llama4 else 0),
            # Mixtral, gpt-oss and Llama 4 call the expert width intermediate_size
            "moe_intermediate_size": text.get("moe_intermediate_size") or text["intermediate_size"],
            "moe_layers": moe_layers,
            "intermediate_size": 0
            if moe_layers == layers
            else text.get("intermediate_size_mlp") or text["intermediate_size"],
        }
    else:
        found["intermediate_size"] = text["intermediate_size"]
    found["sliding_window"], found["sliding_window_layers"] = windowed_layers(text, layers)
    quant = (config.get("quantization_config") or {}).get("quant_method")
    found["native_format"] = quant if quant in ("fp8", "mxfp4") else "bf16"
    return found


def test_the_catalog_loads_and_ids_are_unique() -> None:
    models = load_models()
    ids = [m.id for m in models]
    assert len(ids) == len(set(ids))
    assert len(models) >= 35


def test_every_row_has_a_source_and_checkpoints_have_theirs() -> None:
    for model in load_models():
        assert model.source, model.id
        assert model.hf_repo and REPO_ID.match(model.hf_repo), model.id
        if named_checkpoints(model):
            assert model.checkpoints_source, f"{model.id} names checkpoints without checkpoints_source"


def test_checkpoint_columns_hold_repository_ids_and_ollama_tags_hold_tags() -> None:
    for model in load_models():
        for column in [*CHECKPOINT_COLUMNS.values(), "eagle_repo"]:
            value = str(getattr(model, column))
            assert not value or REPO_ID.match(value), f"{model.id}.{column} = {value!r}"
            assert value != model.hf_repo, f"{model.id}.{column} repeats the official repo"
        assert not model.ollama_tag or re.match(r"^[a-z0-9.-]+(:[a-z0-9._-]+)?$", model.ollama_tag), model.id


def test_drafts_share_the_tokenizer_family_and_are_smaller() -> None:
    for model in load_models():
        if model.draft_model:
            draft = find_model(model.draft_model)
            assert draft.family == model.family, model.id
            assert draft.params < model.active_params, model.id


@pytest.mark.parametrize(("query", "expected"), COMMON_NAMES)
def test_todays_models_are_found_by_their_common_names(query: str, expected: str) -> None:
    assert find_model(query).id == expected


@pytest.mark.parametrize("model_id", MOE_IDS)
def test_moe_rows_have_fewer_active_than_total_parameters(model_id: str) -> None:
    model = find_model(model_id)
    assert 0 < model.active_params_b < model.params_b
    assert model.moe_intermediate_size > 0
    assert 0 < model.moe_layers <= model.layers


@pytest.mark.parametrize("model_id", MOE_IDS)
def test_routed_experts_account_for_the_published_active_count(model_id: str) -> None:
    """Total minus the routed experts plus the share a token uses lands within 10% of the model card's active count.

    This checks moe_layers and moe_intermediate_size against the card. Cards differ on whether the input embedding
    lookup is 'active' (OpenAI's gpt-oss table leaves it out), so either convention may match.
    """
    model = find_model(model_id)
    routed = model.routed_expert_params
    assert 0 < routed < model.params
    estimate = model.params - routed + routed * model.experts_per_token / model.experts
    embedding = model.vocab_size * model.hidden_size
    error = min(abs(estimate - model.active_params), abs(estimate - embedding - model.active_params))
    assert error / model.active_params < 0.10, f"{model_id}: estimated {estimate / 1e9:.2f}B active"


def test_dense_rows_carry_no_expert_fields() -> None:
    for model in load_models():
        if not model.is_moe:
            assert model.active_params_b == 0, model.id
            assert (model.moe_intermediate_size, model.shared_experts, model.moe_layers) == (0, 0, 0), model.id
            assert model.intermediate_size > 0, model.id


def test_attention_kinds_and_windows() -> None:
    assert {m.id for m in load_models() if m.kv_kind == "mla"} == {"deepseek-v3", "deepseek-r1", "kimi-k2"}
    assert find_model("internlm3").kv_kind == "gqa"
    for model in load_models():
        if model.sliding_window:
            assert 0 < model.sliding_window_layers < model.layers, model.id
            assert model.full_attention_layers == model.layers - model.sliding_window_layers
        else:
            assert model.sliding_window_layers == 0, model.id
    assert (find_model("gpt-oss-120b").sliding_window, find_model("gpt-oss-120b").full_attention_layers) == (128, 18)
    assert (find_model("gemma 3 27b").sliding_window, find_model("gemma 3 27b").full_attention_layers) == (1024, 10)
    assert find_model("llama 4 scout").full_attention_layers == 12


def test_the_official_checkpoint_answers_for_the_native_format() -> None:
    assert find_model("deepseek-v3").checkpoint("fp8") == "deepseek-ai/DeepSeek-V3"
    assert find_model("kimi k2").checkpoint("fp8") == "moonshotai/Kimi-K2-Instruct"
    assert find_model("gpt-oss-120b").checkpoint("mxfp4") == "openai/gpt-oss-120b"
    assert find_model("gpt-oss-120b").checkpoint("bf16") == "unsloth/gpt-oss-120b-BF16"
    assert find_model("deepseek-r1").checkpoint("bf16") == ""
    assert find_model("llama 4 maverick").checkpoint("fp8") == "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"
    assert find_model("qwen3-30b-a3b").checkpoint("gptq") == "Qwen/Qwen3-30B-A3B-GPTQ-Int4"


def test_every_fixture_names_a_catalog_row_and_is_listed_in_sources() -> None:
    ids = {m.id for m in load_models()}
    sources = (CONFIGS / "SOURCES.md").read_text(encoding="utf-8")
    assert len(FIXTURES) >= 15
    for path in FIXTURES:
        assert path.stem in ids, path.name
        assert f"`{path.name}`" in sources, path.name


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_catalog_rows_match_their_published_config(path: Path) -> None:
    config = json.loads(path.read_text(encoding="utf-8"))
    model = find_model(path.stem)
    expected = published_architecture(config)
    actual = {field: getattr(model, field) for field in expected}
    assert actual == expected
