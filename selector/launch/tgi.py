"""The Text Generation Inference command: `text-generation-launcher`, sharded over one node's GPUs only."""

from selector.launch.common import LaunchCommand, Plan, no_multi_node, node_gpus
from selector.launch.sources import hf_source


def tgi_command(plan: Plan) -> LaunchCommand:
    src = hf_source(plan, online={"fp8", "nf4"})
    notes, warnings = list(src.notes), [*src.warnings, *no_multi_node(plan)]
    shards = min(plan.split, node_gpus(plan)) if plan.nodes > 1 else plan.split
    argv = ["text-generation-launcher", "--model-id", src.path, "--num-shard", str(shards)]
    if src.online:
        argv += ["--quantize", "bitsandbytes-nf4" if plan.quant == "nf4" else "fp8"]
    if plan.kv_dtype == "fp8":
        argv += ["--kv-cache-dtype", "fp8_e4m3fn"]
    argv += [
        "--max-input-tokens",
        str(plan.context * 3 // 4),
        "--max-total-tokens",
        str(plan.context),
        "--max-batch-prefill-tokens",
        str(max(plan.batched_tokens, plan.context * 3 // 4)),
    ]
    spec = plan.speculative
    if spec.enabled and spec.method == "ngram":
        argv += ["--speculate", str(spec.num_speculative_tokens)]
    argv += ["--port", str(plan.engine.default_port)]
    notes.append(
        plan.tr("TGI is in maintenance mode since 2025-12-11: fine for an existing fleet, not for new deployments.")
    )
    return LaunchCommand(
        engine_id="tgi",
        argv=tuple(argv),
        files=src.files,
        prepare=tuple(src.prepare),
        notes=tuple(notes),
        warnings=tuple(warnings),
    )
