"""Launch commands with today's flag spellings, one builder per engine, from one serving plan."""

import json
import math
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from catalog.engines import ServingEngine, load_engines
from catalog.models import ModelSpec
from catalog.quantization import BYTES_PER_GB, get_quant
from i18n import DEFAULT_LANGUAGE, Language, translate
from selector.speculative import Speculative

CONTINUATION = " \\\n  "
GB_PER_GIB = 2**30 / BYTES_PER_GB  # 1 GiB = 1.073741824 GB: engines that take GiB get GB / GB_PER_GIB
HEAD_NODE = "HEAD_NODE_IP"  # placeholder the user replaces with the head node's address
SGLANG_DIST_INIT_PORT = 50000  # any free TCP port on the head node; SGLang's server-arguments doc uses this one


class Plan(BaseModel):
    """Everything a launch command needs, decided by the advisor."""

    model_config = ConfigDict(frozen=True)

    engine: ServingEngine
    model: ModelSpec
    quant: str
    kv_dtype: str
    split: int  # GPUs per model copy: tensor_parallel x pipeline_parallel
    replicas: int  # data-parallel copies (with attention_data_parallel: attention ranks of one copy instead)
    tensor_parallel: int = 0  # 0: same as split
    pipeline_parallel: int = 1  # pipeline stages, one per node when nodes > 1
    expert_parallel: bool = False  # experts spread over the copy's GPUs instead of split by tensor parallelism
    attention_data_parallel: bool = False  # MLA attention replicated per GPU, each holding its own sequences
    nodes: int = 1
    gpus_per_node: int = 0  # 0: same as split
    gpu_offload: bool = True  # False on a CPU-only host: no layers to offload to a GPU
    context: int
    max_num_seqs: int
    batched_tokens: int
    gpu_memory_utilization: float
    speculative: Speculative
    slots: int = 1
    offload_gb: int | None = None  # KV offload for each engine (one model copy), in GiB
    language: Language = DEFAULT_LANGUAGE  # the notes' and warnings' language (the command itself is the same)

    def tr(self, message: str) -> str:
        """A note's text in the plan's language."""
        return translate(self.language, message)


class LaunchCommand(BaseModel):
    """A command to paste: environment, argv, files and preparation commands first, follow-ups, notes and warnings.

    `prepare` runs before the main command (making a quantized checkpoint, starting a Ray head); `then` after it in
    another shell. `warnings` are what the advisor must show beside the command, not only as notes.
    """

    model_config = ConfigDict(frozen=True)

    engine_id: str
    argv: tuple[str, ...]
    head: int = 1
    env: dict[str, str] = {}
    files: dict[str, str] = {}
    prepare: tuple[tuple[str, ...], ...] = ()
    then: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def command_line(self) -> str:
        """The main command on one line (environment assignments first)."""
        return shlex.join([*(f"{k}={v}" for k, v in self.env.items()), *self.argv])

    @property
    def shell(self) -> str:
        """Everything to paste into a shell, flags one per line."""
        lines: list[str] = []
        for name, content in self.files.items():
            lines += [f"cat > {name} <<'EOF'", content.rstrip("\n"), "EOF"]
        lines += [shlex.join(cmd) for cmd in self.prepare]
        head = [*(f"{k}={shlex.quote(v)}" for k, v in self.env.items())]
        parts: list[str] = []
        argv = list(self.argv)
        parts.append(" ".join([*head, *[shlex.quote(a) for a in argv[: self.head]]]))
        rest = argv[self.head :]
        i = 0
        while i < len(rest):
            group = [rest[i]]
            while i + 1 < len(rest) and not rest[i + 1].startswith("-"):
                i += 1
                group.append(rest[i])
            parts.append(" ".join(shlex.quote(a) for a in group))
            i += 1
        lines.append(CONTINUATION.join(parts))
        lines += [shlex.join(cmd) for cmd in self.then]
        return "\n".join(lines)


# -- layout helpers -------------------------------------------------------------------------------------------------
def engine_gpus(tensor_parallel: int, pipeline_parallel: int, attention_data_parallel: bool) -> int:
    """GPUs of one serving engine: one per rank under data-parallel attention, else the copy's tensor x pipeline."""
    return 1 if attention_data_parallel else max(1, tensor_parallel) * max(1, pipeline_parallel)


def offload_gib(shortfall_gb_per_gpu: float, gpus: int, extra_gib: int) -> int:
    """KV offload size for one engine in GiB: its GPUs' KV shortfall (GB) converted to GiB, plus headroom."""
    return math.ceil(shortfall_gb_per_gpu * gpus / GB_PER_GIB) + extra_gib


def _tp(plan: Plan) -> int:
    return plan.tensor_parallel or max(1, plan.split // max(1, plan.pipeline_parallel))


def _per_node(plan: Plan) -> int:
    return plan.gpus_per_node or plan.split


def _moe_ep(plan: Plan) -> bool:
    """Experts spread whole over the GPUs: asked for, or implied by data-parallel attention on a MoE model."""
    return plan.expert_parallel or (plan.attention_data_parallel and plan.model.is_moe)


def _with_value(argv: list[str], flag: str, value: str) -> list[str]:
    """The argv with the value after `flag` replaced (the command for another node)."""
    out = list(argv)
    out[out.index(flag) + 1] = value
    return out


def _others(plan: Plan) -> str:
    """How the notes name the nodes other than the head: 'node 1', or 'node i (1-3)'."""
    return plan.tr("node 1") if plan.nodes == 2 else plan.tr("node i (1-{last})").format(last=plan.nodes - 1)


def _node_names(nodes: int) -> list[str]:
    return [HEAD_NODE, *(f"NODE{i}_IP" for i in range(1, nodes))]


def _multi_node_engines() -> str:
    return ", ".join(e.name for e in load_engines() if e.multi_node and e.launchable)


def _no_multi_node(plan: Plan) -> list[str]:
    if plan.nodes <= 1:
        return []
    return [
        plan.tr(
            "{engine} cannot spread one model copy over several nodes, so this command runs on one node only; "
            "the plan needs {nodes} nodes: use {engines} for it."
        ).format(engine=plan.engine.name, nodes=plan.nodes, engines=_multi_node_engines())
    ]


def _extra_copies(plan: Plan, gpus: int) -> list[str]:
    if plan.replicas <= 1:
        return []
    return [
        plan.tr("Run {replicas} copies (one per group of {gpus} GPUs) behind a load balancer.").format(
            replicas=plan.replicas, gpus=gpus
        )
    ]


# -- checkpoints ----------------------------------------------------------------------------------------------------
SUFFIXES = {
    "awq": "AWQ",
    "gptq": "GPTQ-Int4",
    "fp8": "FP8",
    "w8a8-int8": "W8A8",
    "nvfp4": "NVFP4",
    "mxfp4": "MXFP4",
    "gguf-q4_k_m": "Q4_K_M.gguf",
}

# llm-compressor recipes (vllm-project/llm-compressor examples): modifier import and constructor per method.
LLM_COMPRESSOR = {
    "awq": (
        "from llmcompressor.modifiers.awq import AWQModifier",
        'AWQModifier(targets=["Linear"], scheme="W4A16_ASYM"',
    ),
    "gptq": (
        "from llmcompressor.modifiers.quantization import GPTQModifier",
        'GPTQModifier(targets="Linear", scheme="W4A16"',
    ),
    "nvfp4": (
        "from llmcompressor.modifiers.quantization import QuantizationModifier",
        'QuantizationModifier(targets="Linear", scheme="NVFP4"',
    ),
    "w8a8-int8": (
        "from llmcompressor.modifiers.quantization import GPTQModifier\n"
        "from llmcompressor.modifiers.smoothquant import SmoothQuantModifier",
        'SmoothQuantModifier(), GPTQModifier(targets="Linear", scheme="W8A8"',
    ),
}
MODELOPT_QFORMAT = {"fp8": "fp8", "nvfp4": "nvfp4", "awq": "int4_awq", "mxfp4": "mxfp4"}
LMDEPLOY_LITE = {
    "awq": ("auto_awq",),
    "gptq": ("auto_gptq",),
    "w8a8-int8": ("smooth_quant", "--quant-dtype", "int8"),
}


@dataclass
class _Source:
    """Where the weights come from: a published checkpoint, the BF16 one quantized at load, or one made first."""

    path: str
    online: bool = False
    prepare: list[tuple[str, ...]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _placeholder(model: ModelSpec, suffix: str) -> str:
    return f"./{model.name}-{suffix}"


def _bf16(model: ModelSpec) -> str:
    return model.checkpoint("bf16") or model.repo


def _made(plan: Plan, path: str, tool: str) -> str:
    return plan.tr(
        "No published {method} checkpoint for {model} is in the catalog: the first command(s) make {path} with "
        "{tool}, then the server loads it."
    ).format(method=get_quant(plan.quant).name, model=plan.model.name, path=path, tool=tool)


def _llm_compressor(plan: Plan) -> _Source:
    path = _placeholder(plan.model, SUFFIXES[plan.quant])
    imports, modifier = LLM_COMPRESSOR[plan.quant]
    ignore = ['"lm_head"', *(['"re:.*mlp.gate$"'] if plan.model.is_moe else [])]
    script = "\n".join(
        [
            "from llmcompressor import oneshot",
            imports,
            "",
            "oneshot(",
            f'    model="{_bf16(plan.model)}",',
            '    dataset="open_platypus",',
            f"    recipe=[{modifier}, ignore=[{', '.join(ignore)}])],",
            f'    output_dir="{path}",',
            ")",
        ]
    )
    return _Source(
        path=path,
        prepare=[("python", "quantize.py")],
        files={"quantize.py": script + "\n"},
        notes=[
            _made(
                plan, path, plan.tr("llm-compressor's oneshot (pip install llmcompressor; calibrates on open_platypus)")
            )
        ],
    )


def _no_tool(plan: Plan) -> _Source:
    method = get_quant(plan.quant).name
    return _Source(
        path=_bf16(plan.model),
        warnings=[
            plan.tr(
                "{model} has no published {method} checkpoint and {engine} documents no tool that makes one; the "
                "command loads the BF16 checkpoint instead: pick another format for this model."
            ).format(model=plan.model.name, method=method, engine=plan.engine.name)
        ],
    )


def _hf_source(plan: Plan, online: set[str]) -> _Source:
    """vLLM, SGLang and TGI: a published checkpoint, BF16 quantized at load (`online`), or llm-compressor first."""
    quant = plan.quant
    published = plan.model.checkpoint(quant)
    if quant == "bf16":
        return _Source(path=_bf16(plan.model))
    if published:
        return _Source(path=published)
    if quant in online:
        return _Source(path=_bf16(plan.model), online=True)
    if quant in LLM_COMPRESSOR:
        return _llm_compressor(plan)
    return _no_tool(plan)


def _modelopt(plan: Plan, lead: str = "") -> _Source:
    path = _placeholder(plan.model, SUFFIXES[plan.quant])
    command = (
        "python",
        "examples/hf_ptq/hf_ptq.py",
        "--pyt_ckpt_path",
        _bf16(plan.model),
        "--qformat",
        MODELOPT_QFORMAT[plan.quant],
        "--kv_cache_qformat",
        "none",
        "--export_path",
        path,
    )
    tool = plan.tr("NVIDIA ModelOpt's hf_ptq.py (run it in a checkout of github.com/NVIDIA/Model-Optimizer)")
    made = plan.tr("The first command makes {path} with {tool}, then the server loads it.").format(path=path, tool=tool)
    note = plan.tr("{first} {second}").format(first=lead, second=made) if lead else _made(plan, path, tool)
    return _Source(path=path, prepare=[command], notes=[note])


def _trtllm_source(plan: Plan) -> _Source:
    quant = plan.quant
    if quant == "bf16":
        return _Source(path=_bf16(plan.model))
    published = plan.model.checkpoint(quant)
    if quant == "awq" and published:
        return _modelopt(
            plan,
            plan.tr(
                "The catalog's AWQ checkpoint ({published}) is in AutoAWQ format, which TensorRT-LLM's PyTorch "
                "backend does not read (it reads ModelOpt int4_awq checkpoints)."
            ).format(published=published),
        )
    if quant == "awq":
        return _modelopt(plan)
    if published:
        return _Source(path=published)
    if quant in MODELOPT_QFORMAT:
        return _modelopt(plan)
    return _no_tool(plan)


def _lmdeploy_source(plan: Plan, backend: str) -> _Source:
    quant, model = plan.quant, plan.model
    published = model.checkpoint(quant)
    if quant == "bf16":
        return _Source(path=_bf16(model))
    if quant == "fp8":
        if model.native_format == "fp8" and model.hf_repo:
            return _Source(path=model.hf_repo)
        return _Source(path=_bf16(model), online=backend == "pytorch")
    if published:
        return _Source(path=published)
    if quant in LMDEPLOY_LITE:
        path = _placeholder(model, SUFFIXES[quant])
        sub, *extra = LMDEPLOY_LITE[quant]
        command = ("lmdeploy", "lite", sub, _bf16(model), "--work-dir", path, *extra)
        return _Source(path=path, prepare=[command], notes=[_made(plan, path, f"`lmdeploy lite {sub}`")])
    return _no_tool(plan)


# -- engines --------------------------------------------------------------------------------------------------------
def _vllm(plan: Plan) -> LaunchCommand:
    src = _hf_source(plan, online={"fp8"})
    notes, warnings = list(src.notes), list(src.warnings)
    tp, pp, per_node = _tp(plan), plan.pipeline_parallel, _per_node(plan)
    adp = plan.attention_data_parallel
    argv = ["vllm", "serve", src.path, "--tensor-parallel-size", str(1 if adp else tp)]
    if pp > 1:
        argv += ["--pipeline-parallel-size", str(pp)]
    dp = plan.split if adp else plan.replicas
    if dp > 1:
        argv += ["--data-parallel-size", str(dp)]
    if _moe_ep(plan):
        argv += ["--enable-expert-parallel"]
    if adp:
        notes += _extra_copies(plan, plan.split)
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
        f"{plan.gpu_memory_utilization:g}",
    ]
    spec = plan.speculative
    if spec.enabled and spec.method == "ngram":
        config = {
            "method": "ngram",
            "num_speculative_tokens": spec.num_speculative_tokens,
            "prompt_lookup_max": spec.prompt_lookup_max,
            "prompt_lookup_min": spec.prompt_lookup_min,
        }
        argv += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    if plan.offload_gb:
        argv += ["--kv-offloading-backend", "native", "--kv-offloading-size", str(plan.offload_gb)]
        notes.append(
            plan.tr(
                "--kv-offloading-size is GiB for each engine (summed over its {gpus} GPU(s)); every data-parallel "
                "engine allocates it in full."
            ).format(gpus=engine_gpus(tp, pp, adp))
        )
    multi = plan.nodes > 1
    if multi and (adp or (dp > 1 and plan.split <= per_node)):
        local = per_node // (1 if adp else plan.split)
        argv += ["--data-parallel-size-local", str(local), "--data-parallel-address", HEAD_NODE]
        notes.append(
            plan.tr(
                "This is the head node (data-parallel ranks 0-{last}). On {others} run the same command with "
                "--headless --data-parallel-start-rank {local}*i added: {command} (node 1). Every node needs the "
                "checkpoint at the same path and RDMA (InfiniBand or RoCE) between nodes."
            ).format(
                last=local - 1,
                others=_others(plan),
                local=local,
                command=shlex.join([*argv, "--headless", "--data-parallel-start-rank", str(local)]),
            )
        )
    elif multi:
        argv += ["--nnodes", str(plan.nodes), "--node-rank", "0", "--master-addr", HEAD_NODE]
        worker = _with_value(argv, "--node-rank", "1")
        notes.append(
            plan.tr(
                "This is node 0 of {nodes}. On {others} run the same command with --node-rank i and --headless: "
                "{command} (node 1). Every node needs the same vLLM, the checkpoint at the same path and RDMA "
                "(InfiniBand or RoCE) between nodes."
            ).format(nodes=plan.nodes, others=_others(plan), command=shlex.join([*worker, "--headless"]))
        )
    argv += ["--port", str(plan.engine.default_port)]
    notes.append(plan.tr("Prefix caching and chunked prefill are on by default in vLLM V1: no flags needed."))
    return LaunchCommand(
        engine_id="vllm",
        argv=tuple(argv),
        head=3,
        files=src.files,
        prepare=tuple(src.prepare),
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def _sglang(plan: Plan) -> LaunchCommand:
    src = _hf_source(plan, online={"fp8", "nf4"})
    notes, warnings = list(src.notes), list(src.warnings)
    tp, pp = _tp(plan), plan.pipeline_parallel
    adp = plan.attention_data_parallel
    argv = ["python", "-m", "sglang.launch_server", "--model-path", src.path]
    if adp:
        argv += ["--tp-size", str(plan.split), "--dp-size", str(plan.split), "--enable-dp-attention"]
        notes += _extra_copies(plan, plan.split)
    else:
        argv += ["--tp-size", str(tp)]
        if pp > 1:
            argv += ["--pp-size", str(pp)]
        if plan.replicas > 1:
            argv += ["--dp-size", str(plan.replicas)]
    if _moe_ep(plan):
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
        address = f"{HEAD_NODE}:{SGLANG_DIST_INIT_PORT}"
        argv += ["--nnodes", str(plan.nodes), "--node-rank", "0", "--dist-init-addr", address]
        worker = _with_value(argv, "--node-rank", "1")
        notes.append(
            plan.tr(
                "This is node 0 of {nodes}. On {others} run the same command with --node-rank i: {command} (node 1). "
                "{port} must be a free port on the head node; every node needs the checkpoint at the same path and "
                "RDMA (InfiniBand or RoCE) between nodes."
            ).format(nodes=plan.nodes, others=_others(plan), command=shlex.join(worker), port=SGLANG_DIST_INIT_PORT)
        )
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


def _trtllm(plan: Plan) -> LaunchCommand:
    src = _trtllm_source(plan)
    notes, warnings = list(src.notes), list(src.warnings)
    tp, pp, per_node = _tp(plan), plan.pipeline_parallel, _per_node(plan)
    adp = plan.attention_data_parallel
    yaml = ["enable_chunked_prefill: true", "kv_cache_config:", "  enable_block_reuse: true"]
    if plan.kv_dtype == "fp8":
        yaml.append("  dtype: fp8")
    if adp:
        yaml.append("enable_attention_dp: true")
    spec = plan.speculative
    if spec.enabled and spec.method == "ngram":
        yaml += [
            "speculative_config:",
            "  decoding_type: NGram",
            f"  max_draft_len: {spec.num_speculative_tokens}",
            f"  max_matching_ngram_size: {spec.prompt_lookup_max}",
        ]
    launcher: list[str] = []
    if plan.nodes > 1:
        hosts = ",".join(f"{name}:{per_node}" for name in _node_names(plan.nodes))
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
    if _moe_ep(plan):
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
        f"{plan.gpu_memory_utilization:g}",
        "--extra_llm_api_options",
        "extra.yml",
        "--host",
        "0.0.0.0",
        "--port",
        str(plan.engine.default_port),
    ]
    notes += _extra_copies(plan, plan.split)
    return LaunchCommand(
        engine_id="tensorrt-llm",
        argv=tuple(argv),
        head=len(launcher) + 2,
        files={**src.files, "extra.yml": "\n".join(yaml) + "\n"},
        prepare=tuple(src.prepare),
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def lmdeploy_backend(plan: Plan) -> tuple[str, list[str]]:
    """TurboMind when it loads the model's architecture and format and the layout needs nothing else, else PyTorch.

    The architecture lists and the formats per backend are engine facts in engines.csv (backends,
    primary_backend_archs, primary_backend_quant, fallback_backend_quant).
    """
    engine, model, quant = plan.engine, plan.model, plan.quant
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


def _lmdeploy(plan: Plan) -> LaunchCommand:
    backend, warnings = lmdeploy_backend(plan)
    src = _lmdeploy_source(plan, backend)
    notes = list(src.notes)
    warnings += src.warnings
    prepare = list(src.prepare)
    env: dict[str, str] = {}
    tp, pp = _tp(plan), plan.pipeline_parallel
    adp = plan.attention_data_parallel
    argv = ["lmdeploy", "serve", "api_server", src.path, "--backend", backend]
    if src.online:
        argv += ["--model-format", "fp8"]
    if adp:
        argv += ["--dp", str(plan.split), "--ep", str(plan.split)]
    else:
        argv += ["--tp", str(tp * pp)]
        if _moe_ep(plan):
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
        "0.8",
    ]
    if plan.kv_dtype == "int8":
        argv += ["--quant-policy", "8"]
    argv += ["--enable-prefix-caching"]
    proxy = f"http://{HEAD_NODE if plan.nodes > 1 else '127.0.0.1'}:{plan.engine.default_port}"
    if adp:
        argv += ["--proxy-url", proxy]
        notes.append(
            plan.tr(
                "With --dp {split} LMDeploy starts one API server per data-parallel rank and registers them with a "
                "proxy: start `lmdeploy serve proxy --server-port {port}` first (another shell) and send requests to "
                "{proxy}."
            ).format(split=plan.split, port=plan.engine.default_port, proxy=proxy)
        )
        notes += _extra_copies(plan, plan.split)
        if plan.nodes > 1:
            env["LMDEPLOY_DP_MASTER_ADDR"] = HEAD_NODE
            argv += ["--nnodes", str(plan.nodes), "--node-rank", "0"]
            notes.append(
                plan.tr(
                    "This is node 0 of {nodes}: on {others} run the same command with --node-rank i; set "
                    "LMDEPLOY_DP_MASTER_PORT to the same free port on every node, keep the checkpoint at the same path "
                    "and use RDMA (InfiniBand or RoCE) between nodes."
                ).format(nodes=plan.nodes, others=_others(plan))
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
                ).format(others=_others(plan), head=HEAD_NODE)
            )
        notes += _extra_copies(plan, plan.split)
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


def _tgi(plan: Plan) -> LaunchCommand:
    src = _hf_source(plan, online={"fp8", "nf4"})
    notes, warnings = list(src.notes), [*src.warnings, *_no_multi_node(plan)]
    shards = min(plan.split, _per_node(plan)) if plan.nodes > 1 else plan.split
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


def _llama_cpp(plan: Plan) -> LaunchCommand:
    notes: list[str] = []
    prepare: list[tuple[str, ...]] = []
    slots = max(1, plan.slots)
    model = plan.model
    if model.gguf_repo and model.native_format == "mxfp4":  # gpt-oss's GGUF keeps its own MXFP4 experts: no tag
        source = ["-hf", model.gguf_repo]
    elif model.gguf_repo:
        source = ["-hf", f"{model.gguf_repo}:Q4_K_M"]
    else:
        hf_dir = f"./{model.name}"
        bf16_gguf = _placeholder(model, "BF16.gguf")
        path = _placeholder(model, SUFFIXES["gguf-q4_k_m"])
        prepare = [
            ("hf", "download", _bf16(model), "--local-dir", hf_dir),
            ("python", "convert_hf_to_gguf.py", hf_dir, "--outtype", "bf16", "--outfile", bf16_gguf),
            ("llama-quantize", bf16_gguf, path, "Q4_K_M"),
        ]
        source = ["-m", path]
        notes.append(
            plan.tr(
                "No GGUF repository is in the catalog for {model}: the first commands download it, convert it with "
                "convert_hf_to_gguf.py (in a llama.cpp checkout) and make {path} with llama-quantize."
            ).format(model=model.name, path=path)
        )
    offload = ["-ngl", "99"] if plan.gpu_offload else []
    argv = ["llama-server", *source, *offload, "-c", str(plan.context * slots), "-np", str(slots), "-fa", "on"]
    if plan.kv_dtype == "q8_0":
        argv += ["-ctk", "q8_0", "-ctv", "q8_0"]
    spec = plan.speculative
    if spec.enabled and spec.method == "ngram":
        argv += [
            "--spec-type",
            "ngram-simple",
            "--spec-ngram-simple-size-n",
            str(spec.prompt_lookup_max),
            "--spec-ngram-simple-size-m",
            str(spec.num_speculative_tokens),
        ]
        notes.append(
            plan.tr(
                "n-gram speculation (ngram-simple): look up the last {lookup} tokens in the context and draft the "
                "{tokens} that followed them."
            ).format(lookup=spec.prompt_lookup_max, tokens=spec.num_speculative_tokens)
        )
    argv += ["--host", "127.0.0.1", "--port", str(plan.engine.default_port)]
    notes.append(
        plan.tr("-c is shared by the {slots} slots (-np): each gets {context} tokens.").format(
            slots=slots, context=plan.context
        )
    )
    return LaunchCommand(
        engine_id="llama.cpp",
        argv=tuple(argv),
        prepare=tuple(prepare),
        notes=tuple(notes),
        warnings=tuple(_no_multi_node(plan)),
    )


def _ollama(plan: Plan) -> LaunchCommand:
    slots = max(1, plan.slots)
    env = {
        "OLLAMA_NUM_PARALLEL": str(slots),
        "OLLAMA_CONTEXT_LENGTH": str(plan.context),
        "OLLAMA_FLASH_ATTENTION": "1",
    }
    if plan.kv_dtype == "q8_0":
        env["OLLAMA_KV_CACHE_TYPE"] = "q8_0"
    if plan.split > 1:
        env["OLLAMA_SCHED_SPREAD"] = "1"
    warnings = _no_multi_node(plan)
    limit = plan.engine.max_slots_advised
    if limit is not None and slots > limit:
        warnings.append(
            plan.tr(
                "OLLAMA_NUM_PARALLEL={slots} is above {limit}, the most parallel requests Ollama ever chose on its own "
                "(its default is 1): every slot adds a full {context}-token context of KV memory and Ollama batches "
                "them less efficiently than vLLM or llama-server. For this concurrency use vLLM (or llama.cpp's "
                "llama-server on Apple and CPU machines)."
            ).format(slots=slots, limit=limit, context=plan.context)
        )
    tag = plan.model.ollama_tag or plan.model.name.lower()
    return LaunchCommand(
        engine_id="ollama",
        argv=("ollama", "serve"),
        head=2,
        env=env,
        then=(("ollama", "pull", tag),),
        notes=(plan.tr("Run `ollama pull` in a second shell once the server is up."),),
        warnings=tuple(warnings),
    )


BUILDERS: dict[str, Callable[[Plan], LaunchCommand]] = {
    "vllm": _vllm,
    "sglang": _sglang,
    "tensorrt-llm": _trtllm,
    "lmdeploy": _lmdeploy,
    "tgi": _tgi,
    "llama.cpp": _llama_cpp,
    "ollama": _ollama,
}


def launch_command(plan: Plan) -> LaunchCommand:
    """The launch command for the plan's engine."""
    return BUILDERS[plan.engine.id](plan)
