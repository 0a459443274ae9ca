"""Every number of the handbook's TCO arithmetic (section 2.4 and the Q5 chain), reproduced by the cost model."""

import pytest

from tco import TcoInputs, capacity, estimate, lever_chain

HANDBOOK_LINK = {"price": "15", "currency": "CNY", "tps": "588", "out_tokens": "200", "hours": "720"}


@pytest.fixture
def handbook() -> TcoInputs:
    return TcoInputs.model_validate(HANDBOOK_LINK)


@pytest.mark.parametrize(
    ("figure", "expected", "tolerance"),
    [
        ("seconds_of_output_per_request", 0.34, 0.005),  # "200 tokens -> ~0.34 s of output"
        ("requests_per_s", 2.9, 0.05),  # "~2.9 req/s per card"
        ("requests_per_day", 254_016, 1),  # "~250K req/day (24x7)"; the "about 254K"
        ("cost_per_replica_month", 10_800, 1e-6),  # "15 CNY/h -> 10,800 CNY/month"
        ("cost_per_request", 0.0014, 0.00005),  # "about 0.0014 CNY per request"
    ],
)
def test_section_2_4_single_card(handbook: TcoInputs, figure: str, expected: float, tolerance: float) -> None:
    result = estimate(handbook).capacity
    assert getattr(result, figure) == pytest.approx(expected, abs=tolerance)


def test_cost_per_million_tokens_follow_from_the_hourly_price(handbook: TcoInputs) -> None:
    cap = estimate(handbook).capacity
    # 15 CNY per hour buys 588 * 3600 output tokens.
    assert cap.cost_per_million_output_tokens == pytest.approx(15 / (588 * 3600) * 1e6)
    per_request_tokens = handbook.in_tokens_per_request + 200
    assert cap.cost_per_million_total_tokens == pytest.approx(cap.cost_per_request / per_request_tokens * 1e6)
    assert cap.cost_per_replica_year == pytest.approx(10_800 * 12)


@pytest.mark.parametrize(
    ("step", "handbook_cost_per_request"),
    [("quant", 0.0011), ("prefix", 0.0005), ("spot", 0.0002)],
)
def test_q5_chain_with_default_levers(handbook: TcoInputs, step: str, handbook_cost_per_request: float) -> None:
    """0.0014 -> AWQ +30% -> 0.0011 -> prefix caching at 80% reuse -> 0.0005 -> spot GPUs -> 0.0002 (4 decimals)."""
    steps = {s.key: s for s in lever_chain(handbook).steps}
    assert steps[step].enabled
    assert round(steps[step].cost_per_request_after, 4) == handbook_cost_per_request


def test_q5_chain_baseline_and_end(handbook: TcoInputs) -> None:
    chain = lever_chain(handbook)
    assert round(chain.baseline.cost_per_request, 4) == 0.0014
    assert round(chain.optimized.cost_per_request, 4) == 0.0002
    assert [s.key for s in chain.enabled_steps] == ["quant", "prefix", "spot"]


def test_capacity_is_linear_in_price_and_gpus() -> None:
    one = capacity(588, 200, 0, 15, 1, 720)
    two = capacity(588, 200, 0, 15, 2, 720)
    assert two.cost_per_request == pytest.approx(2 * one.cost_per_request)
    assert two.output_tok_s_per_gpu == pytest.approx(294)


def test_concurrency_speedup_and_transformers_baseline_are_in_the_catalog() -> None:
    from catalog import load_handbook

    seed = load_handbook().seed_benchmark
    assert (seed.output_tok_s, seed.tpot_ms, seed.speedup_vs_concurrency_1) == (588, 24, 12.6)
    assert seed.output_tok_s / seed.transformers_generate_tok_s > 19  # 30 tok/s -> 588 tok/s
