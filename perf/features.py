"""The roofline terms of one engine step on the busiest GPU of a replica, and the features the fit weighs.

A step runs `decode_seqs` sequences one token further (holding `decode_ctx` tokens of context between them) and
`prefill_tokens` new prompt tokens in `prefill_seqs` chunks. Its terms, in seconds or counts:

- weights and KV bytes read over memory bandwidth (a mixture of experts reads only the experts the step's
  tokens route to: E x (1 - (1 - k/E)^tokens) of them per layer, in expectation);
- GEMM FLOPs over the tensor rate of the precision the format computes in, attention FLOPs over the 16-bit rate;
- tensor-parallel all-reduces (or, with attention data parallelism, the experts' all-to-all) over the link;
- per-step, per-layer, per-sequence and per-token overheads;
- the roofline term again on AMD GPUs, so the fit learns ROCm's efficiency from ROCm runs (0 elsewhere).

The fitted step time is theta . features(step) with theta >= 0 per engine family (perf/data/coefficients.json).
"""

import math
from collections.abc import Callable
from typing import NamedTuple, cast

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from catalog import Gpu
from catalog.kvcache import kv_layer_bytes_per_token, kv_share_per_gpu
from catalog.models import ModelSpec
from catalog.quantization import expert_weights_bytes, get_quant, weights_bytes
from perf.hardware import Rates, inter_node_bytes_s, rates

FEATURES = (
    "roof",
    "overlap",
    "kv",
    "comm",
    "collectives",
    "hops",
    "step",
    "layer",
    "seq",
    "token",
    "routed",
    "roof_rocm",
)
"""Names of the fitted features, in the order of theta."""

Array = npt.NDArray[np.float64]
Num = float | Array  # a feature's arguments: one step's floats, or one numpy column per argument over many steps

ACTIVATION_BYTES = 2  # activations travel between GPUs in 16 bits


class StepInputs(NamedTuple):
    """What one engine step runs: one step's floats, or one numpy column per input over many steps.

    `decode_ctx` sums the context of the decoding sequences; `prefill_pairs` sums, over the prefill chunks,
    new tokens x (earlier context + half the chunk) (the causal attention pairs); `prefill_ctx` the context
    the chunks attend to; `tokens_per_decode` the tokens a decode step computes per sequence (speculation).
    """

    decode_seqs: Num
    decode_ctx: Num
    prefill_tokens: Num = 0.0
    prefill_pairs: Num = 0.0
    prefill_ctx: Num = 0.0
    prefill_seqs: Num = 0.0
    tokens_per_decode: Num = 1.0


STEP_INPUTS = StepInputs._fields
"""The names of a step's inputs: the columns of a trace's step matrix, in this order."""


def step_columns(rows: Array) -> StepInputs:
    """Many steps' inputs, one row per step with a column per STEP_INPUTS name, as named columns."""
    if rows.ndim != 2 or rows.shape[1] != len(STEP_INPUTS):
        raise ValueError(f"a step matrix has one column per step input {STEP_INPUTS}, not shape {rows.shape}")
    return StepInputs(**{name: rows[:, i] for i, name in enumerate(STEP_INPUTS)})


class ReplicaShape(BaseModel):
    """How one model copy is laid out: GPUs per copy, attention data parallelism, expert parallelism."""

    model_config = ConfigDict(frozen=True)

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    attention_data_parallel: bool = False
    expert_parallel: bool = False
    dp_ranks: int = 0  # attention data-parallel ranks when given (--dp); 0: every GPU of a stage with ADP, else 1

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def attention_ranks(self) -> int:
        """Ranks the sequences are spread over (attention data parallelism); 1 without it."""
        if not self.attention_data_parallel or self.gpus == 1:
            return 1
        return self.dp_ranks or self.gpus


class StepCost:
    """Per-configuration constants, so a step's terms cost a few multiplications."""

    def __init__(
        self, model: ModelSpec, gpu: Gpu, quant: str, kv_dtype: str, shape: ReplicaShape, draft_share: float = 0.0
    ) -> None:
        r: Rates = rates(gpu, quant)
        t = shape.gpus
        self.ranks = shape.attention_ranks  # sequences are spread over this many attention ranks
        adp = self.ranks > 1
        attention_split = max(t // self.ranks, 1)  # GPUs one attention rank's heads are split over
        self.model, self.gpu, self.shape = model, gpu, shape
        total = weights_bytes(model, quant)
        experts = min(expert_weights_bytes(model, quant), total) if model.is_moe else 0.0
        emb_bytes = 0.0 if model.tie_word_embeddings else model.vocab_size * model.hidden_size * 2.0
        if get_quant(quant).embeddings_quantized:
            emb_bytes *= get_quant(quant).bits_per_weight / 16
        rest = max(total - experts - emb_bytes, 0.0)  # the input embedding table is looked up, not streamed
        # Pipeline parallelism: the batch runs as pp micro-batches, one per stage at a time, so between two tokens of
        # a sequence every stage reads its weights pp times (the whole model's weights, over the tensor-parallel
        # GPUs), while the tokens' KV reads and FLOPs are spread over all tp x pp GPUs.
        pp = shape.pipeline_parallel
        self.dense_read_bytes = rest * pp / attention_split
        self.moe_layers = model.moe_layers or (model.layers if model.is_moe else 0)
        per_expert = experts / (model.experts * self.moe_layers) if model.is_moe and self.moe_layers else 0.0
        self.expert_layer_bytes = self.moe_layers * per_expert * pp / t  # per distinct expert routed to, all MoE layers
        self.experts, self.top_k = model.experts, max(model.experts_per_token, 1)
        layer_kv = kv_layer_bytes_per_token(model, kv_dtype)
        split_tp = max(shape.tensor_parallel // self.ranks, 1)
        share = kv_share_per_gpu(model, split_tp, shape.pipeline_parallel) if split_tp > 1 or not adp else 1.0
        self.kv_full = model.full_attention_layers * layer_kv * share
        window_layers = model.layers - model.full_attention_layers
        self.kv_window = window_layers * layer_kv * share
        self.window = model.sliding_window
        emb_params = 0.0 if model.tie_word_embeddings else float(model.vocab_size * model.hidden_size)
        self.gemm_flops_per_token = 2.0 * max(model.active_params - emb_params, 0.0) / t
        if model.kv_kind == "mla":
            pair = model.attention_heads * (4 * model.kv_lora_rank + 2 * model.qk_rope_head_dim)
        else:
            pair = 4 * model.attention_heads * model.head_dim
        self.attn_full = model.full_attention_layers * pair / attention_split
        self.attn_window = window_layers * pair / attention_split
        self.mem_s = 1.0 / r.mem_bytes_s
        self.gemm_s = 1.0 / r.gemm_flop_s
        self.attn_s = 1.0 / r.attn_flop_s
        self._communication(model, r, shape)
        self.layers = float(model.layers)
        self.routed_per_token = self.top_k * self.moe_layers / t if model.is_moe else 0.0
        self.draft_share = draft_share  # a draft model's step as a share of the target's weight reads
        self.rocm = 1.0 if gpu.vendor == "AMD" else 0.0

    def _communication(self, model: ModelSpec, r: Rates, shape: ReplicaShape) -> None:
        """Bytes a token sends between GPUs per step, the collectives a step runs, and the link's seconds a byte.

        A collective spans every GPU for the experts' all-to-all (attention data parallelism), else one stage's
        tensor-parallel group: pipeline stages pass activations point to point, a small share of the all-reduces.
        """
        t, pp = shape.gpus, shape.pipeline_parallel
        adp = self.ranks > 1
        group = t if adp else shape.tensor_parallel
        link = r.link_bytes_s if group <= r.nvlink_domain else min(r.link_bytes_s or math.inf, inter_node_bytes_s())
        self.comm_s = 1.0 / link if link > 0 else 0.0
        hidden = model.hidden_size or model.attention_heads * model.head_dim
        if group == 1:
            self.comm_bytes_per_token, self.collectives = 0.0, 0.0
        elif adp:  # experts' all-to-all: dispatch and combine k copies of each token's hidden state
            self.comm_bytes_per_token = 2.0 * self.top_k * hidden * ACTIVATION_BYTES * (t - 1) / t
            self.collectives = 2.0 * self.moe_layers
        else:  # two ring all-reduces per layer, each stage's over its own layers while the others run theirs
            ring = 2.0 * (group - 1) / group
            self.comm_bytes_per_token = 2.0 * model.layers * hidden * ACTIVATION_BYTES * ring / pp
            self.collectives = 2.0 * model.layers
        self.hops = self.collectives * math.log2(group) if group > 1 else 0.0

    def distinct_experts(self, tokens: Num) -> Num:
        """Expected experts a step's `tokens` route to in one layer (uniform routing; 0 for no tokens)."""
        if not self.experts:
            return 0.0
        return self.experts * (1.0 - (1.0 - self.top_k / self.experts) ** tokens)

    def features(self, step: StepInputs) -> tuple[float, ...]:
        """The feature vector of one step (see FEATURES), for the whole replica's batch."""
        capped = step.decode_ctx  # the context windowed layers read: at most the window per sequence
        if self.window and step.decode_seqs:
            capped = step.decode_seqs * min(step.decode_ctx / step.decode_seqs, self.window)
        return cast(tuple[float, ...], self._terms(step, capped=capped, high=max, low=min))

    def features_matrix(self, steps: StepInputs) -> Array:
        """features() of many steps at once: each input a column over the steps (step_columns), one row out a step."""
        decode_seqs = np.asarray(steps.decode_seqs, dtype=np.float64)
        decode_ctx = np.asarray(steps.decode_ctx, dtype=np.float64)
        capped = decode_ctx
        if self.window:
            per_seq = np.divide(decode_ctx, decode_seqs, out=np.zeros_like(decode_ctx), where=decode_seqs > 0)
            capped = np.where(decode_seqs > 0, decode_seqs * np.minimum(per_seq, self.window), decode_ctx)
        terms = self._terms(steps, capped=capped, high=np.maximum, low=np.minimum)
        out = np.empty((len(decode_seqs), len(terms)))
        for i, term in enumerate(terms):
            out[:, i] = term  # a constant term fills its column
        return out

    def _terms(
        self,
        step: StepInputs,
        *,
        capped: Num,
        high: Callable[[Num, Num], Num],
        low: Callable[[Num, Num], Num],
    ) -> tuple[Num, ...]:
        """The formula behind features() and features_matrix(), for a float or for numpy columns alike."""
        ranks = self.ranks
        decode_seqs, decode_ctx, tokens_per_decode = step.decode_seqs, step.decode_ctx, step.tokens_per_decode
        prefill_tokens, prefill_pairs, prefill_ctx = step.prefill_tokens, step.prefill_pairs, step.prefill_ctx
        tokens = decode_seqs * tokens_per_decode + prefill_tokens
        weights = self.dense_read_bytes + self.expert_layer_bytes * self.distinct_experts(tokens)
        kv_bytes = (self.kv_full * (decode_ctx + prefill_ctx) + self.kv_window * (capped + prefill_ctx)) / ranks
        kv = kv_bytes * self.mem_s
        mem = weights * self.mem_s + kv
        pairs = decode_ctx * tokens_per_decode + prefill_pairs
        window_pairs = capped * tokens_per_decode + prefill_pairs
        compute = tokens * self.gemm_flops_per_token * self.gemm_s
        compute = compute + (self.attn_full * pairs + self.attn_window * window_pairs) * self.attn_s / ranks
        comm = tokens / ranks * self.comm_bytes_per_token * self.comm_s
        draft = self.draft_share * weights * self.mem_s
        seqs = (decode_seqs + step.prefill_seqs) / ranks
        roof = high(mem, compute) + draft
        return (
            roof,
            low(mem, compute),
            kv,
            comm,
            self.collectives,
            self.hops,
            1.0,
            self.layers,
            seqs,
            tokens / ranks,
            tokens * self.routed_per_token,
            self.rocm * roof,
        )
