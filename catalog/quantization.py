"""Quantization methods: bits per weight, the hardware each needs (FP8 sm89+, Marlin sm80+, FP4), weight bytes."""

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from catalog.errors import UnknownQuantizationError
from catalog.gpus import Gpu
from catalog.matching import match_names
from catalog.models import ModelSpec
from catalog.tables import load_table, split_list, yes_no

QUANT_CSV = Path(__file__).parent / "data" / "quantization.csv"
AUTO = "auto"
BYTES_PER_GB = 1e9

Need = Literal["none", "fp8", "marlin", "int8", "fp4", "mxfp4"]


class QuantMethod(BaseModel):
    """One weight format: its size, what hardware it needs, and where the numbers come from."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    bits_per_weight: float
    embeddings_quantized: bool
    scope: Literal["linear", "experts"]
    group_size: int
    engines_pad_shards: bool  # engines pad a GPU's share of a weight up to whole groups: any tensor split loads
    needs: Need
    min_sm: float
    vendors: tuple[str, ...]
    older_arch_fallback: str
    quality_note: str
    source: str
    checked: str = ""  # when the row was last written from its sources

    @field_validator("vendors", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return split_list(value)

    @field_validator("embeddings_quantized", "engines_pad_shards", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        return yes_no(value)


@cache
def load_quant_methods() -> tuple[QuantMethod, ...]:
    """Every quantization method, in file order."""
    return load_table(QUANT_CSV, QuantMethod)


def get_quant(method_id: str) -> QuantMethod:
    """A method by its exact id."""
    return {q.id: q for q in load_quant_methods()}[method_id]


def find_quant(name: str) -> QuantMethod:
    """Look a method up forgivingly ('AWQ', 'q4_k_m', 'smoothquant')."""
    methods = {q.id: q for q in load_quant_methods()}
    extra = {"w8a8-int8": ("smoothquant", "int8", "w8a8"), "gguf-q4_k_m": ("gguf", "q4_k_m"), "nf4": ("qlora",)}
    keys = {q.id: (q.id, q.name, *extra.get(q.id, ())) for q in methods.values()}
    found, candidates = match_names(name, keys, kind="quantization")
    if found is None:
        raise UnknownQuantizationError(name, candidates, [AUTO, *methods])
    return methods[found]


def sm_label(compute_capability: float) -> str:
    """A compute capability as NVIDIA writes it in kernel names: 8.0 -> sm80, 10.0 -> sm100."""
    return f"sm{round(compute_capability * 10)}"


def sm_name(gpu: Gpu) -> str:
    """The GPU's architecture as the gates name it: sm80 for NVIDIA, the catalog's text for the others."""
    return gpu.compute_capability if gpu.sm is None else sm_label(gpu.sm)


def weights_bytes(model: ModelSpec, method_id: str) -> float:
    """Bytes of every resident weight in a format (all experts included), scales included.

    Embeddings and the output head stay 16-bit unless the format quantizes them; a format scoped to the experts
    (MXFP4 as gpt-oss ships it) leaves attention and dense layers in 16-bit.
    """
    method = get_quant(method_id)
    embedding = 0.0 if method.embeddings_quantized else min(model.embedding_params, model.params)
    body = model.params - embedding
    quantized = min(model.routed_expert_params, body) if method.scope == "experts" else body
    return quantized * method.bits_per_weight / 8 + (body - quantized) * 2.0 + embedding * 2.0


def expert_weights_bytes(model: ModelSpec, method_id: str) -> float:
    """Bytes of the routed experts alone (what expert parallelism spreads over GPUs)."""
    method = get_quant(method_id)
    return model.routed_expert_params * method.bits_per_weight / 8


def weights_gb(model: ModelSpec, method_id: str) -> float:
    """Weights in GB (10^9 bytes)."""
    return weights_bytes(model, method_id) / BYTES_PER_GB
