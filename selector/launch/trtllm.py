"""The TensorRT-LLM command: `trtllm-serve` with its extra LLM-API options file."""

from selector.launch.common import HEAD_NODE, LaunchCommand, Plan, extra_copies, moe_ep, node_gpus, node_names, tp_size
from selector.launch.sources import trtllm_source


def trtllm_command(plan: Plan) -> LaunchCommand:
    """`trtllm-serve` (under mpirun across nodes), with extra.yml for the KV cache, attention DP and speculation."""
    src = trtllm_source(plan)
    notes, warnings = list(src.notes), list(src.warnings)
    tp, pp, per_node = tp_size(plan), plan.pipeline_parallel, node_gpus(plan)
    adp = plan.attention_data_parallel
    yaml = _extra_options(plan)
    launcher: list[str] = []
    if plan.nodes > 1:
        hosts = ",".join(f"{name}:{per_node}" for name in node_names(plan.nodes))
        launcher = ["mpirun", "-H", hosts, "-np", str(per_node * plan.nodes), "trtllm-llmapi-launch"]
        notes.append(
            plan.tr(
                "mpirun starts all {ranks} ranks from the head node: replace {head} and NODE<i>_IP with the nodes' "
                "addresses; every node needs passwordless SSH from the head node, the same TensorRT-LLM container, the "
                "checkpoint at the same path and RDMA (InfiniBand or RoCE) between nodes."
            ).format(ranks=per_node * plan.nodes, head=HEAD_NODE)
        )
    argv = [*launcher, "trtllm-serve", src.path, "--tp_size", str(plan.split if adp else tp)]
    if pp > 1:
        argv += ["--pp_size", str(pp)]
    if moe_ep(plan):
        argv += ["--ep_size", str(plan.split if adp else tp)]
    if plan.nodes > 1:
        argv += ["--gpus_per_node", str(per_node)]
    argv += [
        "--max_batch_size",
        str(plan.max_num_seqs),
        "--max_num_tokens",
        str(plan.batched_tokens),
        "--max_seq_len",
        str(plan.context),
        "--kv_cache_free_gpu_memory_fraction",
        f"{plan.engine.kv_memory_share:g}",
        "--extra_llm_api_options",
        "extra.yml",
        "--host",
        "0.0.0.0",
        "--port",
        str(plan.engine.default_port),
    ]
    notes += extra_copies(plan, plan.split)
    return LaunchCommand(
        engine_id="tensorrt-llm",
        argv=tuple(argv),
        head=len(launcher) + 2,
        files={**src.files, "extra.yml": "\n".join(yaml) + "\n"},
        prepare=tuple(src.prepare),
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def _extra_options(plan: Plan) -> list[str]:
    """The lines of extra.yml: chunked prefill, KV-cache reuse and type, attention DP, n-gram speculation."""
    yaml = ["enable_chunked_prefill: true", "kv_cache_config:", "  enable_block_reuse: true"]
    if plan.kv_dtype == "fp8":
        yaml.append("  dtype: fp8")
    if plan.attention_data_parallel:
        yaml.append("enable_attention_dp: true")
    spec = plan.speculative
    if spec.enabled and spec.method == "ngram":
        yaml += [
            "speculative_config:",
            "  decoding_type: NGram",
            f"  max_draft_len: {spec.num_speculative_tokens}",
            f"  max_matching_ngram_size: {spec.prompt_lookup_max}",
        ]
    return yaml
