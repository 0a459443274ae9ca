"""Cost per million tokens by kind, worked by hand from the handbook's example."""

import pytest

from tco import TcoInputs, estimate
from tco.tokens import token_costs

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
