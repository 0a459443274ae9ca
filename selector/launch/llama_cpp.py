"""The llama.cpp command: `llama-server` with a GGUF file, layers offloaded to the GPU."""

from selector.launch.common import LaunchCommand, Plan, no_multi_node
from selector.launch.sources import SUFFIXES, bf16, placeholder


def llama_cpp_command(plan: Plan) -> LaunchCommand:
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
        bf16_gguf = placeholder(model, "BF16.gguf")
        path = placeholder(model, SUFFIXES["gguf-q4_k_m"])
        prepare = [
            ("hf", "download", bf16(model), "--local-dir", hf_dir),
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
        warnings=tuple(no_multi_node(plan)),
    )
