"""Estimates: the handbook's run, calibration by a measured run, bands and bases, and the engines' gates."""

import pytest

from catalog import load_handbook
from perf import Calibration, MeasuredLevel, NoEstimateError, PerfError, PerfRequest, Slo, estimate
from perf.coefficients import load_coefficients

SEED = load_handbook().seed_benchmark
HANDBOOK = PerfRequest(
    gpu=SEED.gpu,
    model="qwen2.5-3b",
    engine="vllm",
    engine_version="0.6.5",  # the handbook's release (catalog/data/handbook.toml [seed_benchmark])
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


def test_published_maximum_throughputs_the_fit_never_saw_fall_mostly_inside_their_bands() -> None:
    """Max-load tables (TensorRT-LLM releases, AMD's MI300X vLLM runs) against the estimate's maximum: never fitted."""
    import numpy as np

    from perf.accuracy import max_load
    from perf.fitset import published_points

    points = [p for p in published_points() if p.concurrency is None and p.output_tok_s][::10]
    assert len(points) >= 100
    results = [m for m in max_load(points) if m.estimated_tok_s]
    assert len(results) >= 0.9 * len(points), "nearly every published configuration gets an estimate"
    errors = [abs(1 / m.ratio - 1) for m in results]
    assert float(np.median(errors)) <= 0.35
    assert float(np.mean([m.inside for m in results])) >= 0.75


def test_max_is_the_engines_own_limit_not_256() -> None:
    request = PerfRequest(
        gpu="b200", gpus=8, model="llama4-maverick", engine="trtllm", quant="fp8", concurrency=(), max_throughput=True
    )
    result = estimate(request)
    assert result.max_num_seqs == 2048 and result.max_throughput_concurrency > 256
    capped = estimate(request.model_copy(update={"max_num_seqs": 256}))
    assert capped.max_throughput_concurrency == 256 and capped.max_output_tok_s < result.max_output_tok_s


def _run_of(request: PerfRequest, factor: float, served: str = "", **shape: float) -> Calibration:
    """A probe run of the request's configuration whose TPOT is `factor` x the estimate's, at the given lengths."""
    fitted = estimate(request)
    return Calibration(
        run_id="r1",
        gpu=fitted.gpu_id,
        gpus=fitted.layout.gpus,
        model=fitted.model_id,
        engine=fitted.engine,
        quant=fitted.quant,
        served_model=served,
        levels=tuple(
            MeasuredLevel(
                concurrency=level.concurrency,
                input_tokens=shape.get("input_tokens", request.input_tokens),
                output_tokens=shape.get("output_tokens", request.output_tokens),
                ttft_p50_ms=level.ttft_ms.p50 * factor,
                tpot_p50_ms=level.tpot_ms.p50 * factor,
                output_tok_s=None,
            )
            for level in fitted.levels
        ),
    )


LLAMA70 = PerfRequest(gpu="h100", gpus=2, model="llama3.1-70b", engine="vllm", quant="fp8", concurrency=(1, 8))


def test_a_run_whose_server_named_another_model_does_not_calibrate_until_confirmed() -> None:
    run = _run_of(LLAMA70, 3.0, served="fake")
    result = estimate(LLAMA70, [run])
    assert result.basis.kind == "fitted", "a run of a model named 'fake' says nothing about Llama-3.1-70B"
    assert any("server named the model 'fake'" in n for n in result.notes)
    confirmed = estimate(LLAMA70, [run.model_copy(update={"confirmed": True})])
    assert confirmed.basis.kind == "calibrated" and confirmed.basis.run_ids == ("r1",)
    same = estimate(LLAMA70, [_run_of(LLAMA70, 3.0, served="meta-llama/Llama-3.1-70B-Instruct")])
    assert same.basis.kind == "calibrated"


def test_a_run_calibrates_only_request_lengths_near_its_own() -> None:
    short = _run_of(LLAMA70, 3.0, input_tokens=15, output_tokens=20)
    long_request = LLAMA70.model_copy(update={"input_tokens": 3900, "output_tokens": 300})
    result = estimate(long_request, [short])
    plain = estimate(long_request)
    assert result.basis.kind == "fitted" and result.levels == plain.levels
    assert any("measured other request lengths" in n for n in result.notes)
    assert result.bands == plain.bands, "a band narrows only for what the run vouches for"


def test_ttft_is_corrected_from_measured_ttft_not_from_the_step_time() -> None:
    fitted = estimate(LLAMA70)
    run = _run_of(LLAMA70, 1.0)
    slow_first_token = run.model_copy(
        update={"levels": tuple(m.model_copy(update={"ttft_p50_ms": (m.ttft_p50_ms or 0) * 2}) for m in run.levels)}
    )
    result = estimate(LLAMA70, [slow_first_token])
    for before, after in zip(fitted.levels, result.levels, strict=True):
        assert after.tpot_ms.p50 == pytest.approx(before.tpot_ms.p50, rel=0.02)
        assert after.ttft_ms.p50 == pytest.approx(before.ttft_ms.p50 * 2, rel=0.05)


def test_pipeline_stages_cost_latency_at_one_user_and_gain_throughput_where_kv_dominates() -> None:
    """Each stage reads its weights once per micro-batch, so one user waits for the whole model; the batch's KV and
    FLOPs are spread over every stage, so a large batch of long contexts gains."""
    base = {"gpu": "h100", "model": "llama3.1-70b", "engine": "vllm", "quant": "fp8", "input_tokens": 6000}
    pipelined = estimate(PerfRequest(**base, tp=1, pp=2, concurrency=(1, 64)))
    one_gpu_per_stage_weights = estimate(PerfRequest(**base, tp=2, concurrency=(1, 64)))
    assert pipelined.layout.pp == 2 and pipelined.layout.gpus == 2
    alone, crowd = pipelined.levels
    tp_alone, tp_crowd = one_gpu_per_stage_weights.levels
    assert alone.tpot_ms.p50 > 1.5 * tp_alone.tpot_ms.p50, "one user reads the whole model's weights on one GPU"
    assert crowd.output_tok_s > 0.85 * tp_crowd.output_tok_s, "with many users the stages work in parallel"
    from perf.accuracy import max_load
    from perf.fitset import published_points

    staged = [p for p in published_points() if p.concurrency is None and p.output_tok_s and (p.layout[1] or 1) > 1]
    ratios = sorted(m.ratio for m in max_load(staged[::4]) if m.estimated_tok_s)
    # measured / estimated maximum, median: 1.45 when throughput read the TTFT readout alone, 1.63 once capped by the
    # simulated schedule, 0.97 since each stage all-reduces within its own tensor-parallel group (these 28 of 112)
    assert ratios and 0.75 < ratios[len(ratios) // 2] < 1.3, "TensorRT-LLM's pipeline-parallel tables, not fitted"


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
def test_one_user_on_a_small_model_gets_the_first_token_within_the_handbook_slo(engine: str) -> None:
    """SGLang's public points are all busy; its readout once put every one-user TTFT at >= 0.4 s and off /compare."""
    level = estimate(PerfRequest(gpu="h100", model="llama3.1-8b", engine=engine, concurrency=(1,))).levels[0]
    assert level.ttft_ms.p50 < Slo().ttft_p50_ms


def test_a_request_from_advice_estimates_the_asked_deployment_and_a_custom_model() -> None:
    from perf import request_from_advice
    from selector import AdviceRequest

    asked = AdviceRequest.model_validate(
        {"model": "custom", "gpu": "H100", "gpus": 2, "concurrency": 16, "in_tokens": 0, "out_tokens": 300}
    )
    request = request_from_advice(asked, "vllm", "fp8", slo=Slo(tpot_p50_ms=20))
    assert (request.gpu, request.gpus, request.engine, request.quant) == ("h100-80gb-sxm", 2, "vllm", "fp8")
    assert request.input_tokens == 1 and request.output_tokens == 300, "an empty prompt is estimated as one token"
    assert request.concurrency == (16,) and request.slo.tpot_p50_ms == 20 and request.custom == asked
    result = estimate(request)
    assert result.model_id == "custom" and result.layout.gpus == 2 and result.levels[0].concurrency == 16
    pinned = asked.model_copy(update={"engine": "vllm", "engine_version": "0.6.5"})
    assert request_from_advice(pinned, "vllm", "fp8").engine_version == "0.6.5"
    assert request_from_advice(pinned, "sglang", "fp8", engine_version="").engine_version == ""


def test_an_estimate_says_when_its_few_sources_on_this_architecture_measured_outside_its_band() -> None:
    """vLLM's two held-out sources on MI300X measured TTFT far slower than the band shrunk towards vLLM elsewhere."""
    request = PerfRequest(gpu="MI300X", gpus=8, model="deepseek-r1", engine="vllm", quant="fp8", concurrency=(32,))
    est = estimate(request)
    own = load_coefficients().bands["ttft_ms|vllm|CDNA3"]
    assert (
        not est.bands["ttft_ms"].low_ratio <= (own.low_ratio * own.high_ratio) ** 0.5 <= est.bands["ttft_ms"].high_ratio
    )
    assert f"TTFT {own.low_ratio:.2f}–{own.high_ratio:.2f}×" in est.basis.text and "Beware" in est.basis.text
    on_hopper = estimate(request.model_copy(update={"gpu": "H100"}))
    assert "Beware" not in on_hopper.basis.text


def test_a_fitted_estimate_says_when_its_engines_bands_held_fewer_than_8_in_10_held_out() -> None:
    """Each engine's estimate words exactly the figures whose bands held short of the target held out (SGLang's
    TPOT and TTFT today: its sources disagree), and an engine whose bands held says nothing of it."""
    from perf.targets import coverage_range, judged

    coverage, low = load_coefficients().coverage, coverage_range()[0]
    labels = {"output_tok_s": "tok/s", "tpot_ms": "TPOT", "ttft_ms": "TTFT"}
    for engine in ("vllm", "sglang", "tensorrt-llm"):
        held = {m: coverage[f"{m}|{engine}"] for m in labels if f"{m}|{engine}" in coverage}
        short = [f"{labels[m]} {c.share:.1%}" for m, c in held.items() if judged(c.points, c.sources) and c.share < low]
        request = PerfRequest(gpu="H100", gpus=2, model="llama3.1-8b", engine=engine, concurrency=(16,))
        basis = estimate(request).basis
        assert basis.kind == "fitted", engine
        said = "bands held fewer than 8 in 10 of its measurements: " + ", ".join(short) + ";"
        assert (said in basis.text) == bool(short), (engine, basis.text)
        assert ("fewer than 8 in 10" in basis.text) == bool(short), engine


def test_a_basis_in_chinese_lists_its_figures_and_gaps_with_chinese_punctuation() -> None:
    """The "Beware" figures and several gaps are joined as the page's language joins them, not by ASCII ', '."""
    from i18n import translations
    from perf.result import Wording

    zh = translations("zh").gettext
    request = PerfRequest(gpu="MI300X", gpus=8, model="deepseek-r1", engine="vllm", quant="fp8", concurrency=(32,))
    basis = estimate(request).basis
    assert basis.wording is not None and "TPOT" in basis.text and "×, TTFT" in basis.text
    chinese = basis.wording.worded(zh)
    assert "×，TTFT" in chinese and ", " not in chinese and "; " not in chinese
    gaps = Wording.joined([Wording(template="a"), Wording(template="b"), Wording(template="c")])
    assert (gaps.worded(), gaps.worded(zh)) == ("a; b; c", "a；b；c")
    assert Wording.listed(["x"]).worded(zh) == "x" and Wording.listed(["x", "y"]).worded(zh) == "x，y"


def test_a_release_measured_only_on_another_vendors_gpus_is_an_extrapolation() -> None:
    """The newest vLLM release ran on NVIDIA GPUs only: on an MI300X (a ROCm build) the estimate says so, wider."""
    request = PerfRequest(gpu="MI300X", gpus=8, model="llama-3.1-70b", engine="vllm", quant="fp8", concurrency=(16,))
    newest = estimate(request)
    on_rocm = load_coefficients().vendors["vllm"]["AMD"]
    assert newest.engine_version not in on_rocm and "0.10.0" in on_rocm
    assert newest.basis.kind == "extrapolated"
    assert f"no measured data of vllm {newest.engine_version} on AMD GPUs (the newest measured there: 0.10.0)" in (
        newest.basis.text
    )
    measured = estimate(request.model_copy(update={"engine_version": "0.10.0"}))
    assert measured.basis.kind == "fitted"
    for metric, band in measured.bands.items():
        assert newest.bands[metric].low_ratio <= band.low_ratio and newest.bands[metric].high_ratio >= band.high_ratio
    assert any(newest.bands[m] != measured.bands[m] for m in measured.bands), "wider where every engine's reaches"
    assert estimate(request.model_copy(update={"gpu": "H100", "gpus": 2})).basis.kind == "fitted"
