"""Huawei Ascend NPUs: their own platform, only the engines that run there (vLLM through vllm-ascend, LMDeploy's
PyTorch engine with --device ascend), BF16 or W8A8 INT8, commands their releases accept, and no invented estimate."""

import json
import shlex

import pytest

from catalog import find_gpu, load_engines
from catalog.engines import gpu_platform
from catalog.models import find_model
from catalog.quantization import load_quant_methods
from perf import NoEstimateError, estimate, request_from_advice
from perf.cli import main as perf_main
from selector import AdviceRequest, advise, gate
from selector.memory import fit
from tco.throughput import estimate_advice
from tests.pages.apptest import english_leftovers, metric, open_page, open_tab, texts
from tests.selector.flag_specs import SPECS

NPUS = ["ascend-910b-64gb", "ascend-910c-128gb"]


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def _parses(command_line: str, engine: str) -> None:
    prefix, parser = SPECS[engine]
    words = shlex.split(command_line)
    assert words[: len(prefix)] == prefix
    parser().parse_args(words[len(prefix) :])  # raises on a flag the release does not accept


@pytest.mark.parametrize("gpu_id", NPUS)
def test_an_ascend_npu_is_its_own_platform_and_runs_only_vllm_and_lmdeploy(gpu_id: str) -> None:
    npu = find_gpu(gpu_id)
    assert (npu.vendor, npu.kind, gpu_platform(npu)) == ("Huawei", "npu", "ascend")
    assert {e.id for e in load_engines() if e.runs_on_gpu(npu)} == {"vllm", "lmdeploy"}
    assert {m.id for m in load_quant_methods() if gate(m.id, npu).allowed} == {"bf16", "w8a8-int8"}
    refused = gate("awq", npu)
    assert refused.rule_id == "gate.no_kernels"
    # The refusal names what does run there, not another platform's advice (GGUF on Apple, FP8 on AMD).
    assert refused.reason.endswith("the formats that run there: BF16 (no quantization), SmoothQuant W8A8 (INT8).")
    assert gate("awq", npu, "zh").reason.endswith(
        "能在上面运行的格式：BF16 (no quantization)、SmoothQuant W8A8 (INT8)。"
    )


def test_the_910b_is_found_by_the_names_people_use() -> None:
    assert {find_gpu(name).id for name in ("910B", "Ascend 910B", "昇腾910B", "ascend-910b")} == {"ascend-910b-64gb"}
    assert find_gpu("910C").id == "ascend-910c-128gb"


def test_the_advice_on_a_910b_is_vllm_ascend_with_lmdeploy_as_runner_up() -> None:
    advice = advise(AdviceRequest.model_validate({"gpu": "910B", "model": "qwen2.5-7b"}))
    assert (advice.engine, advice.runner_up, advice.quantization, advice.kv_cache_dtype) == (
        "vllm",
        "lmdeploy",
        "bf16",
        "auto",
    )
    engine = next(d for d in advice.reasons if d.topic == "engine")
    assert engine.rule_id == "engine.ascend" and "vllm-ascend" in engine.source
    assert advice.launch.argv[:2] == ("vllm", "serve")
    assert any("vllm-ascend" in note for note in advice.launch.notes)
    assert advice.runner_up_launch is not None
    runner = advice.runner_up_launch.command_line
    assert "--backend pytorch --device ascend" in runner and "--quant-policy" not in runner
    _parses(advice.launch.command_line, "vllm")
    _parses(runner, "lmdeploy")


def test_lmdeploy_pinned_on_ascend_runs_its_pytorch_engine_and_sglang_pinned_falls_back_with_a_warning() -> None:
    pinned = advise(
        AdviceRequest.model_validate({"gpu": "910B", "gpus": "4", "model": "qwen2.5-72b", "engine": "lmdeploy"})
    )
    assert pinned.engine == "lmdeploy"
    assert "--backend pytorch --device ascend --tp 4" in pinned.launch.command_line
    refused = advise(AdviceRequest.model_validate({"gpu": "910B", "engine": "sglang"}))
    assert refused.engine == "vllm"
    assert any("SGLang does not run on Ascend 910B 64GB" in w for w in refused.warnings)


def test_bf16_short_of_the_target_on_ascend_steps_to_w8a8_int8_that_both_engines_serve_there() -> None:
    # Qwen2.5-72B on two 910Bs: BF16 (145 GB) leaves no room for 16 sequences; W8A8 INT8 halves it.
    advice = advise(AdviceRequest.model_validate({"gpu": "910B", "gpus": "2", "model": "qwen2.5-72b"}))
    assert (advice.engine, advice.quantization) == ("vllm", "w8a8-int8") and advice.memory.meets_concurrency
    quant = next(d for d in advice.reasons if d.topic == "quantization")
    assert quant.rule_id == "quant.ascend_w8a8" and "vllm-ascend" in quant.source
    # vllm-ascend loads the published compressed-tensors checkpoint with no quantization flag, and says so.
    assert advice.launch.argv[:3] == ("vllm", "serve", "RedHatAI/Qwen2.5-72B-Instruct-quantized.w8a8")
    assert "--quantization" not in advice.launch.argv
    assert any("--quantization ascend" in note and "ModelSlim" in note for note in advice.launch.notes)
    _parses(advice.launch.command_line, "vllm")
    # LMDeploy makes its own W8A8 on the NPU (lmdeploy lite smooth_quant --device npu), then serves it there.
    runner = advice.runner_up_launch
    assert runner is not None and advice.runner_up == "lmdeploy"
    (made,) = runner.prepare
    assert made[:3] == ("lmdeploy", "lite", "smooth_quant") and made[-2:] == ("--device", "npu")
    assert runner.argv[3] == made[made.index("--work-dir") + 1]
    _parses(runner.command_line, "lmdeploy")
    # With room to spare, BF16 stays.
    small = advise(AdviceRequest.model_validate({"gpu": "910B", "gpus": "2", "model": "qwen2.5-7b"}))
    assert small.quantization == "bf16"


def test_deepseek_r1_on_910bs_is_two_nodes_of_w8a8_on_a_ray_cluster_as_vllm_ascend_runs_it() -> None:
    # vllm-ascend's DeepSeek-R1 tutorial: the W8A8 model on two Atlas 800 A2 nodes (8x 64 GB each).
    advice = advise(AdviceRequest.model_validate({"gpu": "910B", "gpus": "8", "model": "deepseek-r1"}))
    assert (advice.quantization, advice.memory.nodes, advice.memory.gpus_per_node) == ("w8a8-int8", 2, 8)
    assert advice.memory.fits and advice.memory.meets_concurrency
    argv = list(advice.launch.argv)
    assert argv[argv.index("--distributed-executor-backend") + 1] == "ray" and "--nnodes" not in argv
    assert any("ray start --head" in note and "only" in note for note in advice.launch.notes)
    _parses(advice.launch.command_line, "vllm")
    # DeepSeek-R1 is published in FP8 only: the quantize step reads a BF16 copy made first, never the FP8 download.
    assert 'model="./DeepSeek-R1-BF16"' in advice.launch.files["quantize.py"]
    assert any("fp8_cast_bf16.py" in w and "./DeepSeek-R1-BF16" in w for w in advice.launch.warnings)
    # LMDeploy documents no multi-node run on Ascend: its runner-up command says so.
    assert advice.runner_up == "lmdeploy" and advice.runner_up_launch is not None
    assert any("use vLLM (vllm-ascend)" in w for w in advice.runner_up_launch.warnings)
    assert advice.runner_up_launch.prepare[0][3] == "./DeepSeek-R1-BF16"


def test_a_model_no_count_of_910bs_holds_on_lmdeploy_points_to_the_nearest_ascend_setup() -> None:
    pinned = {"gpu": "910B", "gpus": "8", "model": "deepseek-r1", "engine": "lmdeploy"}
    advice = advise(AdviceRequest.model_validate(pinned))
    assert advice.engine == "lmdeploy" and not advice.memory.fits
    assert any("Nearest valid setup: 8x Ascend 910C 128GB with SmoothQuant W8A8 (INT8)" in w for w in advice.warnings)


def test_a_910c_is_fitted_as_its_two_dies_and_its_commands_count_devices() -> None:
    # An Atlas 800 A3 server shows 16 devices of 64 GB for its 8 cards: the engines split over devices.
    assert find_gpu("910C").devices_per_card == 2 and find_gpu("910B").devices_per_card == 1
    advice = advise(AdviceRequest.model_validate({"gpu": "910C", "gpus": "8", "model": "qwen2.5-72b"}))
    cards = advice.memory.tensor_parallel
    argv = list(advice.launch.argv)
    assert int(argv[argv.index("--tensor-parallel-size") + 1]) == 2 * cards
    assert any(f"a copy on {cards} cards is {2 * cards} devices" in note for note in advice.launch.notes)
    _parses(advice.launch.command_line, "vllm")
    # Each die holds its own share of every sequence's KV: with 8 KV heads over 16 devices each is replicated, so
    # eight cards hold half the sequences that eight 128 GB devices would.
    model, npu = find_model("qwen2.5-72b"), find_gpu("910C")
    kwargs = {"split_kind": "tensor", "quant": "bf16", "kv_dtype": "auto", "context": 4096, "concurrency": 16}
    kwargs["prefer_wide"] = True  # one copy over all eight cards
    dies = fit(model, npu, gpus=8, **kwargs)  # type: ignore[arg-type]
    whole = fit(model, npu.model_copy(update={"devices_per_card": 1}), gpus=8, **kwargs)  # type: ignore[arg-type]
    assert dies.tensor_parallel == whole.tensor_parallel == 8 and dies.memory_gb_per_gpu == 128
    assert dies.max_concurrent_sequences < 0.6 * whole.max_concurrent_sequences
    # The heads must divide by the devices: Qwen2.5-32B's 40 heads refuse 16, so no copy spans 8 cards.
    qwen32 = advise(AdviceRequest.model_validate({"gpu": "910C", "gpus": "8", "model": "qwen2.5-32b"}))
    assert qwen32.memory.tensor_parallel < 8
    assert "8 GPUs per copy: 40 attention heads do not divide by 16" in qwen32.memory.skipped_splits
    on_910b = advise(AdviceRequest.model_validate({"gpu": "910B", "gpus": "8", "model": "qwen2.5-72b"}))
    assert not any("devices" in note for note in on_910b.launch.notes)


def test_kv_offload_on_ascend_uses_vllm_ascends_npu_offloading_spec() -> None:
    advice = advise(
        AdviceRequest.model_validate({"gpu": "910B", "model": "qwen2.5-7b", "concurrency": "200", "quant": "bf16"})
    )
    argv = list(advice.launch.argv)
    assert "--kv-offloading-backend" not in argv
    config = json.loads(argv[argv.index("--kv-transfer-config") + 1])
    extra = config["kv_connector_extra_config"]
    assert (config["kv_connector"], extra["spec_name"]) == ("OffloadingConnector", "NPUOffloadingSpec")
    assert extra["cpu_bytes_to_use"] > 0
    _parses(advice.launch.command_line, "vllm")


def test_the_advice_in_chinese_explains_the_ascend_choice_in_chinese() -> None:
    advice = advise(AdviceRequest.model_validate({"gpu": "910B"}), "zh")
    engine = next(d for d in advice.reasons if d.topic == "engine")
    assert "手册没有针对华为昇腾 NPU 的规则行" in engine.reason
    assert any("vllm-ascend 插件" in note for note in advice.launch.notes)


def test_perf_gives_no_estimate_on_an_npu_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    advice = advise(AdviceRequest.model_validate({"gpu": "910B"}))
    with pytest.raises(NoEstimateError, match="fitted on no Huawei NPU"):
        estimate(request_from_advice(advice.request, "vllm", "bf16"))
    missing = estimate_advice(advice)
    assert missing.point is None and missing.unmodelled_gpu == "Ascend 910B 64GB"
    assert perf_main(["--gpu", "910B", "--engine", "vllm", "--model", "qwen2.5-7b"]) == 2
    assert "fitted on no Huawei NPU" in capsys.readouterr().err


def test_the_selector_page_on_a_910b_proposes_vllm_with_a_command_and_no_estimated_figure() -> None:
    at = open_page("selector", {"gpu": "910B"})
    assert not at.exception and not at.error
    assert metric(at, "Engine") == "vLLM"
    assert not any("(estimate)" in m.label for m in at.metric), "no figure where the model has no data"
    assert any("No estimate on Ascend 910B 64GB" in c for c in texts(at.caption))
    at = open_tab(at, "_selector.tab", "Launch command")
    assert any("vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ" not in c.value and "vllm serve" in c.value for c in at.code)


def test_the_selector_page_on_a_910c_reads_in_chinese() -> None:
    at = open_page("selector", {"lang": "zh", "gpu": "910C", "gpus": "8", "model": "qwen2.5-72b"})
    assert not at.exception and not at.error
    assert english_leftovers(at) == []
    assert any("Ascend 910C 128GB 上没有估算" in c for c in texts(at.caption))


def test_the_selector_page_on_a_910c_lists_the_published_measurements_there_with_this_models_first() -> None:
    at = open_page("selector", {"gpu": "910C", "gpus": "2", "model": "qwen3-32b"})
    assert not at.exception and not at.error
    assert not any("(estimate)" in m.label for m in at.metric), "still no estimated figure on an NPU"
    assert "**Published measurements on Ascend 910C 128GB**" in texts(at.markdown)
    assert any(c.startswith("Measurements, not estimates: 17 operating points") for c in texts(at.caption))
    table = next(d.value for d in at.dataframe if "Output tok/s per NPU" in d.value.columns)
    first = table.iloc[0]
    assert first["Model"] == "Qwen3-32B" and first["Speculative decoding"].startswith("EAGLE3")
    two_npus = table[(table["Model"] == "Qwen3-32B") & (table["NPUs"] == 2)]
    assert sorted(two_npus["Output tok/s"]) == [1416, 1972]  # the two published 2-NPU runs, as published
    assert any(
        c.startswith("Source: sgl-project/sglang docs/platforms/ascend_npu_best_practice.md") for c in texts(at.caption)
    )


def test_the_published_measurements_read_in_chinese() -> None:
    at = open_page("selector", {"lang": "zh", "gpu": "910C", "gpus": "2", "model": "qwen3-32b"})
    assert not at.exception and not at.error
    assert english_leftovers(at) == []
    assert "**Ascend 910C 128GB 上公开发布的实测数据**" in texts(at.markdown)
    table = next(d.value for d in at.dataframe if "每张 NPU 输出 tok/s" in d.value.columns)
    assert "聚合部署" in set(table["部署方式"])
