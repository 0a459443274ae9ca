"""Each engine's documented command-line flags as argparse parsers, written from the engines' docs (not the generator).

Sources: vLLM `vllm serve --help` / docs/configuration/engine_args.md (V1; --speculative-config JSON, no --swap-space);
SGLang docs/advanced_features/server_arguments.md; TensorRT-LLM docs/source/commands/trtllm-serve/trtllm-serve.rst;
LMDeploy lmdeploy/cli/serve.py; TGI docs/source/reference/launcher.md; llama.cpp tools/server/README.md;
Ollama envconfig (OLLAMA_* variables). Gathered in ../shared/reference/engine_facts.csv.
"""

import argparse
import json


class Refused(Exception):
    """argparse found a flag or value the engine does not document."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise Refused(message)


def _parser(prog: str) -> _Parser:
    return _Parser(prog=prog, add_help=False, allow_abbrev=False)


def _ngram_config(text: str) -> dict:
    config = json.loads(text)
    if config.get("method") not in {"ngram", "draft_model", "eagle", "eagle3", "mtp", "medusa", "suffix"}:
        raise ValueError(f"unknown speculative method {config.get('method')}")
    return config


def vllm() -> _Parser:
    p = _parser("vllm serve")
    p.add_argument("model")
    p.add_argument("--tensor-parallel-size", "-tp", type=int)
    p.add_argument("--data-parallel-size", "-dp", type=int)
    p.add_argument(
        "--quantization",
        "-q",
        choices=[
            "awq",
            "awq_marlin",
            "gptq",
            "gptq_marlin",
            "fp8",
            "bitsandbytes",
            "compressed-tensors",
            "modelopt",
            "modelopt_fp4",
            "gguf",
        ],
    )
    p.add_argument("--tokenizer")
    p.add_argument("--enable-lora", action="store_true")
    p.add_argument("--lora-modules", nargs="+")
    p.add_argument("--kv-cache-dtype", choices=["auto", "fp8", "fp8_e4m3", "fp8_e5m2"])
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--gpu-memory-utilization", type=float)
    p.add_argument("--speculative-config", type=_ngram_config)
    p.add_argument("--kv-offloading-backend", choices=["native", "lmcache"])
    p.add_argument("--kv-offloading-size", type=float)
    p.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction)
    p.add_argument("--port", type=int)
    return p


def sglang() -> _Parser:
    p = _parser("python -m sglang.launch_server")
    p.add_argument("--model-path", required=True)
    p.add_argument("--tp", "--tp-size", type=int)
    p.add_argument("--dp", "--dp-size", type=int)
    p.add_argument(
        "--quantization",
        choices=[
            "awq",
            "fp8",
            "gptq",
            "marlin",
            "gptq_marlin",
            "awq_marlin",
            "bitsandbytes",
            "gguf",
            "modelopt",
            "modelopt_fp4",
            "w8a8_int8",
            "w8a8_fp8",
            "mxfp4",
        ],
    )
    p.add_argument("--kv-cache-dtype", choices=["auto", "fp8_e5m2", "fp8_e4m3"])
    p.add_argument("--context-length", type=int)
    p.add_argument("--max-running-requests", type=int)
    p.add_argument("--chunked-prefill-size", type=int)
    p.add_argument("--speculative-algorithm", choices=["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"])
    p.add_argument("--speculative-num-draft-tokens", type=int)
    p.add_argument("--enable-hierarchical-cache", action="store_true")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    return p


def trtllm() -> _Parser:
    p = _parser("trtllm-serve")
    p.add_argument("model")
    p.add_argument("--tp_size", type=int)
    p.add_argument("--pp_size", type=int)
    p.add_argument("--max_batch_size", type=int)
    p.add_argument("--max_num_tokens", type=int)
    p.add_argument("--max_seq_len", type=int)
    p.add_argument("--kv_cache_free_gpu_memory_fraction", type=float)
    p.add_argument("--extra_llm_api_options")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    return p


def lmdeploy() -> _Parser:
    p = _parser("lmdeploy serve api_server")
    p.add_argument("model_path")
    p.add_argument("--backend", choices=["turbomind", "pytorch"])
    p.add_argument("--model-format", choices=["hf", "awq", "gptq", "fp8", "compressed-tensors", "mxfp4"])
    p.add_argument("--tp", type=int)
    p.add_argument("--session-len", type=int)
    p.add_argument("--max-batch-size", type=int)
    p.add_argument("--max-prefill-token-num", type=int)
    p.add_argument("--cache-max-entry-count", type=float)
    p.add_argument("--quant-policy", type=int, choices=[0, 4, 8, 16, 17, 42])
    p.add_argument("--enable-prefix-caching", action="store_true")
    p.add_argument("--server-port", type=int)
    return p


def tgi() -> _Parser:
    p = _parser("text-generation-launcher")
    p.add_argument("--model-id", required=True)
    p.add_argument("--num-shard", type=int)
    p.add_argument(
        "--quantize",
        choices=[
            "awq",
            "compressed-tensors",
            "eetq",
            "exl2",
            "gptq",
            "marlin",
            "bitsandbytes",
            "bitsandbytes-nf4",
            "bitsandbytes-fp4",
            "fp8",
        ],
    )
    p.add_argument("--kv-cache-dtype", choices=["fp8_e4m3fn", "fp8_e5m2"])
    p.add_argument("--max-input-tokens", type=int)
    p.add_argument("--max-total-tokens", type=int)
    p.add_argument("--max-batch-prefill-tokens", type=int)
    p.add_argument("--speculate", type=int)
    p.add_argument("--port", type=int)
    return p


def llama_server() -> _Parser:
    p = _parser("llama-server")
    p.add_argument("-hf", "--hf-repo")
    p.add_argument("-m", "--model")
    p.add_argument("-ngl", "--gpu-layers", "--n-gpu-layers")
    p.add_argument("-c", "--ctx-size", type=int)
    p.add_argument("-np", "--parallel", type=int)
    p.add_argument("-fa", "--flash-attn", choices=["on", "off", "auto"])
    p.add_argument("-ctk", "--cache-type-k", choices=["f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"])
    p.add_argument("-ctv", "--cache-type-v", choices=["f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"])
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    return p


OLLAMA_ENV = {
    "OLLAMA_NUM_PARALLEL",
    "OLLAMA_CONTEXT_LENGTH",
    "OLLAMA_FLASH_ATTENTION",
    "OLLAMA_KV_CACHE_TYPE",
    "OLLAMA_SCHED_SPREAD",
    "OLLAMA_HOST",
    "OLLAMA_MAX_LOADED_MODELS",
    "OLLAMA_KEEP_ALIVE",
}

# engine id -> (the words that start its command, the parser for the rest)
SPECS = {
    "vllm": (["vllm", "serve"], vllm),
    "sglang": (["python", "-m", "sglang.launch_server"], sglang),
    "tensorrt-llm": (["trtllm-serve"], trtllm),
    "lmdeploy": (["lmdeploy", "serve", "api_server"], lmdeploy),
    "tgi": (["text-generation-launcher"], tgi),
    "llama.cpp": (["llama-server"], llama_server),
}
