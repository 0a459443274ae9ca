"""Where a request's GPU time goes: prefill, cached prefix and decode, by the step-time model at a load."""

import pytest

from perf import PerfRequest
from perf.phases import split_phases
from perf.resolve import resolve
from tco.throughput import operating_point


def _engine(gpu: str, hit: float = 0.0) -> PerfRequest:
    return PerfRequest(
        gpu=gpu,
        model="qwen2.5-7b",
        engine="vllm",
        quant="bf16",
        input_tokens=8000,
        output_tokens=200,
        concurrency=(8,),
        prefix_cache_hit=hit,
    )


def test_a_compute_strong_gpu_prefills_faster_and_a_bandwidth_strong_one_decodes_faster() -> None:
    # L40S: 362 dense TFLOP/s over 864 GB/s; A100: 312 TFLOP/s over 2 TB/s; same model, format, shape and load
    l40s = split_phases(resolve(_engine("L40S")).base, 8000, 0, 200, 8)
    a100 = split_phases(resolve(_engine("A100 80GB SXM")).base, 8000, 0, 200, 8)
    assert l40s.prefill_s < a100.prefill_s
    assert l40s.decode_s > a100.decode_s


def test_long_prompts_spend_more_of_the_time_in_prefill_than_long_answers() -> None:
    engine = resolve(_engine("H100")).base
    rag = split_phases(engine, 8000, 0, 200, 16)
    chat = split_phases(engine, 200, 0, 2000, 16)
    assert rag.prefill_s / rag.total_s > 0.3 > 0.05 > chat.prefill_s / chat.total_s


def test_a_cached_token_costs_something_but_far_less_than_computing_it() -> None:
    engine = resolve(_engine("H100", hit=0.5)).base
    cold = split_phases(engine, 8000, 0, 200, 16)
    warm = split_phases(engine, 8000, 4000, 200, 16)
    per_uncached = cold.prefill_s / cold.uncached_tokens
    assert 0 < warm.cached_s_per_token < per_uncached / 5
    assert warm.cached_s == pytest.approx(warm.cached_s_per_token * 4000)
    assert warm.prefill_s < cold.prefill_s  # half the prompt is no longer computed
    assert cold.cached_s == 0 and cold.cached_s_per_token > 0  # the rate is read even when nothing is cached
    assert warm.decode_s == pytest.approx(cold.decode_s)  # the answer costs the same


@pytest.mark.parametrize(("gpu", "ins", "outs"), [("A800", 500, 200), ("H100", 500, 200), ("H100", 200, 2000)])
def test_the_phases_add_up_to_about_the_replica_time_the_estimate_simulates(gpu: str, ins: int, outs: int) -> None:
    request = PerfRequest(gpu=gpu, model="qwen2.5-7b", engine="vllm", input_tokens=ins, output_tokens=outs)
    point = operating_point(request)
    phases = point.estimate.phases  # computed with the estimate, at its operating point
    assert phases is not None
    simulated_s = 1 / point.level.req_s  # one replica's seconds per request at the operating point
    assert phases.concurrency == point.concurrency
    assert phases.total_s == pytest.approx(simulated_s, rel=0.25)
