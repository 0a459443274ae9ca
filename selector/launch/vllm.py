"""The vLLM command: `vllm serve` with today's flags; several nodes by --nnodes and --headless, or Ray on Ascend."""

import json
import shlex

from selector.launch.common import (
    HEAD_NODE,
    LaunchCommand,
    Plan,
    device_note,
    engine_gpus,
    extra_copies,
    moe_ep,
    node_gpus,
    other_nodes,
    other_rank,
    tp_size,
    with_value,
)
from selector.launch.sources import hf_source


def vllm_command(plan: Plan) -> LaunchCommand:
    """`vllm serve` with the layout, KV cache, offload and n-gram speculation; the head node's over several nodes."""
    src = hf_source(plan, online={"fp8"})
    notes, warnings = [*src.notes, *device_note(plan)], list(src.warnings)
    tp, pp, per_node = tp_size(plan), plan.pipeline_parallel, node_gpus(plan)
    adp = plan.attention_data_parallel
    argv = ["vllm", "serve", src.path, "--tensor-parallel-size", str(1 if adp else tp)]
    if pp > 1:
        argv += ["--pipeline-parallel-size", str(pp)]
    dp = plan.split if adp else plan.replicas
    if dp > 1:
        argv += ["--data-parallel-size", str(dp)]
    if moe_ep(plan):
        argv += ["--enable-expert-parallel"]
    if adp:
        notes += extra_copies(plan, plan.split)
    if src.online:
        argv += ["--quantization", "fp8"]
    if plan.kv_dtype == "fp8":
        argv += ["--kv-cache-dtype", "fp8"]
    argv += [
        "--max-model-len",
        str(plan.context),
        "--max-num-seqs",
        str(plan.max_num_seqs),
        "--max-num-batched-tokens",
        str(plan.batched_tokens),
        "--gpu-memory-utilization",
        f"{plan.engine.kv_memory_share:g}",
    ]
    argv += _speculative(plan)
    if plan.offload_gb:
        flags, note = _offload(plan, plan.offload_gb, gpus=engine_gpus(tp, pp, adp), copies=1 if adp else dp)
        argv += flags
        notes.append(note)
    if plan.nodes > 1:
        argv, note = _nodes(plan, argv, dp=dp, per_node=per_node)
        notes.append(note)
    argv += ["--port", str(plan.engine.default_port)]
    notes.append(plan.tr("Prefix caching and chunked prefill are on by default in vLLM V1: no flags needed."))
    notes += _ascend_notes(plan)
    return LaunchCommand(
        engine_id="vllm",
        argv=tuple(argv),
        head=3,
        files=src.files,
        prepare=tuple(src.prepare),
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def _ascend_notes(plan: Plan) -> list[str]:
    """On Huawei Ascend: the vllm-ascend plugin that runs the command, and how it reads a W8A8 checkpoint."""
    if plan.platform != "ascend":
        return []
    notes = [
        plan.tr(
            "On Huawei Ascend this command runs in the vllm-ascend plugin: install the vllm-ascend release made for "
            "your vLLM release on its CANN version (or start from its image quay.io/ascend/vllm-ascend of that "
            "release); the flags are vLLM's."
        )
    ]
    if plan.quant == "w8a8-int8":
        notes.append(
            plan.tr(
                "vllm-ascend reads an LLM-Compressor (compressed-tensors) W8A8 checkpoint, as here, with no "
                "quantization flag; a checkpoint made by Ascend's ModelSlim (such as those vllm-ascend publishes "
                "on ModelScope) needs --quantization ascend, a method the vllm-ascend plugin registers."
            )
        )
    return notes


def _offload(plan: Plan, gib: int, *, gpus: int, copies: int) -> tuple[list[str], str]:
    """The KV-offload flags and their note: vLLM's native backend, or vllm-ascend's NPU spec on Ascend."""
    if plan.platform == "ascend":
        flags = ["--kv-transfer-config", _npu_offload(gib * copies)]
        return flags, plan.tr(
            "On Ascend, KV offload goes through vllm-ascend's NPUOffloadingSpec of vLLM's OffloadingConnector "
            "(--kv-transfer-config): cpu_bytes_to_use is server-wide, {total} GiB of host memory ({gib} GiB for "
            "each of {copies} model copies), which vLLM divides across its workers."
        ).format(total=gib * copies, gib=gib, copies=copies)
    flags = ["--kv-offloading-backend", "native", "--kv-offloading-size", str(gib)]
    return flags, plan.tr(
        "--kv-offloading-size is GiB for each engine (summed over its {gpus} GPU(s)); every data-parallel "
        "engine allocates it in full."
    ).format(gpus=gpus)


def _nodes(plan: Plan, argv: list[str], *, dp: int, per_node: int) -> tuple[list[str], str]:
    """The head node's command over several nodes (data-parallel ranks, or one split copy), and the others' note."""
    argv = list(argv)
    if plan.attention_data_parallel or (dp > 1 and plan.split <= per_node):
        local = per_node // (1 if plan.attention_data_parallel else plan.split)
        argv += ["--data-parallel-size-local", str(local), "--data-parallel-address", HEAD_NODE]
        return argv, (
            plan.tr(
                "This is the head node (data-parallel ranks 0-{last}). On {others} run the same command with "
                "--headless --data-parallel-start-rank {start} added: {command} (node 1). Every node needs the "
                "checkpoint at the same path and RDMA (InfiniBand or RoCE) between nodes."
            ).format(
                last=local - 1,
                others=other_nodes(plan),
                start=local if plan.nodes == 2 else f"{local}*i",
                command=shlex.join([*argv, "--headless", "--data-parallel-start-rank", str(local)]),
            )
        )
    if plan.platform == "ascend":
        return _ascend_ray(plan, argv)
    argv += ["--nnodes", str(plan.nodes), "--node-rank", "0", "--master-addr", HEAD_NODE]
    worker = with_value(argv, "--node-rank", "1")
    return argv, (
        plan.tr(
            "This is node 0 of {nodes}. On {others} run the same command with --node-rank {rank} and --headless: "
            "{command} (node 1). Every node needs the same vLLM, the checkpoint at the same path and RDMA "
            "(InfiniBand or RoCE) between nodes."
        ).format(
            nodes=plan.nodes,
            others=other_nodes(plan),
            rank=other_rank(plan),
            command=shlex.join([*worker, "--headless"]),
        )
    )


def _ascend_ray(plan: Plan, argv: list[str]) -> tuple[list[str], str]:
    """One copy split over Ascend nodes: vllm-ascend runs it on a Ray cluster, the command on the head node only.

    As vllm-ascend's docs/source/tutorials/features/ray.md gives it (tensor parallel inside a node, pipeline
    parallel across nodes, --distributed-executor-backend ray).
    """
    argv = [*argv, "--distributed-executor-backend", "ray"]
    return argv, plan.tr(
        "On Ascend, vllm-ascend runs a copy split over {nodes} nodes on a Ray cluster. On every node set HCCL_IF_IP "
        "to its own address, GLOO_SOCKET_IFNAME and TP_SOCKET_IFNAME to its network interface, "
        "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1 and ASCEND_RT_VISIBLE_DEVICES to its NPUs; run `ray start "
        "--head` on the head node and `ray start --address={head}:6379` on {others}, then this command on the head "
        "node only. Every node needs the checkpoint at the same path."
    ).format(nodes=plan.nodes, head=HEAD_NODE, others=other_nodes(plan))


def _npu_offload(gib: int) -> str:
    """vllm-ascend's KV offload to host memory: vLLM's OffloadingConnector with the NPU spec, as one JSON object.

    The shape is vllm-ascend's docs/source/user_guide/feature_guide/kv_cache_cpu_offload.md (online serving).
    """
    config = {
        "kv_connector": "OffloadingConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {
            "cpu_bytes_to_use": gib * 2**30,
            "spec_name": "NPUOffloadingSpec",
            "spec_module_path": "vllm_ascend.distributed.kv_transfer.kv_pool.kv_offload.native.npu",
        },
    }
    return json.dumps(config, separators=(",", ":"))


def _speculative(plan: Plan) -> list[str]:
    """--speculative-config for n-gram speculation (vLLM takes one JSON object), else nothing."""
    spec = plan.speculative
    if not (spec.enabled and spec.method == "ngram"):
        return []
    config = {
        "method": "ngram",
        "num_speculative_tokens": spec.num_speculative_tokens,
        "prompt_lookup_max": spec.prompt_lookup_max,
        "prompt_lookup_min": spec.prompt_lookup_min,
    }
    return ["--speculative-config", json.dumps(config, separators=(",", ":"))]
