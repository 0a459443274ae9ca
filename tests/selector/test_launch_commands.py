"""Launch commands that start: every flag is one today's engine release accepts, built from plans directly."""

import json
import math
import shlex

import pytest

from catalog import load_handbook
from catalog.engines import get_engine, load_engines
from catalog.kvcache import eight_bit_kv
from catalog.models import ModelSpec, find_model
from selector import AdviceRequest, advise
from selector.launch import GB_PER_GIB, LaunchCommand, Plan, engine_gpus, launch_command, offload_gib
from selector.rules import load_rules
from selector.speculative import Speculative

OFF = Speculative(enabled=False, method="none", rule_id="spec.chat", reason="r", source="s")
NGRAM = Speculative(
    enabled=True,
    method="ngram",
    num_speculative_tokens=load_handbook().levers.speculative_decoding.speculative_tokens,
    prompt_lookup_max=load_rules().speculation.prompt_lookup_max,
    prompt_lookup_min=load_rules().speculation.prompt_lookup_min,
    rule_id="spec.code",
    reason="r",
    source="s",
)

# A DeepSeek-V3-like model (MoE with multi-head latent attention, published in FP8) and a gpt-oss-like one (MXFP4).
DEEPSEEK = ModelSpec(
    id="ds-test",
    name="DeepSeek-V3",
    architecture="DeepseekV3ForCausalLM",
    params_b=671,
    active_params_b=37,
    layers=61,
    hidden_size=7168,
    attention_heads=128,
    kv_heads=128,
    head_dim=128,
    moe_intermediate_size=2048,
    experts=256,
    shared_experts=1,
    experts_per_token=8,
    moe_layers=58,
    kv_lora_rank=512,
    qk_rope_head_dim=64,
    max_context=131072,
    native_format="fp8",
    hf_repo="deepseek-ai/DeepSeek-V3",
)
GPT_OSS = ModelSpec(
    id="gpt-oss-test",
    name="gpt-oss-120b",
    architecture="GptOssForCausalLM",
    params_b=117,
    active_params_b=5.1,
    layers=36,
    hidden_size=2880,
    attention_heads=64,
    kv_heads=8,
    head_dim=64,
    experts=128,
    experts_per_token=4,
    moe_layers=36,
    max_context=131072,
    native_format="mxfp4",
    hf_repo="openai/gpt-oss-120b",
)


def _unpublished(model_id: str, *columns: str) -> ModelSpec:
    """A catalog model without the published checkpoints in `columns` (the catalog grows; these tests must not)."""
    return find_model(model_id).model_copy(update=dict.fromkeys(columns, ""))


def _plan(engine: str = "vllm", model: ModelSpec | None = None, /, **changes: object) -> Plan:
    values: dict[str, object] = {
        "engine": get_engine(engine),
        "model": model or find_model("qwen2.5-7b"),
        "quant": "bf16",
        "kv_dtype": "auto",
        "split": 1,
        "replicas": 1,
        "context": 4096,
        "max_num_seqs": 256,
        "batched_tokens": 4096,
        "speculative": OFF,
        **changes,
    }
    return Plan.model_validate(values)


def _cmd(engine: str = "vllm", model: ModelSpec | None = None, /, **changes: object) -> LaunchCommand:
    return launch_command(_plan(engine, model, **changes))


def _value(command: LaunchCommand, flag: str) -> str:
    argv = list(command.argv)
    assert flag in argv, f"{flag} missing from {command.command_line}"
    return argv[argv.index(flag) + 1]


# -- 1. only the formats today's releases load ---------------------------------------------------------------------
def test_vllm_lists_only_formats_its_core_loads() -> None:
    vllm = get_engine("vllm")
    assert "nf4" not in vllm.quant_methods  # bitsandbytes moved to vllm-bnb-plugin
    assert "gguf-q4_k_m" not in vllm.quant_methods  # GGUF moved to vllm-gguf-plugin
    assert "mxfp4" in vllm.quant_methods


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm", "lmdeploy"])
def test_mxfp4_is_served_where_the_engine_loads_gpt_oss(engine: str) -> None:
    assert "mxfp4" in get_engine(engine).quant_methods


def test_llama_cpp_serves_gpt_oss_only_as_gguf_and_trtllm_has_no_smoothquant_or_gptq() -> None:
    assert get_engine("llama.cpp").quant_methods == ("gguf-q4_k_m",)
    assert not {"w8a8-int8", "gptq", "nf4"} & set(get_engine("tensorrt-llm").quant_methods)


def test_qlora_on_vllm_never_prints_bitsandbytes() -> None:
    advice = advise(AdviceRequest(gpu="A10G", qlora="yes"))
    assert advice.engine == "vllm"
    assert advice.quantization != "nf4"
    assert "bitsandbytes" not in advice.launch.shell
    # Even a plan forced onto nf4 gets no rejected flag, only a warning.
    forced = _cmd("vllm", quant="nf4")
    assert "bitsandbytes" not in forced.shell and "--quantization" not in forced.argv
    assert forced.warnings


def test_gguf_is_not_handed_to_vllm() -> None:
    command = _cmd("vllm", quant="gguf-q4_k_m")
    assert "--tokenizer" not in command.argv and ".gguf" not in command.command_line


# -- 2. published checkpoints, or the command that makes one -------------------------------------------------------
def test_published_checkpoints_are_served_directly() -> None:
    assert _cmd("vllm", quant="awq").argv[2] == "Qwen/Qwen2.5-7B-Instruct-AWQ"
    fp8 = _cmd("vllm", find_model("qwen3-8b"), quant="fp8")
    assert fp8.argv[2] == "Qwen/Qwen3-8B-FP8" and "--quantization" not in fp8.argv
    trt = _cmd("tensorrt-llm", find_model("qwen3-8b"), quant="fp8")
    assert trt.argv[1] == "Qwen/Qwen3-8B-FP8" and not trt.prepare
    assert _cmd("vllm", GPT_OSS, quant="mxfp4").argv[2] == "openai/gpt-oss-120b"


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm", "lmdeploy"])
def test_bf16_of_a_model_published_only_in_fp8_loads_a_bf16_copy_not_the_fp8_download(engine: str) -> None:
    # The FP8 download's config.json carries its quantization: an engine loading it serves FP8, at half the memory
    # the BF16 advice sized. The command loads a BF16 copy, and the warning says how to make it.
    r1 = find_model("deepseek-r1")
    command = _cmd(engine, r1, quant="bf16")
    assert "deepseek-ai/DeepSeek-R1" not in command.argv and "./DeepSeek-R1-BF16" in command.argv
    (warning,) = command.warnings
    assert "fp8_cast_bf16.py" in warning and "Or serve the published FP8" in warning
    # A model with BF16 weights of its own serves them, with nothing to warn about.
    plain = _cmd(engine, find_model("qwen2.5-7b"), quant="bf16")
    assert "Qwen/Qwen2.5-7B-Instruct" in plain.argv and not plain.warnings


def test_fp8_without_a_published_checkpoint_is_quantized_at_load_on_vllm_and_sglang() -> None:
    model = _unpublished("qwen2.5-7b", "fp8_repo")
    vllm = _cmd("vllm", model, quant="fp8")
    assert vllm.argv[2] == "Qwen/Qwen2.5-7B-Instruct" and _value(vllm, "--quantization") == "fp8"
    sglang = _cmd("sglang", model, quant="fp8")
    assert _value(sglang, "--model-path") == "Qwen/Qwen2.5-7B-Instruct" and _value(sglang, "--quantization") == "fp8"


def test_vllm_makes_a_missing_awq_checkpoint_with_llm_compressor_first() -> None:
    command = _cmd("vllm", _unpublished("llama3.2-1b", "awq_repo"), quant="awq")
    path = "./Llama-3.2-1B-Instruct-AWQ"
    assert command.argv[2] == path
    assert command.prepare == (("python", "quantize.py"),)
    script = command.files["quantize.py"]
    assert "oneshot(" in script and "AWQModifier" in script and f'output_dir="{path}"' in script
    assert "meta-llama/Llama-3.2-1B-Instruct" in script
    assert any("llm-compressor" in note for note in command.notes)
    # The preparation comes before the server in the pasted shell; the one-line form is the server alone.
    shell = command.shell
    assert shell.index("python quantize.py") < shell.index("vllm serve")
    assert command.command_line.startswith("vllm serve ./Llama-3.2-1B-Instruct-AWQ")


def test_llm_compressor_recipes_per_format_and_moe_gates_stay_unquantized() -> None:
    w8a8 = _cmd("vllm", _unpublished("qwen2.5-7b", "w8a8_repo"), quant="w8a8-int8").files["quantize.py"]
    assert "SmoothQuantModifier()" in w8a8 and 'scheme="W8A8"' in w8a8
    nvfp4 = _cmd("sglang", DEEPSEEK, quant="nvfp4").files["quantize.py"]
    assert 'scheme="NVFP4"' in nvfp4 and "mlp.gate$" in nvfp4
    gptq = _cmd("tgi", _unpublished("qwen2.5-7b", "gptq_repo"), quant="gptq")
    assert 'scheme="W4A16"' in gptq.files["quantize.py"] and "--quantize" not in gptq.argv


def test_a_published_w8a8_checkpoint_is_served_as_it_is() -> None:
    """Llama-3.1-70B W8A8 on two A100s launches from Red Hat AI's published checkpoint, with no quantize step."""
    advice = advise(AdviceRequest(gpu="a100", gpus=2, model="llama3.1-70b", engine="vllm", quant="w8a8-int8"))
    assert list(advice.launch.argv[:3]) == ["vllm", "serve", "RedHatAI/Meta-Llama-3.1-70B-Instruct-quantized.w8a8"]
    assert not advice.launch.prepare and not advice.launch.files, "no quantize step for a published checkpoint"


def test_tensorrt_llm_makes_missing_checkpoints_with_modelopt() -> None:
    nvfp4 = _cmd("tensorrt-llm", _unpublished("qwen2.5-7b", "nvfp4_repo"), quant="nvfp4")
    (prepare,) = nvfp4.prepare
    assert prepare[:2] == ("python", "examples/hf_ptq/hf_ptq.py")
    assert prepare[prepare.index("--qformat") + 1] == "nvfp4"
    assert prepare[prepare.index("--export_path") + 1] == nvfp4.argv[1] == "./Qwen2.5-7B-Instruct-NVFP4"
    # AutoAWQ checkpoints are not what the PyTorch backend reads: ModelOpt int4_awq instead.
    awq = _cmd("tensorrt-llm", quant="awq")
    assert "int4_awq" in awq.prepare[0] and awq.argv[1] == "./Qwen2.5-7B-Instruct-AWQ"
    assert any("AutoAWQ" in note for note in awq.notes)


def test_lmdeploy_makes_checkpoints_with_lmdeploy_lite() -> None:
    w8a8 = _cmd("lmdeploy", _unpublished("qwen2.5-7b", "w8a8_repo"), quant="w8a8-int8")
    assert w8a8.prepare[0][:3] == ("lmdeploy", "lite", "smooth_quant")
    assert w8a8.prepare[0][-2:] == ("--quant-dtype", "int8")
    assert _value(w8a8, "--backend") == "pytorch"
    awq = _cmd("lmdeploy", _unpublished("llama3.2-1b", "awq_repo"), quant="awq")
    assert awq.prepare[0][:3] == ("lmdeploy", "lite", "auto_awq")
    assert awq.argv[3] == "./Llama-3.2-1B-Instruct-AWQ" and _value(awq, "--backend") == "turbomind"
    assert "--model-format" not in awq.argv  # read from the checkpoint's quantization_config


def test_llama_cpp_converts_and_quantizes_when_no_gguf_repo_exists() -> None:
    command = _cmd("llama.cpp", _unpublished("qwen2.5-7b", "gguf_repo"), quant="gguf-q4_k_m")
    tools = [cmd[1] if cmd[0] == "python" else cmd[0] for cmd in command.prepare]
    assert tools == ["hf", "convert_hf_to_gguf.py", "llama-quantize"]
    assert command.prepare[-1][-1] == "Q4_K_M"
    assert _value(command, "-m") == command.prepare[-1][2] == "./Qwen2.5-7B-Instruct-Q4_K_M.gguf"


# -- 3. speculation flags ------------------------------------------------------------------------------------------
def test_vllm_ngram_sets_the_lookup_minimum_from_the_rules() -> None:
    config = json.loads(_value(_cmd("vllm", speculative=NGRAM), "--speculative-config"))
    notes = load_rules().speculation
    assert (
        config["prompt_lookup_min"] == notes.prompt_lookup_min < config["prompt_lookup_max"] == notes.prompt_lookup_max
    )


def test_llama_cpp_carries_todays_ngram_speculation_flags() -> None:
    command = _cmd("llama.cpp", quant="gguf-q4_k_m", speculative=NGRAM, slots=2)
    assert _value(command, "--spec-type") == "ngram-simple"
    assert _value(command, "--spec-ngram-simple-size-n") == str(NGRAM.prompt_lookup_max)
    assert _value(command, "--spec-ngram-simple-size-m") == str(NGRAM.num_speculative_tokens)
    assert "--draft-max" not in command.argv and "--spec-ngram-size-n" not in command.argv


# -- 4. KV offload sizes ----------------------------------------------------------------------------------------------
def test_gib_conversion_divides_by_the_unit_and_counts_one_engine() -> None:
    assert GB_PER_GIB == 2**30 / 1e9
    extra = load_rules().kv_offload_peaks.extra_gib
    # 10 GB short per GPU on the 2 GPUs of one copy: 20 GB = 18.63 GiB -> 19, plus the headroom.
    assert offload_gib(10, engine_gpus(2, 1, False), extra) == math.ceil(10 * 2 / 1.073741824) + extra == 19 + extra
    assert engine_gpus(2, 2, False) == 4 and engine_gpus(8, 1, True) == 1


def test_the_advisor_sizes_offload_per_engine_in_gib() -> None:
    advice = advise(
        AdviceRequest(gpu="a800-40gb-sxm", gpus=2, model="llama3.1-70b", priority="throughput", concurrency=64)
    )
    memory, extra = advice.memory, load_rules().kv_offload_peaks.extra_gib
    gpus = engine_gpus(memory.tensor_parallel, memory.pipeline_parallel, memory.attention_data_parallel)
    expected = math.ceil(memory.kv_shortfall_gb_per_gpu * gpus / GB_PER_GIB) + extra
    assert advice.kv_offload_gb == expected
    assert _value(advice.launch, "--kv-offloading-size") == str(expected)


def test_each_data_parallel_engine_takes_the_full_offload_size() -> None:
    command = _cmd("vllm", split=2, tensor_parallel=2, replicas=4, offload_gb=20)
    assert _value(command, "--kv-offloading-size") == "20"  # not 20 x 4 copies
    assert _value(command, "--data-parallel-size") == "4"


def test_sglang_hierarchical_cache_carries_its_size_per_rank() -> None:
    command = _cmd("sglang", split=2, tensor_parallel=2, offload_gb=20)
    assert "--enable-hierarchical-cache" in command.argv
    assert _value(command, "--hicache-size") == str(math.ceil(20 * GB_PER_GIB / 2)) == "11"


# -- 5. Ollama at high concurrency -----------------------------------------------------------------------------------
def test_ollama_warns_above_the_parallel_slots_it_handles_well() -> None:
    limit = get_engine("ollama").max_slots_advised
    assert limit is not None
    assert not _cmd("ollama", quant="gguf-q4_k_m", slots=limit).warnings
    busy = _cmd("ollama", quant="gguf-q4_k_m", slots=limit * 8)
    assert busy.env["OLLAMA_NUM_PARALLEL"] == str(limit * 8)
    assert any("OLLAMA_NUM_PARALLEL" in w and "vLLM" in w for w in busy.warnings)


# -- 6. registered spellings -----------------------------------------------------------------------------------------
def test_sglang_prints_the_registered_parallel_flags_not_abbreviations() -> None:
    command = _cmd("sglang", split=2, tensor_parallel=2, replicas=2)
    assert (_value(command, "--tp-size"), _value(command, "--dp-size")) == ("2", "2")
    assert "--tp" not in command.argv and "--dp" not in command.argv


def test_tgi_reads_pre_quantized_checkpoints_without_a_quantize_flag() -> None:
    assert "--quantize" not in _cmd("tgi", quant="awq").argv
    assert _value(_cmd("tgi", quant="fp8"), "--quantize") == "fp8"  # BF16 repo quantized at load
    assert _value(_cmd("tgi", quant="nf4"), "--quantize") == "bitsandbytes-nf4"


# -- 7. FP8 on GPUs without FP8 ----------------------------------------------------------------------------------------
def test_engines_say_whether_fp8_has_a_weight_only_fallback() -> None:
    fallback = {e.id: e.fp8_weight_only for e in load_engines()}
    assert fallback["tensorrt-llm"] is False and fallback["lmdeploy"] is False
    assert fallback["vllm"] and fallback["sglang"] and fallback["tgi"]


def test_eight_bit_kv_types_come_from_the_engine_catalog() -> None:
    assert [eight_bit_kv(get_engine(e)) for e in ("vllm", "lmdeploy", "llama.cpp")] == ["fp8", "int8", "q8_0"]
    assert eight_bit_kv(get_engine("mlc-llm")) is None


# -- 8. parallel layouts -----------------------------------------------------------------------------------------------
def test_vllm_tensor_pipeline_and_expert_parallel() -> None:
    command = _cmd("vllm", GPT_OSS, quant="mxfp4", split=4, tensor_parallel=4, expert_parallel=True)
    assert _value(command, "--tensor-parallel-size") == "4" and "--enable-expert-parallel" in command.argv
    pp = _cmd("vllm", split=8, tensor_parallel=4, pipeline_parallel=2)
    assert (_value(pp, "--tensor-parallel-size"), _value(pp, "--pipeline-parallel-size")) == ("4", "2")


def test_data_parallel_attention_for_mla_models() -> None:
    layout = {"split": 8, "replicas": 1, "expert_parallel": True, "attention_data_parallel": True}
    vllm = _cmd("vllm", DEEPSEEK, quant="fp8", **layout)
    assert vllm.argv[2] == "deepseek-ai/DeepSeek-V3"
    assert (_value(vllm, "--tensor-parallel-size"), _value(vllm, "--data-parallel-size")) == ("1", "8")
    assert "--enable-expert-parallel" in vllm.argv and "--quantization" not in vllm.argv
    sglang = _cmd("sglang", DEEPSEEK, quant="fp8", **layout)
    assert "--enable-dp-attention" in sglang.argv
    assert [_value(sglang, f) for f in ("--tp-size", "--dp-size", "--ep-size")] == ["8", "8", "8"]
    trt = _cmd("tensorrt-llm", DEEPSEEK, quant="fp8", **layout)
    assert "enable_attention_dp: true" in trt.files["extra.yml"]
    assert (_value(trt, "--tp_size"), _value(trt, "--ep_size")) == ("8", "8")
    lmdeploy = _cmd("lmdeploy", DEEPSEEK, quant="fp8", **layout)
    assert (_value(lmdeploy, "--dp"), _value(lmdeploy, "--ep"), _value(lmdeploy, "--backend")) == ("8", "8", "pytorch")


def test_multi_node_head_commands_carry_each_engines_own_flags() -> None:
    layout = {"split": 16, "tensor_parallel": 8, "pipeline_parallel": 2, "nodes": 2, "gpus_per_node": 8}
    vllm = _cmd("vllm", **layout)
    assert (_value(vllm, "--nnodes"), _value(vllm, "--node-rank"), _value(vllm, "--master-addr")) == (
        "2",
        "0",
        "HEAD_NODE_IP",
    )
    assert any("--headless" in note and "--node-rank 1" in note for note in vllm.notes)
    # With one other node the note names its rank; with several it says which ranks i takes.
    assert any("On node 1 run the same command with --node-rank 1 and --headless" in note for note in vllm.notes)
    three = _cmd("vllm", **{**layout, "split": 24, "pipeline_parallel": 3, "nodes": 3})
    assert any("On node i (1-2) run the same command with --node-rank i and --headless" in n for n in three.notes)
    sglang = _cmd("sglang", **layout)
    assert (_value(sglang, "--nnodes"), _value(sglang, "--node-rank")) == ("2", "0")
    assert _value(sglang, "--dist-init-addr").startswith("HEAD_NODE_IP:")
    assert any("--node-rank 1" in note and "RDMA" in note for note in sglang.notes)
    trt = _cmd("tensorrt-llm", **layout)
    assert trt.argv[0] == "mpirun" and "trtllm-llmapi-launch" in trt.argv
    assert _value(trt, "-np") == "16" and _value(trt, "--gpus_per_node") == "8"
    lmdeploy = _cmd("lmdeploy", **layout)
    assert ("ray", "start", "--head") in lmdeploy.prepare
    assert _value(lmdeploy, "--tp") == "16" and _value(lmdeploy, "--backend") == "pytorch"


@pytest.mark.parametrize(
    ("engine", "quant"), [("llama.cpp", "gguf-q4_k_m"), ("ollama", "gguf-q4_k_m"), ("tgi", "bf16")]
)
def test_engines_without_multi_node_warn_instead_of_printing_one(engine: str, quant: str) -> None:
    command = _cmd(engine, quant=quant, split=16, tensor_parallel=8, pipeline_parallel=2, nodes=2, gpus_per_node=8)
    assert any("several nodes" in w for w in command.warnings)
    assert "--nnodes" not in command.argv and "mpirun" not in command.argv


# -- 9. LMDeploy backend per model and format ------------------------------------------------------------------------
def test_lmdeploy_picks_the_backend_that_loads_the_model_and_format() -> None:
    assert _value(_cmd("lmdeploy", quant="awq"), "--backend") == "turbomind"
    assert _value(_cmd("lmdeploy", GPT_OSS, quant="mxfp4", split=2, tensor_parallel=2), "--backend") == "turbomind"
    fp8 = _cmd("lmdeploy", _unpublished("qwen2.5-7b", "fp8_repo"), quant="fp8")
    assert (_value(fp8, "--backend"), _value(fp8, "--model-format")) == ("pytorch", "fp8")
    assert fp8.argv[3] == "Qwen/Qwen2.5-7B-Instruct"
    deepseek = _cmd("lmdeploy", DEEPSEEK, quant="fp8", split=8, tensor_parallel=8)
    assert _value(deepseek, "--backend") == "pytorch" and "--model-format" not in deepseek.argv


def test_the_shell_form_is_the_prepare_commands_then_the_one_line_command() -> None:
    command = _cmd("lmdeploy", _unpublished("qwen2.5-7b"), quant="w8a8-int8")
    body = command.shell
    for prepared in command.prepare:
        body = body.replace(shlex.join(prepared) + "\n", "", 1)
    assert shlex.split(body.replace("\\\n", " ")) == shlex.split(command.command_line)
