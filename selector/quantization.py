"""Quantization methods, their architecture gates (FP8 sm89+, Marlin sm80+, FP4 Blackwell) and weight bytes."""

import csv
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from catalog import Gpu
from catalog.matching import match_names
from selector.engines import gpu_platform
from selector.errors import UnknownQuantizationError
from selector.models import ModelSpec

QUANT_CSV = Path(__file__).parent / "data" / "quantization.csv"
AUTO = "auto"
BYTES_PER_GB = 1e9
MARLIN_MIN_SM = 8.0  # Marlin kernels (and weight-only FP8-Marlin) need Ampere or newer: vLLM supported_hardware.md

Need = Literal["none", "fp8", "marlin", "int8", "fp4"]


class QuantMethod(BaseModel):
    """One weight format: its size, what hardware it needs, and where the numbers come from."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    bits_per_weight: float
    embeddings_quantized: bool
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
    """Whether a method runs on a GPU, how (full, degraded), and the sentence that says why."""

    model_config = ConfigDict(frozen=True)

    method: str
    allowed: bool
    degraded: bool = False
    reason: str


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


def gate(method_id: str, gpu: Gpu) -> Gate:
    """Check a method against a GPU's architecture: what runs natively, what runs degraded, what cannot run."""
    method = get_quant(method_id)
    platform = gpu_platform(gpu)
    sm = gpu.sm
    if platform not in method.vendors:
        return Gate(
            method=method_id,
            allowed=False,
            reason=f"{method.name} has no kernels for {gpu.name} ({platform}); use GGUF on Apple/CPU "
            "or FP8 on AMD instead.",
        )
    if method.needs == "fp4":
        if gpu.native_fp4:
            return Gate(method=method_id, allowed=True, reason=f"{gpu.name} has FP4 tensor cores (Blackwell).")
        return Gate(
            method=method_id,
            allowed=False,
            reason=f"{method.name} needs Blackwell FP4 tensor cores (sm100/sm120); {gpu.name} is "
            f"{gpu.arch} (sm{gpu.compute_capability}).",
        )
    if method.needs == "fp8":
        if gpu.native_fp8:
            return Gate(
                method=method_id, allowed=True, reason=f"{gpu.name} computes FP8 natively (sm89 or newer, or MI300)."
            )
        if platform == "nvidia" and sm is not None and sm >= MARLIN_MIN_SM:
            return Gate(
                method=method_id,
                allowed=True,
                degraded=True,
                reason=f"FP8 compute needs sm89 or newer; on {gpu.name} (sm{gpu.compute_capability}) FP8 "
                f"runs as {method.older_arch_fallback}.",
            )
        return Gate(
            method=method_id,
            allowed=False,
            reason=f"FP8 needs sm89+ for compute or sm80+ for weight-only FP8-Marlin; {gpu.name} has neither.",
        )
    if sm is not None and sm < method.min_sm:
        return Gate(
            method=method_id,
            allowed=False,
            reason=f"{method.name} needs compute capability {method.min_sm:g} or newer; {gpu.name} is "
            f"sm{gpu.compute_capability}.",
        )
    if method.needs == "marlin" and not (gpu.marlin_kernels and sm is not None and sm >= MARLIN_MIN_SM):
        return Gate(
            method=method_id,
            allowed=True,
            degraded=True,
            reason=f"Marlin kernels need sm80 or newer; on {gpu.name} {method.name} runs on "
            f"{method.older_arch_fallback}.",
        )
    if method.needs == "marlin":
        return Gate(
            method=method_id, allowed=True, reason=f"{gpu.name} (sm{gpu.compute_capability}) runs Marlin kernels."
        )
    return Gate(method=method_id, allowed=True, reason=f"{method.name} runs on {gpu.name}.")


def weights_bytes(model: ModelSpec, method_id: str) -> float:
    """Bytes of weights in a format; embeddings and the output head stay 16-bit unless the format quantizes them."""
    method = get_quant(method_id)
    embedding = 0.0 if method.embeddings_quantized else min(model.embedding_params, model.params)
    body = model.params - embedding
    return body * method.bits_per_weight / 8 + embedding * 2.0


def weights_gb(model: ModelSpec, method_id: str) -> float:
    """Weights in GB (10^9 bytes)."""
    return weights_bytes(model, method_id) / BYTES_PER_GB
