"""Launch commands with today's flag spellings, one builder per engine, from one serving plan."""

import json
import shlex
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from selector.engines import ServingEngine
from selector.models import ModelSpec
from selector.quantization import get_quant
from selector.speculative import Speculative

CONTINUATION = " \\\n  "


class Plan(BaseModel):
    """Everything a launch command needs, decided by the advisor."""

    model_config = ConfigDict(frozen=True)

    engine: ServingEngine
    model: ModelSpec
    quant: str
    kv_dtype: str
    split: int
    replicas: int
    context: int
    max_num_seqs: int
    batched_tokens: int
    gpu_memory_utilization: float
    speculative: Speculative
    slots: int = 1
    offload_gb: int | None = None


class LaunchCommand(BaseModel):
    """A command to paste: environment, argv, files to write first, follow-up commands and notes."""

    model_config = ConfigDict(frozen=True)

    engine_id: str
    argv: tuple[str, ...]
    head: int = 1
    env: dict[str, str] = {}
    files: dict[str, str] = {}
    then: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()

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


def _placeholder(model: ModelSpec, suffix: str) -> str:
    return f"./{model.name}-{suffix}"


def _checkpoint(plan: Plan) -> tuple[str, list[str]]:
    """The checkpoint to load for the plan's quantization, and a note when the user must make it."""
    model, quant = plan.model, plan.quant
    if quant == "awq" and model.awq_repo and plan.engine.id != "tensorrt-llm":
        return model.awq_repo, []
    if quant == "fp8" and model.fp8_repo:
        return model.fp8_repo, []
    if quant in {"bf16", "nf4"} or (quant == "fp8" and plan.engine.id in {"vllm", "sglang", "tgi"}):
        return model.repo, []
    suffixes = {
        "awq": "AWQ",
        "gptq": "GPTQ-Int4",
        "fp8": "FP8",
        "w8a8-int8": "W8A8",
        "nvfp4": "NVFP4",
        "gguf-q4_k_m": "Q4_K_M.gguf",
    }
    tools = {
        "w8a8-int8": "llm-compressor (SmoothQuant + W8A8 recipe) or `lmdeploy lite smooth_quant`",
        "nvfp4": "NVIDIA ModelOpt or llm-compressor (NVFP4 scheme)",
        "fp8": "NVIDIA ModelOpt (FP8 PTQ)",
        "awq": "AutoAWQ or NVIDIA ModelOpt",
        "gptq": "GPTQModel",
        "gguf-q4_k_m": "llama.cpp's llama-quantize",
    }
    path = _placeholder(model, suffixes[quant])
    return path, [
        f"No published {get_quant(quant).name} checkpoint is in the catalog for {model.name}: make {path} "
        f"with {tools[quant]}."
    ]


def _vllm(plan: Plan) -> LaunchCommand:
    checkpoint, notes = _checkpoint(plan)
    argv = ["vllm", "serve", checkpoint, "--tensor-parallel-size", str(plan.split)]
    if plan.replicas > 1:
        argv += ["--data-parallel-size", str(plan.replicas)]
    if plan.quant == "fp8" and checkpoint == plan.model.repo:
        argv += ["--quantization", "fp8"]
    if plan.quant == "nf4":
        argv += ["--quantization", "bitsandbytes", "--enable-lora", "--lora-modules", "qlora=./qlora-adapter"]
        notes.append("Point --lora-modules at your QLoRA adapter directory.")
    if plan.quant == "gguf-q4_k_m":
        argv += ["--tokenizer", plan.model.repo]
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
        }
        argv += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    if plan.offload_gb:
        argv += ["--kv-offloading-backend", "native", "--kv-offloading-size", str(plan.offload_gb)]
    argv += ["--port", str(plan.engine.default_port)]
    notes.append("Prefix caching and chunked prefill are on by default in vLLM V1: no flags needed.")
    return LaunchCommand(engine_id="vllm", argv=tuple(argv), head=3, notes=tuple(notes))


def _sglang(plan: Plan) -> LaunchCommand:
    checkpoint, notes = _checkpoint(plan)
    argv = ["python", "-m", "sglang.launch_server", "--model-path", checkpoint, "--tp", str(plan.split)]
    if plan.replicas > 1:
        argv += ["--dp", str(plan.replicas)]
    flags = {"w8a8-int8": "w8a8_int8", "nvfp4": "modelopt_fp4", "nf4": "bitsandbytes", "gguf-q4_k_m": "gguf"}
    if plan.quant == "fp8" and checkpoint == plan.model.repo:
        argv += ["--quantization", "fp8"]
    elif plan.quant in flags:
        argv += ["--quantization", flags[plan.quant]]
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
        argv += ["--enable-hierarchical-cache"]
    argv += ["--host", "0.0.0.0", "--port", str(plan.engine.default_port)]
    notes.append("RadixAttention (automatic prefix caching) is on by default in SGLang.")
    return LaunchCommand(engine_id="sglang", argv=tuple(argv), head=3, notes=tuple(notes))


def _trtllm(plan: Plan) -> LaunchCommand:
    checkpoint, notes = _checkpoint(plan)
    yaml = ["enable_chunked_prefill: true", "kv_cache_config:", "  enable_block_reuse: true"]
    if plan.kv_dtype == "fp8":
        yaml.append("  dtype: fp8")
    spec = plan.speculative
    if spec.enabled and spec.method == "ngram":
        yaml += [
            "speculative_config:",
            "  decoding_type: NGram",
            f"  max_draft_len: {spec.num_speculative_tokens}",
            f"  max_matching_ngram_size: {spec.prompt_lookup_max}",
        ]
    argv = [
        "trtllm-serve",
        checkpoint,
        "--tp_size",
        str(plan.split),
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
    if plan.replicas > 1:
        notes.append(f"Run {plan.replicas} copies (one per group of {plan.split} GPUs) behind a load balancer.")
    return LaunchCommand(
        engine_id="tensorrt-llm",
        argv=tuple(argv),
        head=2,
        files={"extra.yml": "\n".join(yaml) + "\n"},
        notes=tuple(notes),
    )


def _lmdeploy(plan: Plan) -> LaunchCommand:
    checkpoint, notes = _checkpoint(plan)
    pytorch = plan.quant in {"w8a8-int8"}
    formats = {"awq": "awq", "gptq": "gptq", "fp8": "fp8"}
    argv = ["lmdeploy", "serve", "api_server", checkpoint, "--backend", "pytorch" if pytorch else "turbomind"]
    if plan.quant in formats:
        argv += ["--model-format", formats[plan.quant]]
    argv += [
        "--tp",
        str(plan.split),
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
    argv += ["--enable-prefix-caching", "--server-port", str(plan.engine.default_port)]
    notes.append("LMDeploy's prefix caching is off by default, so the command turns it on (--enable-prefix-caching).")
    if plan.replicas > 1:
        notes.append(f"Run {plan.replicas} copies (one per group of {plan.split} GPUs) behind a load balancer.")
    return LaunchCommand(engine_id="lmdeploy", argv=tuple(argv), head=4, notes=tuple(notes))


def _tgi(plan: Plan) -> LaunchCommand:
    checkpoint, notes = _checkpoint(plan)
    argv = ["text-generation-launcher", "--model-id", checkpoint, "--num-shard", str(plan.split)]
    flags = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "nf4": "bitsandbytes-nf4"}
    if plan.quant in flags:
        argv += ["--quantize", flags[plan.quant]]
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
    notes.append("TGI is in maintenance mode since 2025-12-11: fine for an existing fleet, not for new deployments.")
    return LaunchCommand(engine_id="tgi", argv=tuple(argv), notes=tuple(notes))


def _llama_cpp(plan: Plan) -> LaunchCommand:
    notes: list[str] = []
    slots = max(1, plan.slots)
    if plan.model.gguf_repo:
        source = ["-hf", f"{plan.model.gguf_repo}:Q4_K_M"]
    else:
        path = _placeholder(plan.model, "Q4_K_M.gguf")
        source = ["-m", path]
        notes.append(f"No GGUF repository is in the catalog for {plan.model.name}: make {path} with llama-quantize.")
    argv = ["llama-server", *source, "-ngl", "99", "-c", str(plan.context * slots), "-np", str(slots), "-fa", "on"]
    if plan.kv_dtype == "q8_0":
        argv += ["-ctk", "q8_0", "-ctv", "q8_0"]
    argv += ["--host", "127.0.0.1", "--port", str(plan.engine.default_port)]
    notes.append(f"-c is shared by the {slots} slots (-np): each gets {plan.context} tokens.")
    if plan.speculative.enabled:
        notes.append(
            "llama.cpp's speculative flags change between releases: check `llama-server --help` of the "
            "release you pin for the n-gram --spec-type."
        )
    return LaunchCommand(engine_id="llama.cpp", argv=tuple(argv), notes=tuple(notes))


def _ollama(plan: Plan) -> LaunchCommand:
    env = {
        "OLLAMA_NUM_PARALLEL": str(max(1, plan.slots)),
        "OLLAMA_CONTEXT_LENGTH": str(plan.context),
        "OLLAMA_FLASH_ATTENTION": "1",
    }
    if plan.kv_dtype == "q8_0":
        env["OLLAMA_KV_CACHE_TYPE"] = "q8_0"
    if plan.split > 1:
        env["OLLAMA_SCHED_SPREAD"] = "1"
    tag = plan.model.ollama_tag or plan.model.name.lower()
    return LaunchCommand(
        engine_id="ollama",
        argv=("ollama", "serve"),
        head=2,
        env=env,
        then=(("ollama", "pull", tag),),
        notes=("Run `ollama pull` in a second shell once the server is up.",),
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
