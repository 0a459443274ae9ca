"""Where a command's weights come from: a published checkpoint, the BF16 one quantized at load, or one made first."""

import functools
from dataclasses import dataclass, field

from catalog.models import ModelSpec
from catalog.quantization import get_quant
from selector.launch.common import Plan

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
# FP8 checkpoints to BF16, by architecture: (script, its repository, its arguments). deepseek-ai/DeepSeek-V3
# inference/fp8_cast_bf16.py (at dca08f2) dequantizes the 128x128 block-FP8 weights of DeepseekV3ForCausalLM
# checkpoints (DeepSeek-V3/R1, Kimi-K2) on a CUDA GPU.
FP8_TO_BF16 = {
    "DeepseekV3ForCausalLM": (
        "inference/fp8_cast_bf16.py",
        "github.com/deepseek-ai/DeepSeek-V3",
        "--input-fp8-hf-path <download> --output-bf16-hf-path <bf16 path>",
    ),
}


@dataclass
class Source:
    """Where the weights come from: a published checkpoint, the BF16 one quantized at load, or one made first."""

    path: str
    online: bool = False
    prepare: list[tuple[str, ...]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def placeholder(model: ModelSpec, suffix: str) -> str:
    return f"./{model.name}-{suffix}"


def bf16(model: ModelSpec) -> str:
    return model.checkpoint("bf16") or model.repo


def quantize_input(plan: Plan) -> tuple[str, list[str]]:
    """The 16-bit checkpoint a quantize step reads, with a warning when the model publishes none.

    A model published only in FP8 (DeepSeek-R1) has no 16-bit weights to calibrate from: the step reads a BF16
    copy the user makes first, and the warning says how, where the catalog knows a converter.
    """
    return _bf16_copy(
        plan,
        plan.tr(
            "{model} is published in {native} only, and the quantize step calibrates 16-bit weights: it reads {path}."
        ),
        plan.tr("Or pick a format with a published checkpoint."),
    )


def served_bf16(plan: Plan) -> Source:
    """BF16 weights served as they are: the published checkpoint, or a BF16 copy of a model published in FP8 only.

    Loading the FP8 download would serve FP8 (its config.json carries the quantization), not the BF16 the advice
    sized the memory for.
    """
    path, warnings = _bf16_copy(
        plan,
        plan.tr("{model} is published in {native} only: serving it in BF16 loads a BF16 copy, {path}."),
        plan.tr("Or serve the published {native} checkpoint ({repo}) in half the memory.").format(
            native=get_quant(plan.model.native_format).name, repo=plan.model.repo
        ),
    )
    return Source(path=path, warnings=warnings)


def _bf16_copy(plan: Plan, head: str, tail: str) -> tuple[str, list[str]]:
    """The published BF16 checkpoint, or the path of a copy made first with a warning: `head`, how, `tail`."""
    model = plan.model
    if model.native_format == "bf16" or model.checkpoint("bf16"):
        return bf16(model), []
    path = placeholder(model, "BF16")
    converter = FP8_TO_BF16.get(model.architecture)
    how = (
        plan.tr("Make that first from {repo} with {script} of {source}, on a CUDA GPU ({arguments}).").format(
            repo=model.repo, script=converter[0], source=converter[1], arguments=converter[2]
        )
        if converter
        else plan.tr("Make that first; no converter for its architecture is in the catalog.")
    )
    native = get_quant(model.native_format).name
    return path, [sentences(plan, head.format(model=model.name, native=native, path=path), how, tail)]


def sentences(plan: Plan, *parts: str) -> str:
    """Sentences one after another, as the page's language writes them."""
    return functools.reduce(lambda first, second: plan.tr("{first} {second}").format(first=first, second=second), parts)


def made_note(plan: Plan, path: str, tool: str) -> str:
    return plan.tr(
        "No published {method} checkpoint for {model} is in the catalog: the first command(s) make {path} with "
        "{tool}, then the server loads it."
    ).format(method=get_quant(plan.quant).name, model=plan.model.name, path=path, tool=tool)


def llm_compressor(plan: Plan) -> Source:
    path = placeholder(plan.model, SUFFIXES[plan.quant])
    source, warnings = quantize_input(plan)
    imports, modifier = LLM_COMPRESSOR[plan.quant]
    ignore = ['"lm_head"', *(['"re:.*mlp.gate$"'] if plan.model.is_moe else [])]
    script = "\n".join(
        [
            "from llmcompressor import oneshot",
            imports,
            "",
            "oneshot(",
            f'    model="{source}",',
            '    dataset="open_platypus",',
            f"    recipe=[{modifier}, ignore=[{', '.join(ignore)}])],",
            f'    output_dir="{path}",',
            ")",
        ]
    )
    return Source(
        path=path,
        prepare=[("python", "quantize.py")],
        files={"quantize.py": script + "\n"},
        notes=[
            made_note(
                plan, path, plan.tr("llm-compressor's oneshot (pip install llmcompressor; calibrates on open_platypus)")
            )
        ],
        warnings=warnings,
    )


def no_tool(plan: Plan) -> Source:
    method = get_quant(plan.quant).name
    return Source(
        path=bf16(plan.model),
        warnings=[
            plan.tr(
                "{model} has no published {method} checkpoint and {engine} documents no tool that makes one; the "
                "command loads the BF16 checkpoint instead: pick another format for this model."
            ).format(model=plan.model.name, method=method, engine=plan.engine.name)
        ],
    )


def hf_source(plan: Plan, online: set[str]) -> Source:
    """vLLM, SGLang and TGI: a published checkpoint, BF16 quantized at load (`online`), or llm-compressor first."""
    quant = plan.quant
    published = plan.model.checkpoint(quant)
    if quant == "bf16":
        return served_bf16(plan)
    if published:
        return Source(path=published)
    if quant in online:
        return Source(path=bf16(plan.model), online=True)
    if quant in LLM_COMPRESSOR:
        return llm_compressor(plan)
    return no_tool(plan)


def modelopt(plan: Plan, lead: str = "") -> Source:
    path = placeholder(plan.model, SUFFIXES[plan.quant])
    source, warnings = quantize_input(plan)
    command = (
        "python",
        "examples/hf_ptq/hf_ptq.py",
        "--pyt_ckpt_path",
        source,
        "--qformat",
        MODELOPT_QFORMAT[plan.quant],
        "--kv_cache_qformat",
        "none",
        "--export_path",
        path,
    )
    tool = plan.tr("NVIDIA ModelOpt's hf_ptq.py (run it in a checkout of github.com/NVIDIA/Model-Optimizer)")
    made = plan.tr("The first command makes {path} with {tool}, then the server loads it.").format(path=path, tool=tool)
    note = sentences(plan, lead, made) if lead else made_note(plan, path, tool)
    return Source(path=path, prepare=[command], notes=[note], warnings=warnings)


def trtllm_source(plan: Plan) -> Source:
    quant = plan.quant
    if quant == "bf16":
        return served_bf16(plan)
    published = plan.model.checkpoint(quant)
    if quant == "awq" and published:
        return modelopt(
            plan,
            plan.tr(
                "The catalog's AWQ checkpoint ({published}) is in AutoAWQ format, which TensorRT-LLM's PyTorch "
                "backend does not read (it reads ModelOpt int4_awq checkpoints)."
            ).format(published=published),
        )
    if quant == "awq":
        return modelopt(plan)
    if published:
        return Source(path=published)
    if quant in MODELOPT_QFORMAT:
        return modelopt(plan)
    return no_tool(plan)


def lmdeploy_source(plan: Plan, backend: str) -> Source:
    quant, model = plan.quant, plan.model
    published = model.checkpoint(quant)
    if quant == "bf16":
        return served_bf16(plan)
    if quant == "fp8":
        if model.native_format == "fp8" and model.hf_repo:
            return Source(path=model.hf_repo)
        return Source(path=bf16(model), online=backend == "pytorch")
    ascend = plan.platform == "ascend"
    if published and not ascend:
        return Source(path=published)
    if quant in LMDEPLOY_LITE:
        path = placeholder(model, SUFFIXES[quant])
        sub, *extra = LMDEPLOY_LITE[quant]
        # On Ascend the quantization itself runs on the NPU (docs/en/get_started/ascend/get_started.md); the
        # checkpoints published for CUDA are not what its Ascend backend documents loading.
        device = ("--device", "npu") if ascend else ()
        source, warnings = quantize_input(plan)
        command = ("lmdeploy", "lite", sub, source, "--work-dir", path, *extra, *device)
        made = made_note(plan, path, f"`lmdeploy lite {sub}`")
        return Source(path=path, prepare=[command], notes=[made], warnings=warnings)
    return no_tool(plan)


# -- engines --------------------------------------------------------------------------------------------------------
