"""Estimates: the handbook's run, calibration by a measured run, bands and bases, and the engines' gates."""

import pytest

from catalog import load_handbook
from perf import Calibration, MeasuredLevel, NoEstimateError, PerfError, PerfRequest, estimate

SEED = load_handbook().seed_benchmark
HANDBOOK = PerfRequest(
    gpu=SEED.gpu,
    model="qwen2.5-3b",
    engine="vllm",
    quant="bf16",
    input_tokens=64,
    output_tokens=SEED.max_tokens,
    concurrency=(1, SEED.concurrency),
)


def handbook_run(levels: tuple[MeasuredLevel, ...], run_id: str = "run7") -> Calibration:
    return Calibration(
        run_id=run_id, gpu=SEED.gpu, gpus=1, model="qwen2.5-3b", engine="vllm", quant="bf16", levels=levels
    )


def test_calibrated_by_concurrency_1_the_handbook_run_at_16_comes_out_within_25_percent() -> None:
    c1 = MeasuredLevel(
        concurrency=1,
        input_tokens=64,
        output_tokens=SEED.max_tokens,
        ttft_p50_ms=None,
        tpot_p50_ms=None,
        output_tok_s=SEED.output_tok_s / SEED.speedup_vs_concurrency_1,
    )
    result = estimate(HANDBOOK, [handbook_run((c1,))])
    at16 = result.levels[-1]
    assert result.basis.kind == "calibrated" and "run7" in result.basis.text
    assert at16.output_tok_s == pytest.approx(SEED.output_tok_s, rel=0.25)
    assert at16.tpot_ms.p50 == pytest.approx(SEED.tpot_ms, rel=0.25)


def test_the_handbook_configuration_comes_out_within_25_percent() -> None:
    at16 = estimate(HANDBOOK).levels[-1]
    assert at16.output_tok_s == pytest.approx(SEED.output_tok_s, rel=0.25)
    assert at16.tpot_ms.p50 == pytest.approx(SEED.tpot_ms, rel=0.25)


def test_a_probe_run_narrows_the_band_and_says_so() -> None:
    request = PerfRequest(gpu="h100", model="llama3.1-8b", engine="vllm", quant="fp8", concurrency=(1, 16))
    fitted = estimate(request)
    measured = tuple(
        MeasuredLevel(
            concurrency=level.concurrency,
            input_tokens=1000,
            output_tokens=200,
            ttft_p50_ms=level.ttft_ms.p50 * 1.3,
            tpot_p50_ms=level.tpot_ms.p50 * factor,
            output_tok_s=None,
        )
        for level, factor in zip(fitted.levels, (1.18, 1.22), strict=True)
    )
    run = Calibration(
        run_id="a1b2c3", gpu="h100-80gb-sxm", gpus=1, model="llama3.1-8b", engine="vllm", quant="fp8", levels=measured
    )
    calibrated = estimate(request, [run])
    assert fitted.basis.kind == "fitted" and calibrated.basis.kind == "calibrated"
    assert calibrated.basis.run_ids == ("a1b2c3",) and "a1b2c3" in calibrated.basis.text
    assert calibrated.band.high_ratio - calibrated.band.low_ratio < fitted.band.high_ratio - fitted.band.low_ratio
    assert calibrated.levels[1].tpot_ms.p50 == pytest.approx(fitted.levels[1].tpot_ms.p50 * 1.2, rel=0.03)
    other = run.model_copy(update={"quant": "awq"})
    assert estimate(request, [other]).basis.kind == "fitted", "a run of another configuration does not calibrate"


def test_a_gpu_absent_from_the_fit_set_rests_on_its_datasheet() -> None:
    result = estimate(PerfRequest(gpu="L40S", model="qwen2.5-7b", engine="vllm", quant="fp8"))
    assert result.basis.kind == "datasheet" and "Ada" in result.basis.text
    assert result.band.group.startswith("new-architecture|"), "quoted from the error on architectures held out"
    fitted = estimate(PerfRequest(gpu="h100", model="qwen2.5-7b", engine="vllm", quant="fp8"))
    assert result.band.high_ratio - result.band.low_ratio > fitted.band.high_ratio - fitted.band.low_ratio


def test_more_bandwidth_is_faster_and_fp8_beats_bf16_on_hopper() -> None:
    def tpot(gpu: str, quant: str) -> float:
        return (
            estimate(PerfRequest(gpu=gpu, model="llama3.1-8b", engine="vllm", quant=quant, concurrency=(1,)))
            .levels[0]
            .tpot_ms.p50
        )

    assert tpot("h200", "bf16") < tpot("h100", "bf16") < tpot("a100", "bf16")
    assert tpot("h100", "fp8") < tpot("h100", "bf16")


def test_gates_and_unknown_engines_are_refused_with_the_field_named() -> None:
    with pytest.raises(NoEstimateError, match="engine: no estimate for 'tgi'"):
        estimate(PerfRequest(gpu="h100", model="llama3.1-8b", engine="tgi"))
    with pytest.raises(PerfError, match="quant"):
        estimate(PerfRequest(gpu="a100", model="llama3.1-8b", engine="tensorrt-llm", quant="fp8"))
    with pytest.raises(PerfError, match="does not fit"):
        estimate(PerfRequest(gpu="rtx 4090", model="llama3.1-70b", engine="vllm", quant="bf16"))


def test_published_maximum_throughputs_the_fit_never_saw_come_out_within_25_percent() -> None:
    from perf.fitset import published_points

    max_load = [p for p in published_points() if p.concurrency is None and p.output_tok_s]
    assert len(max_load) >= 4
    for p in max_load:
        assert estimate(p.max_load_request()).max_output_tok_s == pytest.approx(p.output_tok_s, rel=0.25), p.row_id
