"""The SGLang command: `python -m sglang.launch_server`, multi-node by --nnodes/--dist-init-addr."""

import math
import shlex

from selector.launch.common import (
    GB_PER_GIB,
    HEAD_NODE,
    SGLANG_DIST_INIT_PORT,
    LaunchCommand,
    Plan,
    engine_gpus,
    extra_copies,
    moe_ep,
    other_nodes,
    other_rank,
    tp_size,
    with_value,
)
from selector.launch.sources import hf_source


def sglang_command(plan: Plan) -> LaunchCommand:
    """`python -m sglang.launch_server` with the layout, KV cache, HiCache offload and n-gram speculation."""
    src = hf_source(plan, online={"fp8", "nf4"})
    notes, warnings = list(src.notes), list(src.warnings)
    tp, pp = tp_size(plan), plan.pipeline_parallel
    adp = plan.attention_data_parallel
    argv = ["python", "-m", "sglang.launch_server", "--model-path", src.path]
    if adp:
        argv += ["--tp-size", str(plan.split), "--dp-size", str(plan.split), "--enable-dp-attention"]
        notes += extra_copies(plan, plan.split)
    else:
        argv += ["--tp-size", str(tp)]
        if pp > 1:
            argv += ["--pp-size", str(pp)]
        if plan.replicas > 1:
            argv += ["--dp-size", str(plan.replicas)]
    if moe_ep(plan):
        argv += ["--ep-size", str(plan.split if adp else tp)]
    if src.online and plan.quant == "nf4":
        argv += ["--quantization", "bitsandbytes", "--load-format", "bitsandbytes"]
    elif src.online:
        argv += ["--quantization", "fp8"]
    if plan.kv_dtype == "fp8":
        argv += ["--kv-cache-dtype", "fp8_e4m3"]
    argv += [
        "--context-length",
        str(plan.context),
        "--max-running-requests",
        str(plan.max_num_seqs),
        "--chunked-prefill-size",
        str(plan.batched_tokens),
    ]
    spec = plan.speculative
    if spec.enabled and spec.method == "ngram":
        argv += ["--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", str(spec.num_speculative_tokens)]
    if plan.offload_gb:
        ranks = engine_gpus(tp, pp, adp)
        per_rank_gb = math.ceil(plan.offload_gb * GB_PER_GIB / ranks)
        argv += ["--enable-hierarchical-cache", "--hicache-size", str(per_rank_gb)]
        notes.append(
            plan.tr(
                "--hicache-size is GB of host memory per GPU rank ({gb} GB here). HiCache keeps a copy of the GPU pool "
                "in host memory (write-through), so SGLang warns and gains little when it is smaller than the GPU KV "
                "pool: raise it to the pool's size plus this amount if the log says so."
            ).format(gb=per_rank_gb)
        )
    if plan.nodes > 1:
        argv, note = _nodes(plan, argv)
        notes.append(note)
    argv += ["--host", "0.0.0.0", "--port", str(plan.engine.default_port)]
    notes.append(plan.tr("RadixAttention (automatic prefix caching) is on by default in SGLang."))
    return LaunchCommand(
        engine_id="sglang",
        argv=tuple(argv),
        head=3,
        files=src.files,
        prepare=tuple(src.prepare),
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def _nodes(plan: Plan, argv: list[str]) -> tuple[list[str], str]:
    """The head node's command over several nodes, and the note saying what the other nodes run."""
    address = f"{HEAD_NODE}:{SGLANG_DIST_INIT_PORT}"
    argv = [*argv, "--nnodes", str(plan.nodes), "--node-rank", "0", "--dist-init-addr", address]
    worker = with_value(argv, "--node-rank", "1")
    return argv, (
        plan.tr(
            "This is node 0 of {nodes}. On {others} run the same command with --node-rank {rank}: {command} (node 1). "
            "{port} must be a free port on the head node; every node needs the checkpoint at the same path and "
            "RDMA (InfiniBand or RoCE) between nodes."
        ).format(
            nodes=plan.nodes,
            others=other_nodes(plan),
            rank=other_rank(plan),
            command=shlex.join(worker),
            port=SGLANG_DIST_INIT_PORT,
        )
    )
