"""Memory fit: weights and KV per GPU for a parallel layout the engines accept, and the most sequences that fit."""

import math
from functools import lru_cache, reduce
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from catalog import Gpu
from catalog.engines import ServingEngine, get_engine
from catalog.kvcache import kv_bytes_per_sequence, kv_bytes_per_token, kv_bytes_per_token_per_gpu, kv_share_per_gpu
from catalog.models import ModelSpec
from catalog.quantization import BYTES_PER_GB, expert_weights_bytes, get_quant, weights_bytes
from i18n import N_, Translate, identity
from selector.rules import load_rules

SplitKind = Literal["tensor", "layer"]


class Policy(BaseModel):
    """How the advisor wants a mixture-of-experts model laid out (the engine's support already checked)."""

    model_config = ConfigDict(frozen=True)

    expert_parallel: bool = False  # spread whole experts over the GPUs of a copy
    expert_parallel_allowed: bool = False  # the engine can, so use it when tensor parallelism breaks the experts
    attention_data_parallel: bool = False  # MLA: every GPU keeps its own sequences' latent KV
    online_fp8_block: int | None = None  # the engine's FP8 at load, in blocks of this (None: as a block checkpoint)
    kv_memory_share: float | None = None  # the engine's share of GPU memory (None: the default engine's, rules.toml)
    kv_memory_of_free: bool = False  # that share is of the memory loading left (TensorRT-LLM, LMDeploy), not of all


NO_POLICY = Policy()


def memory_policy(engine: ServingEngine) -> dict[str, object]:
    """The Policy fields of an engine's memory share (catalog/data/engines.csv kv_memory_share, kv_memory_of)."""
    return {"kv_memory_share": engine.kv_memory_share, "kv_memory_of_free": engine.kv_memory_of == "free"}


def _memory_share(policy: Policy) -> tuple[float, bool]:
    """(share, of the free memory) for a fit: the policy's engine, else the engine rules.toml [limits] names."""
    if policy.kv_memory_share is not None:
        return policy.kv_memory_share, policy.kv_memory_of_free
    default = get_engine(load_rules().limits.memory_share_engine)
    return default.kv_memory_share, default.kv_memory_of == "free"


class Layout(BaseModel):
    """One model copy over `tensor_parallel` x `pipeline_parallel` GPUs (one pipeline stage per node), repeated."""

    model_config = ConfigDict(frozen=True)

    tensor_parallel: int
    pipeline_parallel: int = 1
    replicas: int = 1
    expert_parallel: bool = False
    attention_data_parallel: bool = False

    @property
    def split(self) -> int:
        """GPUs per model copy."""
        return self.tensor_parallel * self.pipeline_parallel


class Objection(BaseModel):
    """Why the engines refuse a tensor-parallel size: an English template (marked N_) and the values it names."""

    model_config = ConfigDict(frozen=True)

    template: str
    values: tuple[tuple[str, str], ...] = ()

    def worded(self, tr: Translate = identity) -> str:
        """The objection in the language of `tr` (English by default, as the JSON's `skipped_splits` has it)."""
        return tr(self.template).format(**dict(self.values))


class SkippedLayout(BaseModel):
    """A tensor-parallel size the fit left out, and the engines' objections to it."""

    model_config = ConfigDict(frozen=True)

    gpus: int
    objections: tuple[Objection, ...]

    def worded(self, tr: Translate = identity) -> str:
        """'8 GPUs per copy: 28 attention heads do not divide by 8; ...' in the language of `tr`."""
        problems = reduce(
            lambda first, second: tr("{first}; {second}").format(first=first, second=second),
            (o.worded(tr) for o in self.objections),
        )
        return tr("{gpus} GPUs per copy: {problems}").format(gpus=self.gpus, problems=problems)


def _objection(template: str, **values: object) -> Objection:
    return Objection(template=template, values=tuple((k, str(v)) for k, v in values.items()))


class MemoryFit(BaseModel):
    """How a model sits in the GPUs' memory. GB are 10^9 bytes; per-GPU figures are for the busiest GPU."""

    model_config = ConfigDict(frozen=True)

    gpu_id: str
    gpus: int
    split: int
    split_kind: SplitKind
    replicas: int
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: bool = False
    attention_data_parallel: bool = False
    nodes: int = 1
    gpus_per_node: int = 1
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
    kv_bytes_per_sequence: int = 0
    kv_budget_gb_per_gpu: float
    kv_gb_per_gpu_for_target: float
    free_gb_per_gpu: float
    max_concurrent_sequences: int
    fits: bool
    meets_concurrency: bool
    skipped_splits: tuple[str, ...] = ()  # English, as the JSON reports them
    skipped_layouts: tuple[SkippedLayout, ...] = Field(default=(), exclude=True)  # the same, to word in a language
    suggestions: tuple[str, ...] = ()

    @property
    def kv_shortfall_gb_per_gpu(self) -> float:
        """KV memory the target needs beyond what one GPU can hold (0 when it fits)."""
        return max(0.0, self.kv_gb_per_gpu_for_target - max(self.kv_budget_gb_per_gpu, 0.0))


def kv_budget_gb_per_gpu(gpu: Gpu, weights_gb_per_gpu: float, policy: Policy = NO_POLICY) -> float:
    """What one GPU keeps for the KV cache (negative: the weights do not fit).

    The engine's share of the whole GPU less the runtime and the weights (vLLM, SGLang), or its share of what the
    runtime and the weights leave (TensorRT-LLM, LMDeploy). On Apple, the Metal-wired share of unified memory.
    """
    limits = load_rules().limits
    if gpu.kind == "apple":
        share, of_free = limits.apple_gpu_memory_share, False
    else:
        share, of_free = _memory_share(policy)
    if of_free:
        return (gpu.memory_gb - limits.runtime_overhead_gb_per_gpu - weights_gb_per_gpu) * share
    return gpu.memory_gb * share - limits.runtime_overhead_gb_per_gpu - weights_gb_per_gpu


def weight_group(model: ModelSpec, quant: str, online_fp8_block: int | None = None) -> int:
    """The group of weights each GPU's slice must hold whole: the format's (catalog/data/quantization.csv).

    FP8 is the exception: its group is the 128 x 128 block of a block-FP8 checkpoint. A model with no FP8 checkpoint
    in the catalog is quantized at load from BF16, in the engine's own blocks (`online_fp8_block`; 0 for vLLM,
    SGLang and TensorRT-LLM's ModelOpt, which scale per tensor; None when the engine is not known: as a checkpoint).
    """
    if quant == "fp8" and online_fp8_block is not None and not model.checkpoint("fp8"):
        return online_fp8_block
    return get_quant(quant).group_size


def split_objections(
    model: ModelSpec,
    quant: str,
    tensor_parallel: int,
    *,
    expert_parallel: bool,
    attention_data_parallel: bool,
    online_fp8_block: int | None = None,
) -> list[Objection]:
    """Why the engines refuse this tensor-parallel size for the model and format ([] when they accept it).

    Attention heads must divide evenly (unless attention runs data-parallel); KV heads must divide evenly or be
    replicated a whole number of times; a group-quantized format needs every rank's slice of an MLP to hold whole
    groups; expert parallelism needs the experts to divide evenly over the GPUs.
    """
    t, out = tensor_parallel, list[Objection]()
    if t == 1:
        return out
    if not attention_data_parallel and model.attention_heads % t:
        out.append(_objection(N_("{heads} attention heads do not divide by {t}"), heads=model.attention_heads, t=t))
    if model.kv_kind != "mla" and not attention_data_parallel and model.kv_heads % t and t % model.kv_heads:
        out.append(
            _objection(
                N_("{kv_heads} KV heads neither divide by {t} nor replicate evenly over {t} GPUs"),
                kv_heads=model.kv_heads,
                t=t,
            )
        )
    group = weight_group(model, quant, online_fp8_block)
    mlp = model.int4_intermediate_size if quant in {"awq", "gptq"} and model.int4_intermediate_size else 0
    mlp = mlp or model.intermediate_size
    has_dense = mlp and (not model.is_moe or model.moe_layers < model.layers)
    if group and has_dense and (mlp % t or (mlp // t) % group):
        out.append(
            _objection(
                N_("{method} needs whole groups of {group} per GPU, and the MLP's {mlp} split {t} ways is {share}"),
                method=get_quant(quant).name,
                group=group,
                mlp=mlp,
                t=t,
                share=f"{mlp / t:g}",
            )
        )
    if model.is_moe:
        out.extend(_expert_objections(model, quant, t, group, expert_parallel=expert_parallel))
    return out


def _expert_objections(model: ModelSpec, quant: str, t: int, group: int, *, expert_parallel: bool) -> list[Objection]:
    """split_objections for the experts: spread evenly whole, or split into whole groups."""
    if expert_parallel:
        if model.experts % t:
            return [_objection(N_("{experts} experts do not spread evenly over {t} GPUs"), experts=model.experts, t=t)]
        return []
    size = model.moe_intermediate_size
    pads = get_quant(quant).engines_pad_shards  # MXFP4: the engines round each share up to whole blocks
    if group and size and not pads and (size % t or (size // t) % group):
        return [
            _objection(
                N_(
                    "{method} needs whole groups of {group} per GPU, and each expert's {size} split {t} ways is "
                    "{share} (expert parallelism keeps experts whole)"
                ),
                method=get_quant(quant).name,
                group=group,
                size=size,
                t=t,
                share=f"{size / t:g}",
            )
        ]
    return []


def _weights_bytes_per_gpu(model: ModelSpec, quant: str, layout: Layout) -> float:
    """Weight bytes on one GPU of the copy: an even share, but attention and dense layers whole under attention DP."""
    total = weights_bytes(model, quant)
    if layout.attention_data_parallel and layout.split > 1:  # attention (and the dense rest) is on every GPU
        experts = min(expert_weights_bytes(model, quant), total)
        return experts / layout.split + (total - experts)
    return total / layout.split


# long: MemoryFit reports 30 fields and this names each once; the arithmetic is the first 25 lines.
def fit_layout(
    model: ModelSpec,
    gpu: Gpu,
    layout: Layout,
    *,
    split_kind: SplitKind,
    quant: str,
    kv_dtype: str,
    context: int,
    concurrency: int,
    nodes: int = 1,
    policy: Policy = NO_POLICY,
) -> MemoryFit:
    """The fit of one layout: weights and KV per GPU, and how many sequences of `context` tokens fit.

    A card the engines see as several devices (the 910C's two dies) is fitted as those devices, each with its share
    of the memory and its own share of every sequence's KV cache, and reported per card.
    """
    if (per := gpu.devices_per_card) > 1:
        device = gpu.model_copy(update={"memory_gb": gpu.memory_gb / per, "devices_per_card": 1})
        on_devices = layout.model_copy(update={"tensor_parallel": layout.tensor_parallel * per})
        fitted = fit_layout(
            model,
            device,
            on_devices,
            split_kind=split_kind,
            quant=quant,
            kv_dtype=kv_dtype,
            context=context,
            concurrency=concurrency,
            nodes=nodes,
            policy=policy,
        )
        return _per_card(fitted, gpu, per)
    split, replicas = layout.split, layout.replicas
    total_bytes = weights_bytes(model, quant)
    weights_per_gpu = _weights_bytes_per_gpu(model, quant, layout) / BYTES_PER_GB
    share = (
        kv_share_per_gpu(model, 1, split)
        if split_kind == "layer"
        else kv_share_per_gpu(model, layout.tensor_parallel, layout.pipeline_parallel)
    )
    per_sequence = kv_bytes_per_sequence(model, kv_dtype, context)
    per_seq_gb = per_sequence * share / BYTES_PER_GB
    budget = kv_budget_gb_per_gpu(gpu, weights_per_gpu, policy)
    per_gpu_sequences = max(0, math.floor(budget / per_seq_gb)) if budget > 0 else 0
    ranks = split if layout.attention_data_parallel else 1
    per_replica = per_gpu_sequences * ranks
    max_seqs = per_replica * replicas
    seqs_per_rank_for_target = math.ceil(concurrency / (replicas * ranks))
    kv_for_target = seqs_per_rank_for_target * per_seq_gb
    fits = budget > 0 and per_replica >= 1
    gpus = split * replicas
    per_token_gpu = (
        kv_bytes_per_token_per_gpu(model, kv_dtype, split, "layer")
        if split_kind == "layer"
        else math.ceil(kv_bytes_per_token(model, kv_dtype) * share)
    )
    return MemoryFit(
        gpu_id=gpu.id,
        gpus=gpus,
        split=split,
        split_kind=split_kind,
        replicas=replicas,
        tensor_parallel=layout.tensor_parallel,
        pipeline_parallel=layout.pipeline_parallel,
        expert_parallel=layout.expert_parallel,
        attention_data_parallel=layout.attention_data_parallel,
        nodes=nodes,
        gpus_per_node=gpus // nodes,
        quantization=quant,
        kv_cache_dtype=kv_dtype,
        context_tokens=context,
        target_concurrency=concurrency,
        memory_gb_per_gpu=gpu.memory_gb,
        reserved_gb_per_gpu=gpu.memory_gb - weights_per_gpu - budget,
        weights_gb=round(total_bytes / BYTES_PER_GB, 3),
        weights_gb_per_gpu=round(weights_per_gpu, 3),
        kv_bytes_per_token=kv_bytes_per_token(model, kv_dtype),
        kv_bytes_per_token_per_gpu=per_token_gpu,
        kv_bytes_per_sequence=per_sequence,
        kv_budget_gb_per_gpu=round(budget, 3),
        kv_gb_per_gpu_for_target=round(kv_for_target, 3),
        free_gb_per_gpu=round(max(0.0, budget - kv_for_target), 3),
        max_concurrent_sequences=max_seqs,
        fits=fits,
        meets_concurrency=fits and max_seqs >= concurrency,
    )


def _per_card(fitted: MemoryFit, gpu: Gpu, per: int) -> MemoryFit:
    """A fit over devices as the cards that hold them: counts divided, per-GPU figures multiplied by `per`."""
    return fitted.model_copy(
        update={
            "gpu_id": gpu.id,
            "gpus": fitted.gpus // per,
            "split": fitted.split // per,
            "tensor_parallel": fitted.tensor_parallel // per,
            "gpus_per_node": fitted.gpus_per_node // per,
            "memory_gb_per_gpu": gpu.memory_gb,
            **{
                name: round(getattr(fitted, name) * per, 3)
                for name in (
                    "reserved_gb_per_gpu",
                    "weights_gb_per_gpu",
                    "kv_budget_gb_per_gpu",
                    "kv_gb_per_gpu_for_target",
                    "free_gb_per_gpu",
                )
            },
            "kv_bytes_per_token_per_gpu": fitted.kv_bytes_per_token_per_gpu * per,
        }
    )


def _layout_for(
    model: ModelSpec, quant: str, t: int, policy: Policy, devices: int = 1
) -> tuple[Layout | None, list[Objection]]:
    """The layout at tensor-parallel size t (cards) under the policy, or None with the engines' objections.

    The engines see `devices` per card (the 910C's two dies), so they check the split over t x devices.
    """
    ranks = t * devices
    moe = model.is_moe and ranks > 1
    adp = policy.attention_data_parallel and model.kv_kind == "mla" and ranks > 1
    ep = moe and (policy.expert_parallel or adp)
    block = policy.online_fp8_block
    problems = split_objections(
        model, quant, ranks, expert_parallel=ep, attention_data_parallel=adp, online_fp8_block=block
    )
    if problems and moe and not ep and policy.expert_parallel_allowed:
        with_ep = split_objections(
            model, quant, ranks, expert_parallel=True, attention_data_parallel=adp, online_fp8_block=block
        )
        if not with_ep:
            return Layout(tensor_parallel=t, expert_parallel=True, attention_data_parallel=adp), []
    if problems:
        return None, problems
    return Layout(tensor_parallel=t, expert_parallel=ep, attention_data_parallel=adp), []


def valid_splits(
    model: ModelSpec,
    gpus: int,
    split_kind: SplitKind,
    quant: str = "bf16",
    policy: Policy = NO_POLICY,
    devices: int = 1,
) -> list[int]:
    """GPU counts one model copy may span: divisors of `gpus` the engines accept (a layer split takes them all)."""
    if split_kind == "layer":
        return [gpus]
    return [
        t for t in range(1, gpus + 1) if gpus % t == 0 and _layout_for(model, quant, t, policy, devices)[0] is not None
    ]


@lru_cache(maxsize=16384)
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
    policy: Policy = NO_POLICY,
) -> MemoryFit:
    """The best layout of `gpus`: the narrowest that meets the target (the widest when `prefer_wide`, for latency).

    Cached: a comparison asks the same fits many times, and every argument is immutable.
    """
    kwargs = {"split_kind": split_kind, "quant": quant, "kv_dtype": kv_dtype, "context": context}
    if split_kind == "layer":
        return fit_layout(model, gpu, Layout(tensor_parallel=gpus), concurrency=concurrency, policy=policy, **kwargs)  # type: ignore[arg-type]
    candidates: list[MemoryFit] = []
    skipped: list[SkippedLayout] = []
    for t in range(1, gpus + 1):
        if gpus % t:
            continue
        layout, problems = _layout_for(model, quant, t, policy, gpu.devices_per_card)
        if layout is None:
            skipped.append(SkippedLayout(gpus=t, objections=tuple(problems)))
            continue
        layout = layout.model_copy(update={"replicas": gpus // t})
        candidates.append(fit_layout(model, gpu, layout, concurrency=concurrency, policy=policy, **kwargs))  # type: ignore[arg-type]
    meeting = [c for c in candidates if c.meets_concurrency]
    if meeting:
        best = meeting[-1] if prefer_wide else meeting[0]
    else:
        fitting = [c for c in candidates if c.fits]
        best = max(fitting, key=lambda c: (c.max_concurrent_sequences, -c.split)) if fitting else candidates[-1]
    return best.model_copy(
        update={"skipped_splits": tuple(s.worded() for s in skipped), "skipped_layouts": tuple(skipped)}
    )


def fit_nodes(
    model: ModelSpec,
    gpu: Gpu,
    *,
    nodes: int,
    gpus_per_node: int,
    quant: str,
    kv_dtype: str,
    context: int,
    concurrency: int,
    policy: Policy = NO_POLICY,
) -> MemoryFit | None:
    """One copy over several nodes: tensor parallel inside a node, one pipeline stage per node (None if no TP fits)."""
    for t in sorted((t for t in range(1, gpus_per_node + 1) if gpus_per_node % t == 0), reverse=True):
        layout, _ = _layout_for(model, quant, t, policy, gpu.devices_per_card)
        if layout is None:
            continue
        stages = nodes * gpus_per_node // t
        layout = layout.model_copy(update={"pipeline_parallel": stages, "attention_data_parallel": False})
        return fit_layout(
            model,
            gpu,
            layout,
            split_kind="tensor",
            quant=quant,
            kv_dtype=kv_dtype,
            context=context,
            concurrency=concurrency,
            nodes=nodes,
            policy=policy,
        )
    return None


def min_nodes(
    model: ModelSpec,
    gpu: Gpu,
    *,
    quant: str,
    kv_dtype: str,
    context: int,
    concurrency: int,
    policy: Policy = NO_POLICY,
    meet_concurrency: bool = False,
) -> MemoryFit | None:
    """The smallest multi-node layout (full nodes of `max_gpus`) that holds one sequence, or None up to max_nodes.

    With `meet_concurrency`, the smallest that holds `concurrency` sequences.
    """
    limits = load_rules().limits
    for nodes in range(2, limits.max_nodes + 1):
        result = fit_nodes(
            model,
            gpu,
            nodes=nodes,
            gpus_per_node=limits.max_gpus,
            quant=quant,
            kv_dtype=kv_dtype,
            context=context,
            concurrency=concurrency,
            policy=policy,
        )
        if result is not None and (result.meets_concurrency if meet_concurrency else result.fits):
            return result
    return None


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
    policy: Policy = NO_POLICY,
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
            policy=policy,
        )
        if result.meets_concurrency or (result.fits and not meet_concurrency):
            return count
    return None


def memory_pressure(
    model: ModelSpec,
    gpu: Gpu,
    *,
    gpus: int,
    split_kind: SplitKind,
    context: int,
    concurrency: int,
    policy: Policy = NO_POLICY,
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
        policy=policy,
    )
    if result.meets_concurrency:
        return "none"
    return "tight" if result.fits else "extreme"
