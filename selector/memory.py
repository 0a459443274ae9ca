"""Memory fit: weights and KV cache per GPU, the split over GPUs, and the most sequences that fit at a context."""

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from catalog import Gpu
from selector.kvcache import kv_bytes_per_token, kv_bytes_per_token_per_gpu
from selector.models import ModelSpec
from selector.quantization import BYTES_PER_GB, weights_gb
from selector.rules import load_rules

SplitKind = Literal["tensor", "layer"]


class MemoryFit(BaseModel):
    """How a model sits in the GPUs' memory. GB are 10^9 bytes; per-GPU figures are for the busiest GPU."""

    model_config = ConfigDict(frozen=True)

    gpu_id: str
    gpus: int
    split: int
    split_kind: SplitKind
    replicas: int
    quantization: str
    kv_cache_dtype: str
    context_tokens: int
    target_concurrency: int
    memory_gb_per_gpu: float
    reserved_gb_per_gpu: float
    weights_gb: float
    weights_gb_per_gpu: float
    kv_bytes_per_token: int
    kv_bytes_per_token_per_gpu: int
    kv_budget_gb_per_gpu: float
    kv_gb_per_gpu_for_target: float
    free_gb_per_gpu: float
    max_concurrent_sequences: int
    fits: bool
    meets_concurrency: bool
    suggestions: tuple[str, ...] = ()

    @property
    def kv_shortfall_gb_per_gpu(self) -> float:
        """KV memory the target needs beyond what one GPU can hold (0 when it fits)."""
        return max(0.0, self.kv_gb_per_gpu_for_target - max(self.kv_budget_gb_per_gpu, 0.0))


def usable_gb_per_gpu(gpu: Gpu) -> float:
    """Memory an engine may use on one GPU: the utilization share (Apple: the Metal-wired share) less the runtime."""
    limits = load_rules().limits
    share = limits.apple_gpu_memory_share if gpu.kind == "apple" else limits.gpu_memory_utilization
    return gpu.memory_gb * share - limits.runtime_overhead_gb_per_gpu


def valid_splits(model: ModelSpec, gpus: int, split_kind: SplitKind) -> list[int]:
    """GPU counts one model copy may span: divisors of `gpus`; tensor parallel also needs them to divide the heads."""
    if split_kind == "layer":
        return [gpus]
    return [t for t in range(1, gpus + 1) if gpus % t == 0 and model.attention_heads % t == 0]


def fit_at_split(
    model: ModelSpec,
    gpu: Gpu,
    *,
    gpus: int,
    split: int,
    split_kind: SplitKind,
    quant: str,
    kv_dtype: str,
    context: int,
    concurrency: int,
) -> MemoryFit:
    """The fit with one model copy spread over `split` GPUs and gpus // split copies."""
    replicas = max(1, gpus // split)
    usable = usable_gb_per_gpu(gpu)
    total_weights_gb = weights_gb(model, quant)
    weights_per_gpu = total_weights_gb / split
    per_gpu_token = kv_bytes_per_token_per_gpu(model, kv_dtype, split, split_kind)
    budget = usable - weights_per_gpu
    per_seq_gb = per_gpu_token * context / BYTES_PER_GB
    per_replica = max(0, math.floor(budget / per_seq_gb)) if budget > 0 else 0
    max_seqs = per_replica * replicas
    seqs_per_replica_for_target = math.ceil(concurrency / replicas)
    kv_for_target = seqs_per_replica_for_target * per_seq_gb
    fits = budget > 0 and per_replica >= 1
    return MemoryFit(
        gpu_id=gpu.id,
        gpus=gpus,
        split=split,
        split_kind=split_kind,
        replicas=replicas,
        quantization=quant,
        kv_cache_dtype=kv_dtype,
        context_tokens=context,
        target_concurrency=concurrency,
        memory_gb_per_gpu=gpu.memory_gb,
        reserved_gb_per_gpu=gpu.memory_gb - usable,
        weights_gb=round(total_weights_gb, 3),
        weights_gb_per_gpu=round(weights_per_gpu, 3),
        kv_bytes_per_token=kv_bytes_per_token(model, kv_dtype),
        kv_bytes_per_token_per_gpu=per_gpu_token,
        kv_budget_gb_per_gpu=round(budget, 3),
        kv_gb_per_gpu_for_target=round(kv_for_target, 3),
        free_gb_per_gpu=round(max(0.0, budget - kv_for_target), 3),
        max_concurrent_sequences=max_seqs,
        fits=fits,
        meets_concurrency=fits and max_seqs >= concurrency,
    )


def fit(
    model: ModelSpec,
    gpu: Gpu,
    *,
    gpus: int,
    split_kind: SplitKind,
    quant: str,
    kv_dtype: str,
    context: int,
    concurrency: int,
    prefer_wide: bool = False,
) -> MemoryFit:
    """The best split of `gpus`: the narrowest that meets the target (the widest when `prefer_wide`, for latency)."""
    candidates = [
        fit_at_split(
            model,
            gpu,
            gpus=gpus,
            split=s,
            split_kind=split_kind,
            quant=quant,
            kv_dtype=kv_dtype,
            context=context,
            concurrency=concurrency,
        )
        for s in valid_splits(model, gpus, split_kind)
    ]
    meeting = [c for c in candidates if c.meets_concurrency]
    if meeting:
        return meeting[-1] if prefer_wide else meeting[0]
    fitting = [c for c in candidates if c.fits]
    if fitting:
        return max(fitting, key=lambda c: (c.max_concurrent_sequences, -c.split))
    return candidates[-1]


def min_gpus(
    model: ModelSpec,
    gpu: Gpu,
    *,
    split_kind: SplitKind,
    quant: str,
    kv_dtype: str,
    context: int,
    concurrency: int,
    meet_concurrency: bool,
) -> int | None:
    """The fewest GPUs (up to one node) on which the model fits, and meets the target when asked; None if none."""
    for count in range(1, load_rules().limits.max_gpus + 1):
        result = fit(
            model,
            gpu,
            gpus=count,
            split_kind=split_kind,
            quant=quant,
            kv_dtype=kv_dtype,
            context=context,
            concurrency=concurrency,
        )
        if result.meets_concurrency or (result.fits and not meet_concurrency):
            return count
    return None


def memory_pressure(
    model: ModelSpec, gpu: Gpu, *, gpus: int, split_kind: SplitKind, context: int, concurrency: int
) -> Literal["none", "tight", "extreme"]:
    """How hard BF16 presses on memory: none (fits the target), tight (fits, not the target), extreme (no fit)."""
    result = fit(
        model,
        gpu,
        gpus=gpus,
        split_kind=split_kind,
        quant="bf16",
        kv_dtype="auto",
        context=context,
        concurrency=concurrency,
    )
    if result.meets_concurrency:
        return "none"
    return "tight" if result.fits else "extreme"
