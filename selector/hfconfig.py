"""A Hugging Face config.json read into the advisor's custom-model fields (MoE, MLA, sliding windows), offline."""

import json
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from i18n import Translate, identity
from selector.errors import SelectorError

# Architectures whose config.json keys this parser knows, by the family name it reports.
KNOWN_ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Mistral3ForConditionalGeneration": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen2MoeForCausalLM": "qwen2-moe",
    "Qwen3MoeForCausalLM": "qwen3-moe",
    "MixtralForCausalLM": "mixtral",
    "DeepseekV2ForCausalLM": "deepseek",
    "DeepseekV3ForCausalLM": "deepseek",
    "KimiK2ForCausalLM": "deepseek",
    "GptOssForCausalLM": "gpt-oss",
    "Gemma3ForCausalLM": "gemma3",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Gemma2ForCausalLM": "gemma3",
    "GlmForCausalLM": "glm",
    "Glm4ForCausalLM": "glm",
    "Glm4MoeForCausalLM": "glm-moe",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4",
    "InternLM2ForCausalLM": "internlm",
    "InternLM3ForCausalLM": "internlm",
}
DEFAULTS_TOML = Path(__file__).parent / "data" / "config_defaults.toml"
REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "max_position_embeddings")
NATIVE_FORMATS = {"fp8": "fp8", "mxfp4": "mxfp4"}  # quantization_config.quant_method -> the format it ships in


class ConfigError(SelectorError):
    """A config.json that cannot describe a model: not JSON, or without the fields named in `missing`."""

    def __init__(self, message: str, missing: tuple[str, ...] = ()) -> None:
        self.missing = missing
        super().__init__(message)


class ParsedConfig(BaseModel):
    """What a config.json says, as the advisor's custom-model URL parameters, with notes on what was assumed."""

    model_config = ConfigDict(frozen=True)

    architecture: str
    family: str
    fields: dict[str, int | float | str]
    notes: tuple[str, ...] = ()


def _load(source: str | bytes | Mapping[str, Any], tr: Translate = identity) -> dict[str, Any]:
    if isinstance(source, Mapping):
        return dict(source)
    try:
        data = json.loads(source)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(tr("config.json is not valid JSON: {problem}").format(problem=exc)) from exc
    if not isinstance(data, dict):
        raise ConfigError(tr("config.json must be one JSON object (the model's configuration)."))
    return data


@cache
def family_defaults() -> dict[str, dict[str, Any]]:
    """Per family, the config class defaults a published config.json may omit."""
    with DEFAULTS_TOML.open("rb") as handle:
        data = tomllib.load(handle)
    return {family: {k: v for k, v in values.items() if k != "source"} for family, values in data.items()}


def _text_config(data: dict[str, Any]) -> dict[str, Any]:
    """Multimodal configs nest the language model under text_config: read that, keeping top-level names."""
    text = data.get("text_config")
    if isinstance(text, dict):
        merged = {k: v for k, v in data.items() if k != "text_config"}
        merged.update(text)
        return merged
    return data


def _int(config: Mapping[str, Any], *keys: str, default: int = 0) -> int:
    for key in keys:
        value = config.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float) and value >= 0:
            return int(value)
    return default


def _sliding(config: Mapping[str, Any], family: str, layers: int, tr: Translate = identity) -> tuple[int, int, str]:
    """(window, layers that use it, how it was read); (0, 0, '') when every layer sees the whole context."""
    types = config.get("layer_types")
    window = _int(config, "sliding_window")
    if family == "llama4" and _int(config, "attention_chunk_size"):
        chunk = _int(config, "attention_chunk_size")
        no_rope = config.get("no_rope_layers") or []
        local = sum(1 for flag in no_rope if flag) if no_rope else layers - layers // 4
        note = tr("chunked local attention of {chunk} tokens on {local} of {layers} layers")
        return chunk, local, note.format(chunk=chunk, local=local, layers=layers)
    if isinstance(types, list) and window:
        local = sum(1 for t in types if str(t) in {"sliding_attention", "chunked_attention"})
        return (
            (
                window,
                local,
                "layer_types: "
                + tr("{local} of {layers} layers slide over {window} tokens").format(
                    local=local, layers=layers, window=window
                ),
            )
            if local
            else (0, 0, "")
        )
    if not window or config.get("use_sliding_window") is False:
        return 0, 0, ""
    pattern = _int(config, "sliding_window_pattern")
    if pattern > 1:
        local = layers - layers // pattern
        slide = tr("{local} of {layers} layers slide over {window} tokens").format(
            local=local, layers=layers, window=window
        )
        return window, local, f"sliding_window_pattern {pattern}: {slide}"
    return window, layers, tr("every layer slides over {window} tokens").format(window=window)


def _attention_params(config: Mapping[str, Any], hidden: int, heads: int, kv_heads: int, head_dim: int) -> int:
    """Attention weights of one layer (MLA's low-rank projections, or Q, K, V and O)."""
    kv_rank = _int(config, "kv_lora_rank")
    if kv_rank:
        rope = _int(config, "qk_rope_head_dim")
        nope = _int(config, "qk_nope_head_dim")
        v_dim = _int(config, "v_head_dim", default=head_dim)
        q_rank = _int(config, "q_lora_rank")
        q_head = heads * (nope + rope)
        query = hidden * q_rank + q_rank * q_head if q_rank else hidden * q_head
        return query + hidden * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + heads * v_dim * hidden
    return hidden * head_dim * (heads + 2 * kv_heads) + heads * head_dim * hidden


def _experts(config: Mapping[str, Any], family: str, layers: int) -> tuple[int, int, int, int, int, int]:
    """(routed experts, experts per token, shared experts, one expert's MLP size, shared MLP size, MoE layers)."""
    experts = _int(config, "n_routed_experts", "num_experts", "num_local_experts")
    if not experts:
        return 0, 0, 0, 0, 0, 0
    per_token = _int(config, "num_experts_per_tok", "experts_per_token", "moe_topk")
    expert_size = _int(config, "moe_intermediate_size")
    if family in {"mixtral", "gpt-oss", "llama4"} or not expert_size:
        expert_size = _int(config, "intermediate_size")
    shared = _int(config, "n_shared_experts", "num_shared_experts")
    shared_size = expert_size
    if _int(config, "shared_expert_intermediate_size"):
        shared, shared_size = 1, _int(config, "shared_expert_intermediate_size")
    if family == "llama4":
        shared = 1
    if "first_k_dense_replace" in config:
        moe_layers = layers - _int(config, "first_k_dense_replace")
    elif family == "llama4":
        step = max(1, _int(config, "interleave_moe_layer_step", default=1))
        moe_layers = len(config.get("moe_layers") or []) or layers // step
    else:
        step = max(1, _int(config, "decoder_sparse_step", default=1))
        dense_only = len(config.get("mlp_only_layers") or [])
        moe_layers = layers // step - dense_only
    return experts, per_token, shared, expert_size, shared_size, moe_layers


def _require(config: Mapping[str, Any], architecture: str, tr: Translate) -> None:
    """ConfigError naming the fields without which a model cannot be sized."""
    missing = tuple(key for key in REQUIRED if _int(config, key) <= 0)
    if missing:
        known = ", ".join(sorted(set(KNOWN_ARCHITECTURES.values())))
        what = (
            tr("architecture '{architecture}'").format(architecture=architecture)
            if architecture
            else tr("a config without 'architectures'")
        )
        raise ConfigError(
            tr(
                "config.json ({what}) lacks {missing}; the advisor needs them to size the model (it reads the "
                "standard fields of these families: {known})."
            ).format(what=what, missing=", ".join(missing), known=known),
            missing,
        )


def _param_counts(
    *,
    layers: int,
    hidden: int,
    vocab: int,
    tie: bool,
    attention: int,
    dense_size: int,
    experts: tuple[int, int, int, int, int, int],
) -> tuple[int, int]:
    """(total, active) parameters: embeddings, attention, dense and expert MLPs, routers."""
    routed_experts, per_token, shared, expert_size, shared_size, moe_layers = experts
    embeddings = vocab * hidden * (1 if tie else 2)
    dense = (layers - moe_layers) * 3 * hidden * dense_size
    expert_mlp = 3 * hidden * expert_size
    shared_mlp = shared * 3 * hidden * shared_size
    routed = moe_layers * routed_experts * expert_mlp
    total = embeddings + layers * attention + dense + routed + moe_layers * (shared_mlp + hidden * routed_experts)
    # Active: what one token computes with; the input embedding is a lookup, so it is left out (OpenAI's and
    # DeepSeek's published counts agree with this within a few percent).
    active = total - routed + moe_layers * per_token * expert_mlp - vocab * hidden
    return total, active


# long: it names each of the 22 URL fields once, from the config.json keys read just above them.
def parse_config(source: str | bytes | Mapping[str, Any], *, name: str = "", tr: Translate = identity) -> ParsedConfig:
    """Read a config.json (text or parsed) into custom-model fields; ConfigError names what is missing.

    `tr` words the notes and the errors (English by default, as the CLI and the tests read them).
    """
    raw = _load(source, tr)
    architectures = raw.get("architectures") or []
    architecture = str(architectures[0]) if isinstance(architectures, list) and architectures else ""
    family = KNOWN_ARCHITECTURES.get(architecture, "")
    config = {**family_defaults().get(family, {}), **_text_config(raw)}
    _require(config, architecture, tr)
    notes: list[str] = []
    if not family:
        notes.append(
            tr(
                "Architecture '{architecture}' is not one of the known families; read from the standard fields only "
                "(check experts, MLA and sliding windows by hand)."
            ).format(architecture=architecture or "unknown")
        )
    hidden, layers = _int(config, "hidden_size"), _int(config, "num_hidden_layers")
    heads = _int(config, "num_attention_heads")
    kv_heads = _int(config, "num_key_value_heads", default=heads) or heads
    kv_rank = _int(config, "kv_lora_rank")
    head_dim = _int(config, "v_head_dim") if kv_rank else _int(config, "head_dim")
    head_dim = head_dim or hidden // heads
    vocab = _int(config, "vocab_size")
    tie = config.get("tie_word_embeddings") is True
    experts, per_token, shared, expert_size, shared_size, moe_layers = _experts(config, family, layers)
    dense_size = (
        _int(config, "intermediate_size_mlp", "intermediate_size") if experts else _int(config, "intermediate_size")
    )
    if experts and family in {"mixtral", "gpt-oss"}:
        dense_size = 0
    window, window_layers, window_note = _sliding(config, family, layers, tr)
    if window_note:
        notes.append(window_note)

    total, active = _param_counts(
        layers=layers,
        hidden=hidden,
        vocab=vocab,
        tie=tie,
        attention=_attention_params(config, hidden, heads, kv_heads, head_dim),
        dense_size=dense_size,
        experts=(experts, per_token, shared, expert_size, shared_size, moe_layers),
    )
    if "vision_config" in raw:
        notes.append(tr("The vision encoder is not counted: sizes are the language model's."))
    method = str((config.get("quantization_config") or {}).get("quant_method", "")).lower()
    native = NATIVE_FORMATS.get(method, "bf16")
    if method and method not in NATIVE_FORMATS:
        notes.append(
            tr("The checkpoint is quantized ({method}); pin that quantization to size it as published.").format(
                method=method
            )
        )
    fields: dict[str, int | float | str] = {
        "params_b": round(total / 1e9, 3),
        "active_params_b": round(active / 1e9, 3) if experts else 0.0,
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": heads if kv_rank else kv_heads,
        "head_dim": head_dim,
        "intermediate_size": dense_size,
        "vocab_size": vocab,
        "tie_embeddings": "yes" if tie else "no",
        "experts": experts,
        "experts_per_token": per_token,
        "shared_experts": shared,
        "moe_intermediate_size": expert_size if experts else 0,
        "moe_layers": moe_layers,
        "kv_lora_rank": kv_rank,
        "rope_head_dim": _int(config, "qk_rope_head_dim") if kv_rank else 0,
        "sliding_window": window,
        "sliding_window_layers": window_layers,
        "max_context": _int(config, "max_position_embeddings"),
        "native_format": native,
        "custom_name": (name or str(raw.get("_name_or_path") or architecture or "custom model"))[:120],
    }
    return ParsedConfig(architecture=architecture, family=family, fields=fields, notes=tuple(notes))
