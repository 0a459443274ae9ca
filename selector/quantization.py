"""Quantization methods, their architecture gates (FP8 sm89+, Marlin sm80+, FP4 Blackwell) and weight bytes."""

import csv
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from catalog import Gpu
from catalog.matching import match_names
from i18n import DEFAULT_LANGUAGE, Language
from selector.engines import gpu_platform
from selector.errors import UnknownQuantizationError
from selector.models import ModelSpec
from selector.rules import Statement, load_rules

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
    needs: Need
    min_sm: float
    vendors: tuple[str, ...]
    older_arch_fallback: str
    quality_note: str
    source: str

    @field_validator("vendors", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return tuple(a.strip() for a in value.split(";") if a.strip()) if isinstance(value, str) else value

    @field_validator("embeddings_quantized", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        return value == "yes" if isinstance(value, str) else value


class Gate(BaseModel):
    """Whether a method runs on a GPU and how (full, degraded): the gate's rule id, its sentence and its source."""

    model_config = ConfigDict(frozen=True)

    method: str
    allowed: bool
    degraded: bool = False
    rule_id: str
    reason: str
    source: str


@cache
def load_quant_methods() -> tuple[QuantMethod, ...]:
    """Every quantization method, in file order."""
    with QUANT_CSV.open(newline="", encoding="utf-8") as handle:
        return tuple(QuantMethod.model_validate(row) for row in csv.DictReader(handle))


def get_quant(method_id: str) -> QuantMethod:
    """A method by its exact id."""
    return {q.id: q for q in load_quant_methods()}[method_id]


def find_quant(name: str) -> QuantMethod:
    """Look a method up forgivingly ('AWQ', 'q4_k_m', 'smoothquant')."""
    methods = {q.id: q for q in load_quant_methods()}
    extra = {"w8a8-int8": ("smoothquant", "int8", "w8a8"), "gguf-q4_k_m": ("gguf", "q4_k_m"), "nf4": ("qlora",)}
    keys = {q.id: (q.id, q.name, *extra.get(q.id, ())) for q in methods.values()}
    found, candidates = match_names(name, keys)
    if found is None:
        raise UnknownQuantizationError(name, candidates, [AUTO, *methods])
    return methods[found]


def _sm(compute_capability: float) -> str:
    """A compute capability as NVIDIA writes it in kernel names: 8.0 -> sm80, 10.0 -> sm100."""
    return f"sm{round(compute_capability * 10)}"


def sm_name(gpu: Gpu) -> str:
    """The GPU's architecture as the gates name it: sm80 for NVIDIA, the catalog's text for the others."""
    return gpu.compute_capability if gpu.sm is None else _sm(gpu.sm)


def gate(method_id: str, gpu: Gpu, language: Language = DEFAULT_LANGUAGE) -> Gate:
    """Check a method against a GPU's architecture: what runs natively, what runs degraded, what cannot run.

    The reason is worded in the language (rules.toml's `reason_zh`); the source stays English.
    """
    method = get_quant(method_id)
    gates = load_rules().gates
    platform = gpu_platform(gpu)
    sm = gpu.sm
    values: dict[str, object] = {
        "method": method.name,
        "method_source": method.source,
        "min_sm": method.min_sm,
        "fallback": method.older_arch_fallback,
        "gpu": gpu.name,
        "arch": gpu.arch,
        "platform": platform,
        "sm": sm_name(gpu),
        "marlin_sm": _sm(gates.marlin_min_sm),
    }

    def outcome(statement: Statement, *, allowed: bool, degraded: bool = False) -> Gate:
        reason, source = statement.reason_for(values, language), statement.source_for(values)
        return Gate(
            method=method_id, allowed=allowed, degraded=degraded, rule_id=statement.id, reason=reason, source=source
        )

    marlin_arch = sm is not None and sm >= gates.marlin_min_sm
    if platform not in method.vendors:
        return outcome(gates.no_kernels, allowed=False)
    if method.needs == "fp4":
        if gpu.native_fp4:
            return outcome(gates.fp4_native, allowed=True)
        return outcome(gates.fp4_missing, allowed=False)
    if method.needs == "mxfp4":
        if gpu.native_fp4:
            return outcome(gates.fp4_native, allowed=True)
        if (platform == "nvidia" and marlin_arch) or (platform == "amd" and gpu.native_fp8):
            return outcome(gates.mxfp4_weight_only, allowed=True, degraded=True)
        return outcome(gates.fp4_missing, allowed=False)
    if method.needs == "fp8":
        if gpu.native_fp8:
            return outcome(gates.fp8_native, allowed=True)
        if platform == "nvidia" and marlin_arch:
            return outcome(gates.fp8_weight_only, allowed=True, degraded=True)
        return outcome(gates.fp8_missing, allowed=False)
    if sm is not None and sm < method.min_sm:
        return outcome(gates.below_min_sm, allowed=False)
    if method.needs == "marlin" and not (gpu.marlin_kernels and marlin_arch):
        return outcome(gates.marlin_missing, allowed=True, degraded=True)
    if method.needs == "marlin":
        return outcome(gates.marlin, allowed=True)
    return outcome(gates.runs, allowed=True)


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
