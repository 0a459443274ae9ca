"""KV-cache arithmetic: bytes per token from layers x KV heads x head size x dtype, split over GPUs."""

import csv
import math
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from selector.engines import ServingEngine
from selector.models import ModelSpec

KV_DTYPES_CSV = Path(__file__).parent / "data" / "kv_dtypes.csv"

# Each engine's 8-bit KV-cache type (the generic rule choice "8bit" becomes one of these).
EIGHT_BIT_KV: dict[str, str] = {
    "vllm": "fp8",
    "sglang": "fp8",
    "tensorrt-llm": "fp8",
    "tgi": "fp8",
    "lmdeploy": "int8",
    "llama.cpp": "q8_0",
    "ollama": "q8_0",
}


class KvDtype(BaseModel):
    """One KV-cache element type and its size."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    bytes_per_value: float
    source: str


@cache
def load_kv_dtypes() -> dict[str, KvDtype]:
    """KV dtypes by id."""
    with KV_DTYPES_CSV.open(newline="", encoding="utf-8") as handle:
        return {row["id"]: KvDtype.model_validate(row) for row in csv.DictReader(handle)}


def eight_bit_kv(engine: ServingEngine) -> str | None:
    """The engine's 8-bit KV dtype, or None when it has none."""
    return EIGHT_BIT_KV.get(engine.id)


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "auto") -> int:
    """K and V for one token over all layers: 2 x layers x KV heads x head size x bytes per value."""
    size = load_kv_dtypes()[kv_dtype].bytes_per_value
    return math.ceil(2 * model.layers * model.kv_heads * model.head_dim * size)


def kv_bytes_per_token_per_gpu(model: ModelSpec, kv_dtype: str, split: int, split_kind: str = "tensor") -> int:
    """What one GPU holds per token when the model is split over `split` GPUs.

    Tensor parallelism divides the KV heads (each GPU keeps at least one, replicated when there are fewer KV heads
    than GPUs); a layer split (llama.cpp) divides the layers.
    """
    size = load_kv_dtypes()[kv_dtype].bytes_per_value
    if split_kind == "layer":
        return math.ceil(2 * math.ceil(model.layers / split) * model.kv_heads * model.head_dim * size)
    heads_per_gpu = math.ceil(model.kv_heads / split)
    return math.ceil(2 * model.layers * heads_per_gpu * model.head_dim * size)
