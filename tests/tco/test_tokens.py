"""Cost per million tokens by kind, worked by hand from the handbook's example."""

import pytest

from perf.phases import PhaseSeconds
from tco import TcoInputs, estimate
from tco.inputs import SplitBasis
from tco.token_split import phases_for
from tco.tokens import TokensByKind, token_costs
from ui.params import validate_params

PER_REQUEST = 15 / (588 / 200 * 3600)  # the handbook's 0.0014 CNY per request (A800, 15 CNY/h, 588 tok/s)
HANDBOOK = {"price": "15", "tps": "588", "out_tokens": "200", "in_tokens": "500", "hours": "720"}


def test_the_handbook_request_split_between_prefill_and_decode() -> None:
    costs = token_costs(PER_REQUEST, 500, 200, 0.68)
    assert costs.input_per_million == pytest.approx(1.9274, abs=1e-4)  # 0.0014172 x 0.68 / 500 x 10^6
    assert costs.output_per_million == pytest.approx(2.2676, abs=1e-4)  # 0.0014172 x 0.32 / 200 x 10^6
    assert costs.cached_input_per_million == 0  # a prefix-cache hit skips its prefill
    assert costs.blended_per_million == pytest.approx(2.0246, abs=1e-4)  # 0.0014172 / 700 x 10^6
    # the split spends the whole request, no more, no less: 500 inputs + 200 outputs = one request
    spent = (costs.input_per_million * 500 + costs.output_per_million * 200) / 1e6
    assert spent == pytest.approx(PER_REQUEST)


def test_requests_without_input_put_all_gpu_time_on_output() -> None:
    costs = token_costs(PER_REQUEST, 0, 200, 0.68)
    assert costs.input_per_million is None and costs.cached_input_per_million is None
    assert costs.output_per_million == pytest.approx(PER_REQUEST / 200 * 1e6)


def test_at_the_traffic_idle_headroom_is_paid_for() -> None:
    # 100,000 requests a day, no peak, on one replica that serves 254,016 a day: paid for a whole replica-month
    result = estimate(TcoInputs.model_validate({**HANDBOOK, "traffic": "100000", "peak": "1", "util": "100"}))
    tokens = result.tokens
    assert result.fleet.replicas == 1
    month = 15 * 720  # one A800 for 720 hours
    requests = 100_000 * 30
    assert tokens.idle_factor == pytest.approx(month / requests / PER_REQUEST)
    assert tokens.at_traffic is not None
    assert tokens.at_traffic.blended_per_million == pytest.approx(month / (requests * 700) * 1e6)
    assert tokens.at_traffic.output_per_million == pytest.approx(month * 0.32 / (requests * 200) * 1e6)
    assert tokens.at_traffic.input_per_million == pytest.approx(month * 0.68 / (requests * 500) * 1e6)


def test_the_handbook_headline_stays_what_it_was() -> None:
    cap = estimate(TcoInputs.model_validate(HANDBOOK)).capacity
    assert cap.cost_per_request == pytest.approx(PER_REQUEST)  # about 0.0014 CNY
    assert cap.cost_per_million_output_tokens == pytest.approx(15 / (588 * 3600) * 1e6)  # all GPU time on output


def test_no_traffic_has_no_effective_figure() -> None:
    tokens = estimate(TcoInputs.model_validate({**HANDBOOK, "traffic": "0"})).tokens
    assert tokens.at_traffic is None and tokens.idle_factor is None


ESTIMATED = {**HANDBOOK, "gpu": "H100", "model": "qwen2.5-7b", "engine": "vllm", "quant_method": "bf16"}


def _spent(tokens: TokensByKind, ins: int, cached: float, outs: int) -> float:
    costs = tokens.full_load
    assert costs.input_per_million is not None and costs.cached_input_per_million is not None
    uncached = ins - cached
    return (
        uncached * costs.input_per_million + cached * costs.cached_input_per_million + outs * costs.output_per_million
    ) / 1e6


def test_a_throughput_typed_by_hand_keeps_the_prefill_share() -> None:
    inputs = TcoInputs.model_validate(HANDBOOK)
    assert inputs.split_basis == SplitBasis.SHARE and phases_for(inputs) is None
    tokens = estimate(inputs).tokens
    assert tokens.split.basis == SplitBasis.SHARE and tokens.prefill_share == pytest.approx(0.68)


def test_an_estimated_throughput_is_split_by_the_estimators_prefill_and_decode_times() -> None:
    inputs = TcoInputs.model_validate({**ESTIMATED, "tps_source": "estimate"})
    assert inputs.split_basis == SplitBasis.ESTIMATE
    phases = phases_for(inputs)
    assert isinstance(phases, PhaseSeconds)
    result = estimate(inputs, phases=phases)
    tokens = result.tokens
    assert tokens.split.basis == SplitBasis.ESTIMATE and tokens.split.concurrency == phases.concurrency
    assert tokens.prefill_share == pytest.approx(phases.prefill_s / phases.total_s)
    assert tokens.prefill_share != pytest.approx(0.68)  # not the assumption
    # the parts still spend exactly one request's cost
    assert _spent(tokens, 500, 0, 200) == pytest.approx(result.capacity.cost_per_request)
    assert 0 < (tokens.full_load.cached_input_per_million or 0) < (tokens.full_load.input_per_million or 0)


def test_split_share_in_the_link_keeps_the_prefill_share_for_an_estimate() -> None:
    inputs = TcoInputs.model_validate({**ESTIMATED, "tps_source": "estimate", "split": "share"})
    assert inputs.split_basis == SplitBasis.SHARE and phases_for(inputs) is None
    costs = estimate(inputs).tokens.full_load
    assert costs.input_per_million == pytest.approx(1.9274, abs=1e-4)  # the handbook's figures at 68%


def test_a_probe_runs_rate_is_split_at_the_estimates_operating_point() -> None:
    inputs = TcoInputs.model_validate({**ESTIMATED, "rps": "2.5@9f0c1a2b"})
    assert inputs.split_basis == SplitBasis.ESTIMATE
    assert isinstance(phases_for(inputs), PhaseSeconds)


def test_an_estimated_split_without_an_estimate_says_why() -> None:
    inputs = TcoInputs.model_validate({**HANDBOOK, "gpu": "custom", "split": "estimate"})
    assert phases_for(inputs) == "a custom GPU has no step-time model"


def test_cached_input_is_priced_from_the_estimators_cost_of_a_cached_token() -> None:
    inputs = TcoInputs.model_validate({**ESTIMATED, "tps_source": "estimate", "cached": "50"})
    phases = phases_for(inputs)
    assert isinstance(phases, PhaseSeconds) and phases.cached_tokens == 250
    result = estimate(inputs, phases=phases)
    tokens = result.tokens
    assert tokens.cached_share == 0.5
    assert _spent(tokens, 500, 250, 200) == pytest.approx(result.capacity.cost_per_request)
    cold = estimate(
        inputs.model_copy(update={"cached_pct": 0.0}), phases=phases_for(inputs.model_copy(update={"cached_pct": 0.0}))
    )
    assert tokens.prefill_share < cold.tokens.prefill_share  # half the prompt is no longer computed


def test_an_assumed_share_puts_prefill_on_the_uncached_tokens_only() -> None:
    tokens = estimate(TcoInputs.model_validate({**HANDBOOK, "cached": "50"})).tokens
    assert tokens.full_load.cached_input_per_million == 0
    assert tokens.full_load.input_per_million == pytest.approx(PER_REQUEST * 0.68 / 250 * 1e6)
    assert _spent(tokens, 500, 250, 200) == pytest.approx(PER_REQUEST)


@pytest.mark.parametrize(("params", "field"), [({"cached": "100"}, "cached"), ({"split": "guess"}, "split")])
def test_bad_split_inputs_name_their_parameter(params: dict[str, str], field: str) -> None:
    _inputs, errors, rejected = validate_params(TcoInputs, {**HANDBOOK, **params})
    assert field in rejected and any(field in e for e in errors)
