"""One replica as the simulator needs it: the step cost, the scheduler's limits and the KV capacity in tokens."""

from catalog import Gpu
from catalog.engines import get_engine
from catalog.models import ModelSpec
from catalog.quantization import BYTES_PER_GB
from perf.features import ReplicaShape, StepCost
from perf.readout import NEUTRAL_READOUT
from perf.simulate import Engine
from selector.memory import Layout, Policy, fit_layout, memory_policy


def kv_capacity_tokens(
    model: ModelSpec, gpu: Gpu, quant: str, kv_dtype: str, shape: ReplicaShape, context: int, engine: str
) -> int:
    """Tokens of context the replica's KV cache holds, from the advisor's memory fit of this layout (0: no room).

    The engine decides how much memory the cache gets (its default share, of the whole GPU or of what loading left).
    """
    layout = Layout(
        tensor_parallel=shape.tensor_parallel,
        pipeline_parallel=shape.pipeline_parallel,
        expert_parallel=shape.expert_parallel,
        attention_data_parallel=shape.attention_data_parallel,
    )
    fit = fit_layout(
        model,
        gpu,
        layout,
        split_kind="tensor",
        quant=quant,
        kv_dtype=kv_dtype,
        context=context,
        concurrency=1,
        policy=Policy(**memory_policy(get_engine(engine))),
    )
    if fit.kv_budget_gb_per_gpu <= 0:
        return 0
    per_token = max(fit.kv_bytes_per_sequence / max(context, 1) * fit.kv_bytes_per_token_per_gpu, 1e-9)
    per_token /= max(fit.kv_bytes_per_token, 1)  # the busiest GPU's bytes per token, windows counted
    ranks = shape.gpus if shape.attention_data_parallel and shape.gpus > 1 else 1
    return int(fit.kv_budget_gb_per_gpu * BYTES_PER_GB / per_token) * ranks


def replica_engine(
    model: ModelSpec,
    gpu: Gpu,
    *,
    quant: str,
    kv_dtype: str,
    shape: ReplicaShape,
    theta: tuple[float, ...],
    max_seqs: int,
    budget_tokens: int,
    context: int,
    accepted_per_step: float = 1.0,
    computed_per_step: float = 1.0,
    draft_share: float = 0.0,
    kv_capacity: int,
    ttft_readout: tuple[float, ...] = NEUTRAL_READOUT,
) -> Engine:
    """The simulated engine for one replica.

    `budget_tokens` is the engine's chunked-prefill budget per scheduler: with attention data parallelism every rank
    schedules its own batch under it (vLLM's data-parallel engines, SGLang's DP attention, TensorRT-LLM's attention
    DP), so the replica's step takes up to that many tokens on each rank.
    """
    cost = StepCost(model, gpu, quant, kv_dtype, shape, draft_share=draft_share)
    return Engine(
        cost=cost,
        theta=theta,
        max_seqs=max_seqs,
        budget_tokens=budget_tokens * shape.attention_ranks,
        kv_capacity_tokens=kv_capacity,
        accepted_per_step=accepted_per_step,
        computed_per_step=computed_per_step,
        ttft_readout=ttft_readout,
    )
