"""Replayed closed loops give the times a fresh simulation gives, and never replay a schedule a cache would change."""

from dataclasses import replace

import numpy as np
import pytest

from catalog import find_gpu, find_model
from perf.coefficients import theta_for
from perf.features import STEP_INPUTS, ReplicaShape, StepCost, StepInputs, step_columns
from perf.replay import replayed_closed_loop
from perf.simulate import Engine, Workload, closed_loop, traced_closed_loop

THETA = theta_for("vllm")[0]


def engine(gpu: str, model: str = "llama3.1-8b", quant: str = "bf16", capacity: int = 10**7) -> Engine:
    shape = ReplicaShape(tensor_parallel=1)
    cost = StepCost(find_model(model), find_gpu(gpu), quant, "auto", shape)
    return Engine(cost=cost, theta=THETA, max_seqs=64, budget_tokens=2048, kv_capacity_tokens=capacity)


def direct(e: Engine, w: Workload, c: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    out = closed_loop(e, w, c, n)
    arrival, first, finish = out.times_s()
    return arrival, first, finish, out.span_s, out.preemptions


@pytest.mark.parametrize(
    ("workload", "concurrency"), [(Workload(1000, 200), 1), (Workload(3000, 50), 24), (Workload(200, 300, 100), 96)]
)
def test_a_replay_on_another_gpu_gives_what_simulating_it_gives(workload: Workload, concurrency: int) -> None:
    requests = 2 * concurrency + 5
    replayed_closed_loop(engine("h100"), workload, concurrency, requests)  # records the schedule
    for gpu, model, quant in (
        ("a100", "llama3.1-8b", "bf16"),
        ("l40s", "qwen2.5-7b", "fp8"),
        ("h20", "qwen3-8b", "awq"),
    ):
        e = engine(gpu, model, quant)
        got = replayed_closed_loop(e, workload, concurrency, requests)
        arrival, first, finish, span, preemptions = direct(e, workload, concurrency, requests)
        assert got.first_s == pytest.approx(first, rel=1e-9)
        assert got.finish_s == pytest.approx(finish, rel=1e-9)
        assert got.arrival_s == pytest.approx(arrival, rel=1e-9)
        assert got.span_s == pytest.approx(span, rel=1e-9) and got.preemptions == preemptions


def test_a_cache_small_enough_to_change_the_schedule_is_simulated_not_replayed() -> None:
    w = Workload(900, 300)
    big = engine("h100")
    replayed_closed_loop(big, w, 32, 64)
    small = replace(big, kv_capacity_tokens=8 * 1200)
    got = replayed_closed_loop(small, w, 32, 64)
    _, first, finish, span, preemptions = direct(small, w, 32, 64)
    assert preemptions > 0 and got.preemptions == preemptions
    assert got.finish_s == pytest.approx(finish, rel=1e-9) and got.first_s == pytest.approx(first, rel=1e-9)
    assert got.span_s == pytest.approx(span, rel=1e-9)


def _drawn_steps(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Random steps, one column per step input by name (a new input must be drawn here before anything runs)."""
    draws = {
        "decode_seqs": rng.integers(0, 300, n),
        "decode_ctx": rng.uniform(0, 5e5, n),
        "prefill_tokens": rng.integers(0, 8192, n),
        "prefill_pairs": rng.uniform(0, 1e7, n),
        "prefill_ctx": rng.uniform(0, 1e4, n),
        "prefill_seqs": rng.integers(0, 8, n),
        "tokens_per_decode": rng.choice([1.0, 4.0], n),
    }
    assert tuple(draws) == STEP_INPUTS, "a step input was added or renamed: draw it here"
    return {name: column.astype(float) for name, column in draws.items()}


def test_the_feature_matrix_is_features_row_by_row() -> None:
    rng = np.random.default_rng(3)
    for model in ("gemma-3-27b", "deepseek-v3", "llama3.1-8b"):
        cost = StepCost(find_model(model), find_gpu("h200"), "fp8", "auto", ReplicaShape(tensor_parallel=8))
        columns = _drawn_steps(rng, 50)
        matrix = cost.features_matrix(StepInputs(**columns))
        for i, got in enumerate(matrix):
            step = StepInputs(**{name: float(column[i]) for name, column in columns.items()})
            assert got == pytest.approx(np.array(cost.features(step)), rel=1e-12, abs=1e-300)


def test_every_step_input_changes_a_feature_and_a_trace_keeps_every_one_by_name() -> None:
    """A step input the formula ignores, or that a trace drops or reorders, would replay another schedule's cost."""
    cost = StepCost(find_model("llama3.1-8b"), find_gpu("h100"), "bf16", "auto", ReplicaShape())
    base = StepInputs(
        decode_seqs=8, decode_ctx=8000, prefill_tokens=512, prefill_pairs=3e5, prefill_ctx=100, prefill_seqs=1
    )
    for name in STEP_INPUTS:
        moved = base._replace(**{name: getattr(base, name) * 2 + 1})
        assert cost.features(moved) != cost.features(base), f"step input {name} changes no feature"
    _, trace = traced_closed_loop(engine("h100"), Workload(3000, 50), 24, 53)
    rows = np.asarray(trace.steps, dtype=np.float64)
    assert rows.shape == (len(trace.repeats), len(STEP_INPUTS))
    named = step_columns(rows)
    for name in STEP_INPUTS:
        assert list(getattr(named, name)) == [getattr(step, name) for step in trace.steps]
    with pytest.raises(ValueError, match="one column per step input"):
        step_columns(rows[:, :-1])
