"""The batching simulation against cases worked out by hand."""

import gc
import math

import pytest

from catalog import find_gpu, find_model
from perf.features import FEATURES, ReplicaShape, StepCost, StepInputs
from perf.simulate import Engine, Workload, closed_loop, poisson

THETA = tuple(1.0 if name in {"roof", "step"} else 0.0 for name in FEATURES)
STEP_S = 1e-3


def engine(max_seqs: int = 64, budget: int = 8192, capacity: int = 10**7) -> Engine:
    cost = StepCost(find_model("llama3.1-8b"), find_gpu("H100"), "bf16", "auto", ReplicaShape())
    theta = tuple(STEP_S if name == "step" else t for name, t in zip(FEATURES, THETA, strict=True))
    return Engine(cost=cost, theta=theta, max_seqs=max_seqs, budget_tokens=budget, kv_capacity_tokens=capacity)


def step_s(e: Engine, decode_seqs: float, decode_ctx: float, **prefill: float) -> float:
    step = StepInputs(decode_seqs=decode_seqs, decode_ctx=decode_ctx, **prefill)
    return sum(t * f for t, f in zip(e.theta, e.cost.features(step), strict=True))


def test_one_request_ttft_is_its_prefill_time() -> None:
    e = engine()
    outcome = closed_loop(e, Workload(1000, 50), 1, 1)
    [r] = outcome.requests
    prefill = step_s(e, 0, 0, prefill_tokens=1000, prefill_pairs=1000 * 500, prefill_seqs=1)
    assert r.first - r.arrival == pytest.approx(prefill, rel=1e-9)


def test_a_long_prompt_is_prefilled_in_budget_sized_chunks() -> None:
    e = engine(budget=512)
    [r] = closed_loop(e, Workload(1200, 2), 1, 1).requests
    chunks = [(0, 512), (512, 512), (1024, 176)]
    expected = sum(
        step_s(e, 0, 0, prefill_tokens=n, prefill_pairs=n * (before + n / 2), prefill_ctx=before, prefill_seqs=1)
        for before, n in chunks
    )
    assert r.first - r.arrival == pytest.approx(expected, rel=1e-9)


def test_decode_steps_follow_the_prefill_one_per_token() -> None:
    e = engine()
    [r] = closed_loop(e, Workload(100, 11), 1, 1).requests
    decode = sum(step_s(e, 1, 100 + i) for i in range(10))
    assert r.finish - r.first == pytest.approx(decode, rel=1e-6)


def test_throughput_flattens_once_the_sequence_limit_binds() -> None:
    e = engine(max_seqs=8)
    w = Workload(200, 100)

    def tok_s(c: int) -> float:
        out = closed_loop(e, w, c, 6 * c)
        return len(out.requests) * w.output_tokens / out.span_s

    t8, t16, t64 = tok_s(8), tok_s(16), tok_s(64)
    assert t8 > 1.5 * tok_s(2)
    assert t16 == pytest.approx(t8, rel=0.05) and t64 == pytest.approx(t8, rel=0.05)


def test_littles_law_in_a_closed_loop() -> None:
    e = engine()
    c = 12
    out = closed_loop(e, Workload(300, 80), c, 40 * c)
    mean_e2e = sum(r.finish - r.arrival for r in out.requests) / len(out.requests)
    assert len(out.requests) / out.span_s == pytest.approx(c / mean_e2e, rel=0.05)


def test_poisson_below_capacity_serves_the_offered_rate_and_obeys_littles_law() -> None:
    e = engine()
    rate = 5.0
    out = poisson(e, Workload(300, 80), rate, 2000, seed=7)
    span = max(r.finish for r in out.requests) - min(r.arrival for r in out.requests)
    assert len(out.requests) / span == pytest.approx(rate, rel=0.1)
    # L = lambda W: the time-average number in the system, swept over events, against rate x mean latency
    events = sorted([(r.arrival, 1) for r in out.requests] + [(r.finish, -1) for r in out.requests])
    area, inside, last = 0.0, 0, events[0][0]
    for t, delta in events:
        area += inside * (t - last)
        inside, last = inside + delta, t
    mean_e2e = sum(r.finish - r.arrival for r in out.requests) / len(out.requests)
    assert area / span == pytest.approx(len(out.requests) / span * mean_e2e, rel=0.02)


def test_a_full_kv_cache_preempts_and_every_request_still_finishes() -> None:
    e = engine(capacity=4 * 600)
    out = closed_loop(e, Workload(500, 100), 8, 32)
    assert out.preemptions > 0
    assert len(out.requests) == 32 and all(math.isfinite(r.finish) for r in out.requests)


def test_queueing_makes_ttft_grow_with_concurrency_under_a_sequence_limit() -> None:
    e = engine(max_seqs=4)
    w = Workload(500, 100)

    def median_ttft(c: int) -> float:
        ttft = sorted(r.first - r.arrival for r in closed_loop(e, w, c, 5 * c).requests)
        return ttft[len(ttft) // 2]

    assert median_ttft(16) > 5 * median_ttft(4)


def test_a_cache_too_small_for_one_speculating_request_is_refused_not_looped() -> None:
    from dataclasses import replace

    from perf.errors import PerfError

    e = replace(engine(capacity=3), accepted_per_step=2.3, computed_per_step=4.0)
    with pytest.raises(PerfError, match="does not fit the KV cache"):
        closed_loop(e, Workload(1, 2), 1, 1)  # 1 + 2.3 tokens after its one decode step


def test_a_loop_runs_without_collection_pauses_and_leaves_the_collector_on() -> None:
    """Thousands of requests used to start collections mid-loop (the slow tail of bench/estimate_speed.py)."""
    started: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    closed, poissonian = engine(max_seqs=256), engine()
    gc.callbacks.append(count)
    try:
        closed_loop(closed, Workload(200, 20), 256, 2000)
        poisson(poissonian, Workload(200, 20), 50.0, 500, seed=1)
    finally:
        gc.callbacks.remove(count)
    assert len(started) <= 2  # at most the one each loop's leftovers start once the collector is back on
    assert gc.isenabled()


def test_pipeline_stages_all_reduce_within_their_own_group_only() -> None:
    """Stages pass activations point to point: tp 1 x pp 2 pays no all-reduce, tp 4 x pp 2 over 8 GPUs pays a
    4-GPU ring over half the layers at a time, and a 16-GPU copy of two 8-GPU stages stays on NVLink."""
    model, gpu = find_model("llama3.1-70b"), find_gpu("H100")
    step = StepInputs(decode_seqs=64, decode_ctx=64 * 2000)
    comm = FEATURES.index("comm")

    def comm_of(tp: int, pp: int) -> float:
        shape = ReplicaShape(tensor_parallel=tp, pipeline_parallel=pp)
        return StepCost(model, gpu, "fp8", "auto", shape).features(step)[comm]

    assert comm_of(1, 2) == 0.0 and comm_of(2, 1) > 0
    assert comm_of(4, 2) == pytest.approx(comm_of(4, 1) / 2)
    assert comm_of(8, 2) == pytest.approx(comm_of(8, 1) / 2)  # not the 16-GPU ring over the inter-node link
