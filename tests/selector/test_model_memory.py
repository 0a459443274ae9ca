"""Memory fit for today's models: every expert resident, MLA latents, sliding windows, real checkpoint sizes."""

import pytest

from catalog import find_gpu
from catalog.engines import get_engine
from catalog.kvcache import kv_bytes_per_sequence, kv_bytes_per_token
from catalog.models import find_model
from catalog.quantization import weights_gb
from selector import AdviceRequest, advise
from selector.memory import Policy, fit, memory_policy, memory_pressure, valid_splits


def test_deepseek_v3_stores_one_compressed_latent_per_token_per_layer() -> None:
    # DeepSeek-V3: 61 layers x (512 latent + 64 rotary) x 2 bytes = 70,272 bytes per token in BF16, against
    # 61 x 2 x 128 heads x 128 x 2 = 3.8 MB if it cached full K and V.
    model = find_model("deepseek-v3")
    assert model.kv_kind == "mla"
    assert kv_bytes_per_token(model, "auto") == 61 * 576 * 2
    assert kv_bytes_per_token(model, "fp8") == 61 * 576


def test_sliding_window_layers_hold_at_most_the_window() -> None:
    gpt = find_model("gpt-oss-120b")
    assert (gpt.sliding_window, gpt.sliding_window_layers) == (128, 18)
    per_token_layer = 2 * gpt.kv_heads * gpt.head_dim * 2
    long, short = kv_bytes_per_sequence(gpt, "auto", 131072), kv_bytes_per_sequence(gpt, "auto", 100)
    assert long == 18 * 131072 * per_token_layer + 18 * 128 * per_token_layer
    assert short == 36 * 100 * per_token_layer  # within the window every layer holds every token
    gemma = find_model("gemma-3-27b")
    full = kv_bytes_per_token(gemma) * 32768
    assert kv_bytes_per_sequence(gemma, "auto", 32768) < full / 4  # 52 of 62 layers keep only 1,024 tokens


@pytest.mark.parametrize(
    ("model_id", "quant", "published_gb"),
    [
        ("gpt-oss-120b", "mxfp4", 65.3),  # openai/gpt-oss-120b safetensors: MXFP4 experts, BF16 attention
        ("gpt-oss-20b", "mxfp4", 13.8),
        ("deepseek-v3", "fp8", 671 + 1.9),  # 671B in block FP8, the two 129,280 x 7,168 embedding tables in BF16
    ],
)
def test_native_checkpoints_weigh_what_they_are_published_at(model_id: str, quant: str, published_gb: float) -> None:
    assert weights_gb(find_model(model_id), quant) == pytest.approx(published_gb, rel=0.03)


def test_every_expert_is_resident_so_memory_follows_total_not_active_parameters() -> None:
    model = find_model("qwen3-30b-a3b")
    assert model.active_params < model.params / 5
    assert weights_gb(model, "bf16") > 2 * model.params_b * 0.98


@pytest.mark.parametrize(
    ("model_id", "gpus", "quant", "refused"),
    [
        ("qwen2.5-7b", 7, "bf16", 7),  # 4 KV heads cannot spread over 7 GPUs
        ("qwen2.5-14b", 5, "bf16", 5),  # 8 KV heads, 40 heads: 5 divides the heads but not the KV heads
        ("qwen2.5-32b", 5, "bf16", 5),
        ("qwen2.5-14b", 8, "awq", 8),  # 13,824 / 8 = 1,728: not whole groups of 128
        ("qwen2.5-3b", 4, "awq", 4),  # 11,008 / 4 = 2,752
        ("qwen2.5-3b", 8, "awq", 8),
    ],
)
def test_tensor_parallel_sizes_the_engines_refuse_are_never_proposed(
    model_id: str, gpus: int, quant: str, refused: int
) -> None:
    model = find_model(model_id)
    assert refused not in valid_splits(model, gpus, "tensor", quant)
    advice = advise(AdviceRequest(gpu="h100", gpus=gpus, model=model_id, quant=quant, concurrency=4096))
    assert advice.memory.tensor_parallel != refused
    assert f"--tensor-parallel-size {refused}" not in advice.launch.command_line
    assert any(d.rule_id == "gate.parallel_split" and f"{refused} GPUs per copy" in d.reason for d in advice.reasons)


def test_experts_too_narrow_for_their_groups_are_spread_whole_with_expert_parallelism() -> None:
    # Qwen3-30B-A3B: each expert's 768 columns split 8 ways would be 96, below FP8's 128 blocks.
    model, gpu = find_model("qwen3-30b-a3b"), find_gpu("h100")
    kwargs = {"split_kind": "tensor", "quant": "fp8", "kv_dtype": "auto", "context": 4096, "concurrency": 16}
    plain = fit(model, gpu, gpus=8, prefer_wide=True, **kwargs)  # type: ignore[arg-type]
    assert plain.tensor_parallel < 8
    with_ep = fit(model, gpu, gpus=8, prefer_wide=True, policy=Policy(expert_parallel_allowed=True), **kwargs)  # type: ignore[arg-type]
    assert (with_ep.tensor_parallel, with_ep.expert_parallel) == (8, True)


def test_mxfp4_experts_split_any_way_because_the_engines_pad_each_share_to_whole_blocks() -> None:
    # gpt-oss-120b: each expert's 2,880 columns split 8 ways is 360, not whole blocks of 32; vLLM and SGLang pad it
    # (InferenceX ran it at tensor parallel 8 on MI300X). FP8's 128 blocks are not padded (the test above).
    model = find_model("gpt-oss-120b")
    assert 8 in valid_splits(model, 8, "tensor", "mxfp4")
    assert 8 not in valid_splits(find_model("qwen3-30b-a3b"), 8, "tensor", "fp8")


def test_fp8_quantized_at_load_splits_any_way_but_a_block_checkpoint_or_lmdeploys_blocks_do_not() -> None:
    # Qwen2.5-72B has no FP8 checkpoint: vLLM's --quantization fp8 scales its BF16 weights per tensor at load, so
    # the MLP's 29,568 columns split 4 ways (7,392, not whole 128-blocks) still load. Four H20s then run one 4-GPU
    # copy, not four 1-GPU copies squeezed beside 75 GB of weights.
    advice = advise(AdviceRequest(gpu="h20", gpus=4, model="qwen2.5-72b", quant="fp8", engine="vllm"))
    assert advice.memory.tensor_parallel == 4
    assert (
        "--tensor-parallel-size 4" in advice.launch.command_line and "--quantization fp8" in advice.launch.command_line
    )
    # The advice for too few GPUs counts the same way: two H100s hold it (TP2 splits the MLP into 14,784 columns).
    short = advise(AdviceRequest(gpu="h100", gpus=1, model="qwen2.5-72b", quant="fp8", engine="vllm"))
    assert any(s.startswith("More GPUs: 2x H100") for s in short.memory.suggestions), short.memory.suggestions
    # LMDeploy quantizes the same weights in 128 x 128 blocks, so 4 ways is refused, and said so.
    lmdeploy = advise(AdviceRequest(gpu="h20", gpus=4, model="qwen2.5-72b", quant="fp8", engine="lmdeploy"))
    assert lmdeploy.memory.tensor_parallel == 1
    assert any(d.rule_id == "gate.parallel_split" and "7392" in d.reason for d in lmdeploy.reasons)
    # Qwen3-4B-FP8 is a published block checkpoint: its 9,728 columns split 8 ways (1,216) are refused with vLLM too.
    qwen3 = advise(AdviceRequest(gpu="h100", gpus=8, model="qwen3-4b", quant="fp8", engine="vllm", concurrency=4096))
    assert qwen3.memory.tensor_parallel != 8


def test_many_expert_models_get_expert_parallelism_with_each_engines_flag() -> None:
    advice = advise(AdviceRequest(gpu="h200", gpus=8, model="qwen3-235b-a22b", concurrency=64))
    assert advice.memory.split > 1 and advice.memory.expert_parallel
    assert any(d.topic == "expert_parallel" for d in advice.reasons)
    assert "--enable-expert-parallel" in advice.launch.argv


def test_mla_models_get_data_parallel_attention_for_throughput_but_not_for_latency_at_low_load() -> None:
    busy = advise(AdviceRequest(gpu="h200", gpus=8, model="deepseek-v3", priority="throughput", concurrency=256))
    assert busy.memory.attention_data_parallel
    quiet = advise(AdviceRequest(gpu="h200", gpus=8, model="deepseek-v3", priority="latency", concurrency=4))
    assert not quiet.memory.attention_data_parallel
    # Replicated latents: data-parallel attention holds about split times the sequences.
    assert busy.memory.max_concurrent_sequences > 4 * quiet.memory.max_concurrent_sequences


def test_a_model_larger_than_a_node_gets_the_smallest_multi_node_layout() -> None:
    advice = advise(AdviceRequest(gpu="a800-80gb-sxm", gpus=8, model="deepseek-v3", quant="fp8", engine="vllm"))
    m = advice.memory
    assert m.fits and m.nodes == 2 and m.gpus == 16
    assert any(d.rule_id == "parallel.multi_node" for d in advice.reasons)
    assert any("2 nodes" in w for w in advice.warnings)


def test_the_json_reports_the_model_facts() -> None:
    facts = advise(AdviceRequest(gpu="h100", gpus=2, model="gpt-oss-120b")).to_json_dict()["model_facts"]
    assert isinstance(facts, dict)
    assert facts["experts"] == 128 and facts["experts_per_token"] == 4
    assert facts["kv_kind"] == "gqa" and facts["sliding_window"] == 128
    assert facts["total_params_b"] > 100 > 10 > facts["active_params_b"]  # type: ignore[operator]
    dense = advise(AdviceRequest(gpu="h100", model="llama3.1-8b")).to_json_dict()["model_facts"]
    assert dense["experts"] == 0 and dense["sliding_window"] is None  # type: ignore[index]


def test_a_custom_model_counts_its_embeddings_in_16_bit() -> None:
    base = {"gpu": "h100", "model": "custom", "params_b": 8.03, "vocab_size": 128256, "hidden_size": 4096}
    advice = advise(AdviceRequest.model_validate({**base, "quant": "awq"}))
    preset = advise(AdviceRequest(gpu="h100", model="llama3.1-8b", quant="awq"))
    assert advice.memory.weights_gb == pytest.approx(preset.memory.weights_gb, rel=0.01)


def test_a_cpu_host_gets_llama_cpp_without_gpu_offload_and_gpt_oss_its_own_gguf() -> None:
    advice = advise(AdviceRequest(gpu="cpu", model="gpt-oss-20b", deploy="edge"))
    argv = advice.launch.argv
    assert advice.engine == "llama.cpp" and "-ngl" not in argv
    assert argv[argv.index("-hf") + 1] == "ggml-org/gpt-oss-20b-GGUF"  # the MXFP4 GGUF has no Q4_K_M file
    on_gpu = advise(AdviceRequest(gpu="rtx 4090", model="qwen2.5-7b", deploy="edge")).launch.argv
    assert "-ngl" in on_gpu


def test_a_short_fit_is_told_what_holds_more_not_a_format_that_holds_the_same() -> None:
    # DeepSeek-R1 in its FP8 checkpoint on 8x H20 holds 5 of 16 sequences. SmoothQuant INT8 weighs the same
    # (673 GB) and would hold the same 5, so it is no advice; a 4-bit format or a second node is.
    advice = advise(AdviceRequest(gpu="h20", gpus=8, model="deepseek-r1", engine="vllm", concurrency=16))
    assert advice.memory.max_concurrent_sequences < 16
    said = advice.memory.suggestions
    assert not any(s.startswith("Quantize to SmoothQuant") for s in said), said
    quantize = [s for s in said if s.startswith("Quantize to")]
    assert quantize and int(quantize[0].split("room for ")[1].split()[0]) > advice.memory.max_concurrent_sequences
    assert "More nodes: 2 nodes of 8x H20 96GB hold 16 sequences of 4096 tokens." in said, said


def test_a_model_that_one_node_holds_only_below_the_target_says_how_many_gpus_and_nodes_it_takes() -> None:
    # DeepSeek-R1 in FP8 on one H20: eight H20s hold its 673 GB of weights with room for only a few sequences, and
    # two nodes hold the target. The advice names both, rather than stopping at "does not fit".
    advice = advise(AdviceRequest(gpu="h20", gpus=1, model="deepseek-r1", engine="vllm", concurrency=16))
    assert not advice.memory.fits
    eight = fit(
        find_model("deepseek-r1"),
        find_gpu("h20"),
        gpus=8,
        split_kind="tensor",
        quant="fp8",
        kv_dtype="fp8",
        context=4096,
        concurrency=16,
    )
    assert eight.fits and not eight.meets_concurrency
    said = " ".join(advice.memory.suggestions)
    assert f"More GPUs: 8x H20 96GB hold the model, with room for {eight.max_concurrent_sequences} of the 16" in said
    assert "More nodes: 2 nodes of 8x H20 96GB hold 16 sequences" in said
    assert any("More GPUs: 8x H20" in warning for warning in advice.warnings)


def test_each_engine_sizes_its_kv_cache_as_its_own_memory_flag_does() -> None:
    # Llama-3.1-70B in FP8 (72.7 GB) on one H100 80GB. vLLM's --gpu-memory-utilization 0.9 is a share of the whole
    # GPU: 72 GB, less the weights and the runtime, leaves nothing. TensorRT-LLM's --kv_cache_free_gpu_memory_fraction
    # 0.9 and LMDeploy's --cache-max-entry-count 0.8 are shares of what loading left: 80 - 1.5 - 72.7 GB.
    ask = {"gpu": "H100", "gpus": "1", "model": "llama3.1-70b", "quant": "fp8"}
    vllm, trt, lmdeploy = (
        advise(AdviceRequest.model_validate({**ask, "engine": e})) for e in ("vllm", "tensorrt-llm", "lmdeploy")
    )
    assert not vllm.memory.fits
    left = 80 - 1.5 - vllm.memory.weights_gb_per_gpu
    assert trt.memory.kv_budget_gb_per_gpu == pytest.approx(0.9 * left, abs=0.01)
    assert lmdeploy.memory.kv_budget_gb_per_gpu == pytest.approx(0.8 * left, abs=0.01)
    assert trt.memory.fits and trt.memory.max_concurrent_sequences == 7  # 5.22 GB at 160 KiB per FP8 token
    # The commands carry the same shares, read from the engine catalog.
    argv = list(trt.launch.argv)
    assert argv[argv.index("--kv_cache_free_gpu_memory_fraction") + 1] == "0.9"
    argv = list(lmdeploy.launch.argv)
    assert argv[argv.index("--cache-max-entry-count") + 1] == "0.8"
    # TensorRT-LLM's runner-up, vLLM, gets the same layout and no room at its own share: its command says so.
    assert trt.runner_up == "vllm" and trt.runner_up_launch is not None
    (warning,) = [w for w in trt.runner_up_launch.warnings if "no room for the KV cache" in w]
    assert "on 1x H100 80GB SXM at vLLM's default memory share" in warning
    assert any(
        w.startswith("Runner-up (vLLM): Llama-3.1-70B-Instruct in FP8 W8A8 leaves no room") for w in trt.warnings
    )
    # A runner-up that fits is not warned, over several nodes too (DeepSeek-R1 on 3 nodes of A800s).
    r1 = advise(AdviceRequest.model_validate({"gpu": "A800", "gpus": "8", "model": "deepseek-r1"}))
    assert r1.memory.nodes == 3 and r1.runner_up_launch is not None
    assert not [w for w in r1.runner_up_launch.warnings if "no room for the KV cache" in w]


def test_how_hard_bf16_presses_on_memory_is_judged_at_the_engines_own_share() -> None:
    # Llama-3.1-70B in BF16 over 2x H100: vLLM's 0.9 of the whole GPU leaves nothing after 70.6 GB of weights per GPU
    # (extreme: quantize to fit at all); TensorRT-LLM's 0.9 of what loading left holds some sequences (tight).
    model, gpu = find_model("llama3.1-70b"), find_gpu("H100")
    press = {
        engine: memory_pressure(
            model,
            gpu,
            gpus=2,
            split_kind="tensor",
            context=4096,
            concurrency=16,
            policy=Policy(**memory_policy(get_engine(engine))),
        )
        for engine in ("vllm", "tensorrt-llm")
    }
    assert press == {"vllm": "extreme", "tensorrt-llm": "tight"}
    # The rules read it so: "BF16 weights alone overflow 2x A100" (SmoothQuant) is true at vLLM's share and false at
    # LMDeploy's, which leaves 6.3 GB per GPU after the weights.
    ask = {"gpu": "A100", "gpus": "2", "model": "llama3.1-70b", "priority": "throughput"}
    vllm, lmdeploy = (advise(AdviceRequest.model_validate({**ask, "engine": e})) for e in ("vllm", "lmdeploy"))
    assert vllm.quantization == "w8a8-int8" and lmdeploy.quantization == "awq"
