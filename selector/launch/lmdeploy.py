"""The LMDeploy command: `lmdeploy serve api_server` on the TurboMind or the PyTorch backend."""

from catalog.quantization import get_quant
from selector.launch.common import (
    HEAD_NODE,
    LaunchCommand,
    Plan,
    device_note,
    extra_copies,
    moe_ep,
    other_nodes,
    other_rank,
    tp_size,
)
from selector.launch.sources import lmdeploy_source


def lmdeploy_backend(plan: Plan) -> tuple[str, list[str]]:
    """TurboMind when it loads the model's architecture and format and the layout needs nothing else, else PyTorch.

    The architecture lists and the formats per backend are engine facts in engines.csv (backends,
    primary_backend_archs, primary_backend_quant, fallback_backend_quant).
    """
    engine, model, quant = plan.engine, plan.model, plan.quant
    if plan.platform == "ascend":  # Ascend runs the PyTorch engine only (docs/en/get_started/ascend/get_started.md)
        return ("pytorch" if "pytorch" in engine.backends else ""), []
    if len(engine.backends) < 2:
        return (engine.backends[0] if engine.backends else ""), []
    primary, fallback = engine.backends[0], engine.backends[1]
    arch_ok = not model.architecture or model.architecture in engine.primary_backend_archs
    layout_ok = not (plan.expert_parallel or plan.attention_data_parallel or plan.nodes > 1)
    if arch_ok and layout_ok and quant in engine.primary_backend_quant:
        return primary, []
    if quant in engine.fallback_backend_quant:
        return fallback, []
    why = (
        plan.tr("{backend} does not load {architecture}").format(
            backend=primary, architecture=model.architecture or model.name
        )
        if not arch_ok
        else plan.tr("the layout needs {backend}").format(backend=fallback)
    )
    return primary, [
        plan.tr(
            "{engine} has no backend for this plan: {method} loads only on {backend}, but {why}; pick another format "
            "or engine."
        ).format(engine=engine.name, method=get_quant(quant).name, backend=primary, why=why)
    ]


def lmdeploy_command(plan: Plan) -> LaunchCommand:
    """`lmdeploy serve api_server` on its backend, with the layout, session length, KV policy and prefix caching."""
    backend, warnings = lmdeploy_backend(plan)
    src = lmdeploy_source(plan, backend)
    notes = [*src.notes, *device_note(plan)]
    warnings += src.warnings
    prepare = list(src.prepare)
    warnings += _ascend_nodes(plan)
    tp, pp = tp_size(plan), plan.pipeline_parallel
    adp = plan.attention_data_parallel
    argv = ["lmdeploy", "serve", "api_server", src.path, "--backend", backend, *_device(plan, notes)]
    if src.online:
        argv += ["--model-format", "fp8"]
    if adp:
        argv += ["--dp", str(plan.split), "--ep", str(plan.split)]
    else:
        argv += ["--tp", str(tp * pp)]
        if moe_ep(plan):
            argv += ["--ep", str(tp * pp)]
    if pp > 1:
        notes.append(
            plan.tr(
                "LMDeploy has no pipeline parallelism: the {gpus} GPUs form one tensor-parallel group (--tp {gpus}) "
                "across the nodes."
            ).format(gpus=tp * pp)
        )
    argv += [
        "--session-len",
        str(plan.context),
        "--max-batch-size",
        str(plan.max_num_seqs),
        "--max-prefill-token-num",
        str(plan.batched_tokens),
        "--cache-max-entry-count",
        f"{plan.engine.kv_memory_share:g}",
    ]
    if plan.kv_dtype == "int8":
        argv += ["--quant-policy", "8"]
    argv += ["--enable-prefix-caching"]
    argv, more, ray, env = _server(plan, argv)
    notes += more
    prepare += ray
    notes.append(
        plan.tr("LMDeploy's prefix caching is off by default, so the command turns it on (--enable-prefix-caching).")
    )
    return LaunchCommand(
        engine_id="lmdeploy",
        argv=tuple(argv),
        head=4,
        env=env,
        files=src.files,
        prepare=tuple(prepare),
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def _ascend_nodes(plan: Plan) -> list[str]:
    """A warning when the plan spans several Ascend nodes, which LMDeploy's Ascend guide does not cover."""
    if plan.platform != "ascend" or plan.nodes <= 1:
        return []
    return [
        plan.tr(
            "LMDeploy's Ascend guide runs on one server and documents no run over several nodes: for {nodes} nodes of "
            "Ascend NPUs use vLLM (vllm-ascend)."
        ).format(nodes=plan.nodes)
    ]


def _device(plan: Plan, notes: list[str]) -> list[str]:
    """--device for a platform other than CUDA (Ascend), with its note; nothing on NVIDIA GPUs."""
    if plan.platform != "ascend":
        return []
    notes.append(
        plan.tr(
            "On Huawei Ascend LMDeploy runs its PyTorch engine through dlinfer (--device ascend); its Ascend "
            "images and supported models are listed in LMDeploy's Ascend guide."
        )
    )
    return ["--device", "ascend"]


def _server(plan: Plan, argv: list[str]) -> tuple[list[str], list[str], list[tuple[str, ...]], dict[str, str]]:
    """The serving end: a proxy per data-parallel rank or one server port, and how the nodes join.

    Returns the argv, its notes, the commands to run first (Ray's head) and the environment.
    """
    argv, notes = list(argv), list[str]()
    prepare: list[tuple[str, ...]] = []
    env: dict[str, str] = {}
    proxy = f"http://{HEAD_NODE if plan.nodes > 1 else '127.0.0.1'}:{plan.engine.default_port}"
    if plan.attention_data_parallel:
        argv += ["--proxy-url", proxy]
        notes.append(
            plan.tr(
                "With --dp {split} LMDeploy starts one API server per data-parallel rank and registers them with a "
                "proxy: start `lmdeploy serve proxy --server-port {port}` first (another shell) and send requests to "
                "{proxy}."
            ).format(split=plan.split, port=plan.engine.default_port, proxy=proxy)
        )
        notes += extra_copies(plan, plan.split)
        if plan.nodes > 1:
            env["LMDEPLOY_DP_MASTER_ADDR"] = HEAD_NODE
            argv += ["--nnodes", str(plan.nodes), "--node-rank", "0"]
            notes.append(
                plan.tr(
                    "This is node 0 of {nodes}: on {others} run the same command with --node-rank {rank}; set "
                    "LMDEPLOY_DP_MASTER_PORT to the same free port on every node, keep the checkpoint at the same path "
                    "and use RDMA (InfiniBand or RoCE) between nodes."
                ).format(nodes=plan.nodes, others=other_nodes(plan), rank=other_rank(plan))
            )
    else:
        argv += ["--server-port", str(plan.engine.default_port)]
        if plan.nodes > 1:
            prepare.append(("ray", "start", "--head"))
            notes.append(
                plan.tr(
                    "The PyTorch engine spans nodes through Ray: on {others} run `ray start --address={head}:<port "
                    "printed by ray start --head>` before the server starts; every node needs the checkpoint at the "
                    "same path and RDMA (InfiniBand or RoCE)."
                ).format(others=other_nodes(plan), head=HEAD_NODE)
            )
        notes += extra_copies(plan, plan.split)
    return argv, notes, prepare, env
