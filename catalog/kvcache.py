"""KV-cache arithmetic: bytes per token and per sequence (GQA heads, MLA latents, sliding windows), split over GPUs."""

import math
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from catalog.engines import ServingEngine
from catalog.models import ModelSpec
from catalog.tables import load_table, split_list

KV_DTYPES_CSV = Path(__file__).parent / "data" / "kv_dtypes.csv"


class KvDtype(BaseModel):
    """One KV-cache element type and its size."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    aliases: tuple[str, ...] = ()  # the engines' own spellings of it (--kv-cache-dtype fp8_e5m2 is fp8)
    bytes_per_value: float
    source: str
    checked: str = ""  # when the row was last written from its sources

    @field_validator("aliases", mode="before")
    @classmethod
    def _split_aliases(cls, value: object) -> object:
        return split_list(value)


@cache
def load_kv_dtypes() -> dict[str, KvDtype]:
    """KV dtypes by id."""
    return {row.id: row for row in load_table(KV_DTYPES_CSV, KvDtype)}


def find_kv_dtype(name: str) -> str | None:
    """A KV dtype id from its id or an engine's spelling of it (case-insensitive); None when none matches."""
    wanted = name.strip().lower()
    return next((row.id for row in load_kv_dtypes().values() if wanted == row.id or wanted in row.aliases), None)


def eight_bit_kv(engine: ServingEngine) -> str | None:
    """The engine's 8-bit KV dtype (engines.csv kv_cache_8bit), or None when it has none."""
    return engine.kv_cache_8bit or None


def kv_layer_bytes_per_token(model: ModelSpec, kv_dtype: str = "auto") -> float:
    """What one token costs in one layer: K and V of every KV head, or MLA's one latent plus its rotary key."""
    size = load_kv_dtypes()[kv_dtype].bytes_per_value
    if model.kv_kind == "mla":
        return (model.kv_lora_rank + model.qk_rope_head_dim) * size
    return 2 * model.kv_heads * model.head_dim * size


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "auto") -> int:
    """One token over all layers while it is inside every window (sliding-window layers drop it later)."""
    return math.ceil(model.layers * kv_layer_bytes_per_token(model, kv_dtype))


def kv_bytes_per_sequence(model: ModelSpec, kv_dtype: str, context: int) -> int:
    """One sequence of `context` tokens: full-attention layers hold all of them, sliding-window layers the window."""
    per_layer = kv_layer_bytes_per_token(model, kv_dtype)
    windowed = min(context, model.sliding_window) if model.sliding_window else context
    tokens = model.full_attention_layers * context + (model.layers - model.full_attention_layers) * windowed
    return math.ceil(tokens * per_layer)


def kv_share_per_gpu(model: ModelSpec, tensor_parallel: int, pipeline_parallel: int = 1) -> float:
    """The share of a sequence's KV one GPU holds.

    Tensor parallelism divides the KV heads; with fewer KV heads than GPUs each head is replicated (every GPU keeps
    at least one), and MLA's single latent is replicated on every GPU. Pipeline stages (and llama.cpp's layer
    split) divide the layers.
    """
    heads = 1.0 if model.kv_kind == "mla" else math.ceil(model.kv_heads / tensor_parallel) / model.kv_heads
    layers = math.ceil(model.layers / pipeline_parallel) / model.layers
    return heads * layers


def kv_bytes_per_token_per_gpu(model: ModelSpec, kv_dtype: str, split: int, split_kind: str = "tensor") -> int:
    """What one GPU holds per token when the model is split over `split` GPUs (by heads, or by layers)."""
    share = kv_share_per_gpu(model, 1, split) if split_kind == "layer" else kv_share_per_gpu(model, split)
    return math.ceil(kv_bytes_per_token(model, kv_dtype) * share)
