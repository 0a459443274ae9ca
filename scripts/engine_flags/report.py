"""The accepted-flag table and the Markdown report of `engine_flags.py check`."""

from typing import Any

# topic -> option strings to look for, per engine (only those the spec has are shown)
TOPICS: dict[str, dict[str, list[str]]] = {
    "quantization": {
        "vllm": ["--quantization"],
        "sglang": ["--quantization"],
        "tensorrt-llm": [],
        "lmdeploy": ["--model-format", "--backend"],
        "tgi": ["--quantize"],
        "llama.cpp": [],
    },
    "KV cache dtype": {
        "vllm": ["--kv-cache-dtype"],
        "sglang": ["--kv-cache-dtype"],
        "lmdeploy": ["--quant-policy"],
        "tgi": ["--kv-cache-dtype"],
        "llama.cpp": ["--cache-type-k", "--cache-type-v"],
    },
    "speculative n-gram": {
        "vllm": ["--speculative-config", "--spec-method", "--spec-tokens"],
        "sglang": [
            "--speculative-algorithm",
            "--speculative-num-draft-tokens",
            "--speculative-ngram-max-trie-depth",
            "--speculative-ngram-min-bfs-breadth",
            "--speculative-ngram-max-bfs-breadth",
            "--speculative-ngram-match-type",
            "--speculative-ngram-capacity",
        ],
        "lmdeploy": ["--speculative-algorithm", "--speculative-num-draft-tokens"],
        "tgi": ["--speculate"],
        "llama.cpp": [
            "--spec-type",
            "--spec-ngram-simple-size-n",
            "--spec-ngram-simple-size-m",
            "--spec-ngram-mod-n-min",
            "--spec-ngram-mod-n-max",
            "--spec-draft-n-max",
            "--draft-max",
            "--draft-min",
        ],
    },
    "expert parallel": {
        "vllm": ["--enable-expert-parallel"],
        "sglang": ["--ep-size", "--expert-parallel-size", "--moe-a2a-backend"],
        "tensorrt-llm": ["--ep_size"],
        "lmdeploy": ["--ep"],
    },
    "data / attention-DP parallel": {
        "vllm": ["--data-parallel-size", "--data-parallel-size-local"],
        "sglang": ["--dp-size", "--enable-dp-attention"],
        "lmdeploy": ["--dp"],
        "tensorrt-llm": [],
    },
    "tensor / pipeline parallel": {
        "vllm": ["--tensor-parallel-size", "--pipeline-parallel-size"],
        "sglang": ["--tp-size", "--pp-size", "--tp", "--dp"],
        "tensorrt-llm": ["--tp_size", "--pp_size"],
        "lmdeploy": ["--tp"],
        "tgi": ["--num-shard"],
        "llama.cpp": ["--split-mode", "--tensor-split"],
    },
    "multi-node": {
        "vllm": [
            "--nnodes",
            "--node-rank",
            "--master-addr",
            "--master-port",
            "--data-parallel-address",
            "--data-parallel-rpc-port",
            "--headless",
        ],
        "sglang": ["--nnodes", "--node-rank", "--dist-init-addr"],
        "lmdeploy": ["--nnodes", "--node-rank", "--dist-init-addr"],
        "tensorrt-llm": ["--gpus_per_node"],
        "tgi": ["--master-addr", "--master-port"],
        "llama.cpp": ["--rpc"],
    },
    "KV offload / host cache": {
        "vllm": ["--kv-offloading-backend", "--kv-offloading-size", "--cpu-offload-gb", "--swap-space"],
        "sglang": ["--enable-hierarchical-cache", "--hicache-size", "--hicache-ratio", "--hicache-storage-backend"],
        "lmdeploy": ["--cache-max-entry-count"],
        "llama.cpp": ["--cache-ram", "--kv-offload", "--no-kv-offload"],
    },
    "prefix caching": {
        "vllm": ["--enable-prefix-caching"],
        "sglang": ["--disable-radix-cache"],
        "lmdeploy": ["--enable-prefix-caching"],
        "llama.cpp": ["--cache-reuse"],
    },
}


def find_option(spec: dict[str, Any], string: str) -> dict[str, Any] | None:
    """The spec entry that registers one option string."""
    return next((o for o in spec["options"] if string in o["option_strings"]), None)


def describe_option(option: dict[str, Any]) -> str:
    """A short account of one option: spellings, kind and allowed values."""
    strings = "/".join(f"`{s}`" for s in option["option_strings"])
    if option.get("removed"):
        return f"{strings} REMOVED ({option['removed'][:80]})"
    kind = option["action"] if option["action"] != "store" else option["type"]
    values = option.get("choices") or option.get("registry_choices") or option.get("accepted_values")
    text = f"{strings} ({kind})"
    if values:
        shown = ", ".join(str(v) for v in values)
        text += f": {shown}"
    if option.get("json_keys"):
        wanted = [
            k for k in option["json_keys"] if k.startswith("prompt_lookup") or k in {"method", "num_speculative_tokens"}
        ]
        text += f"; JSON keys incl. {', '.join(wanted)}"
    return text


def topic_rows(specs: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(topic, engine, what the engine accepts) for the accepted-flag table."""
    rows = []
    for topic, engines in TOPICS.items():
        for engine, strings in engines.items():
            spec = specs.get(engine)
            if spec is None:
                continue
            found, seen = [], set()
            for string in strings:
                option = find_option(spec, string)
                if option is None or id(option) in seen:
                    continue
                seen.add(id(option))
                found.append(describe_option(option))
            missing = [s for s in strings if find_option(spec, s) is None]
            text = "; ".join(found) if found else "—"
            if missing:
                text += f" (not registered: {', '.join(missing)})"
            rows.append((topic, engine, text))
    registries = {
        "vllm": ["quantization", "kv_cache_dtype"],
        "sglang": ["quantization", "speculative_algorithm"],
        "lmdeploy": ["quant_policy"],
        "llama.cpp": ["kv_cache_type", "speculative_type"],
        "ollama": ["kv_cache_type"],
    }
    for engine, names in registries.items():
        spec = specs.get(engine)
        if spec is None:
            continue
        for name in names:
            values = spec.get("registries", {}).get(name)
            if values:
                rows.append((f"registry: {name}", engine, ", ".join(str(v) for v in values)))
    trt = specs.get("tensorrt-llm")
    if trt and "yaml" in trt:
        yaml = trt["yaml"]
        rows.append(("YAML (--config)", "tensorrt-llm", "top level: " + ", ".join(yaml["top_level"])))
        rows.append(("YAML (--config)", "tensorrt-llm", "kv_cache_config: " + ", ".join(yaml["kv_cache_config"])))
        ngram = yaml["speculative_config"].get("NGram", [])
        rows.append(("YAML (--config)", "tensorrt-llm", "speculative_config NGram: " + ", ".join(ngram)))
    return rows


def markdown(
    specs: dict[str, dict[str, Any]],
    summary: dict[str, Any],
    failures: list[dict[str, Any]],
    rerun: list[str],
) -> str:
    """docs/engine-flags.md."""
    lines = [
        "# Launch commands checked against the engines themselves",
        "",
        "`scripts/engine_flags.py` (not part of `make test`) installs pinned engine releases in their own",
        "virtual environments, dumps their real argument parsers into `tests/selector/engine_specs/*.json`",
        "(which `tests/selector/test_launch.py` parses every printed command with), and feeds every distinct",
        "command shape the advisor prints to each engine's own parser. Engines that cannot be installed here",
        "are read from their source. Regenerate with:",
        "",
        "```bash",
        *rerun,
        "```",
        "",
        "## Engine versions",
        "",
        "| engine | version | how the spec was made |",
        "| --- | --- | --- |",
    ]
    for engine, spec in specs.items():
        source = spec.get("source", {})
        if source.get("kind") == "pypi":
            how = f"`pip install {source['package']}` (Python {spec.get('python')}); {spec['parser']['built_with']}"
        else:
            commit = source.get("commit") or "?"
            how = f"source of {source.get('repository')} at `{commit}`"
            if source.get("date"):
                how += f" ({source['date']})"
            if source.get("how"):
                how += f"; {source['how']}"
        lines.append(f"| {engine} | {spec['version']} | {how} |")
    lines += [
        "",
        "## Method",
        "",
        f"The advisor ran over {summary['requests']} requests: every catalog GPU x engine pin x quantization pin x",
        "1/2/4/8 GPUs (model cycled), every model x engine pin x quantization pin x 1/2/4/8 GPUs (GPU cycled),",
        "every model x GPU on 1 and 8 GPUs, and every workload x priority x QLoRA x deployment x engine pin on",
        "an H100 and an M2 Ultra at 4k and 32k context; workload, priority, QLoRA and concurrency (16-1024) are",
        "cycled where they are not crossed. The chosen and runner-up",
        "commands were grouped by shape (engine, command words, sorted flag names, the word values of flags,",
        "the keys of extra.yml and the environment); each shape's representative argv went to the engine's",
        "real parser (`parse_args`) inside its venv, with quantization, KV cache dtype and speculative-config",
        "values checked against the engine's registries, and abbreviations of registered flags counted as",
        "failures. Source-read engines were parsed by parsers built from their specs.",
        "",
        f"- requests: {summary['requests']} ({summary['skipped_text']})",
        f"- commands printed: {summary['commands']}; distinct shapes: {summary['shapes']}",
        f"- shapes per engine: {summary['per_engine']}",
        f"- failing shapes: {len(failures)}",
        "",
        "## What each engine accepts",
        "",
        "| topic | engine | accepted |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {t} | {e} | {a.replace('|', '/')} |" for t, e, a in topic_rows(specs)]
    lines += ["", "## Failures", ""]
    if not failures:
        lines.append("None: every checked shape parsed.")
    for f in failures:
        lines += [
            f"- **{f['engine']}** ({f['count']} commands, e.g. {f['example']})",
            f"  - argv: `{f['argv']}`",
            f"  - error: {f['error']}",
        ]
    lines += [
        "",
        "## Not checked",
        "",
        "Launcher words before an engine's command (`mpirun ... trtllm-llmapi-launch`) are checked by name only.",
        "Preparation steps other than `lmdeploy lite ...` (which goes to LMDeploy's own parser) are listed here:",
        "",
    ]
    lines += [f"- {f['engine']}: `{f['argv']}` ({f['count']}x)" for f in summary.get("not_checked", [])] or ["- none"]
    return "\n".join(lines) + "\n"
