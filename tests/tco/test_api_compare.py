"""Hosted APIs against self-hosting: price per request, month at the traffic, and the break-even volume."""

import math

import pytest

from tco import TcoInputs, estimate
from tco.api_compare import api_cost_per_request, break_even_requests_per_month, compare_apis
from tco.cost import capacity, fleet


def test_cached_input_is_billed_at_its_own_price_and_as_input_without_one() -> None:
    assert api_cost_per_request(1000, 200, 0.5, 1.0, 0.1, 2.0) == pytest.approx((500 * 1.0 + 500 * 0.1 + 400) / 1e6)
    assert api_cost_per_request(1000, 200, 0.5, 1.0, None, 2.0) == pytest.approx((1000 + 400) / 1e6)


def test_break_even_by_hand() -> None:
    # one replica 1,000 a month serves 1 req/s; 250 h a month = 900,000 requests a replica. The API costs 0.002 each.
    # Self-hosting first wins at 500,000 requests, loses again just after a second replica is added (2,000 against
    # 1,800 at 900,000) and wins for good from 1,000,000 (2,000 = 2,000; the third replica comes at 1,800,000: 3,000
    # against 3,600).
    assert break_even_requests_per_month(1000, 1.0, 1.0, 1.0, 250, 0.002) == pytest.approx(1_000_000)
    assert break_even_requests_per_month(1000, 1.0, 1.0, 1.0, 250, 0.01) == pytest.approx(100_000)
    assert break_even_requests_per_month(1000, 1.0, 1.0, 1.0, 250, 0.001) is None  # the API is always cheaper


@pytest.mark.parametrize(("peak", "util", "api"), [(2.0, 0.7, 0.005), (1.0, 0.5, 0.003), (3.0, 0.9, 0.02)])
def test_break_even_matches_the_fleet_sizing_volume_by_volume(peak: float, util: float, api: float) -> None:
    cap = capacity(588, 200, 500, 15, 1, 730)
    found = break_even_requests_per_month(cap.cost_per_replica_month, cap.requests_per_s, util, peak, 730, api)
    assert found is not None

    def self_hosted(requests_per_month: float) -> float:
        per_day = requests_per_month / 730 * 24
        return fleet(cap, per_day, peak, util, 1, 730).fleet_cost_per_month

    for step in range(1, 400):
        volume = found * (1 + step / 40)
        assert self_hosted(volume * (1 + 1e-6)) <= api * volume * (1 + 1e-6) + 1e-6
    assert self_hosted(found * (1 - 1e-6)) > api * found * (1 - 1e-6)  # just before it the API is cheaper


def test_the_72b_against_its_apis_in_yuan() -> None:
    inputs = TcoInputs.model_validate({"model": "qwen2.5-72b", "in_tokens": "1500", "out_tokens": "300"})
    result = estimate(inputs)
    cmp = compare_apis(inputs, result.capacity, result.fleet)
    deepinfra = next(o for o in cmp.options if o.provider == "DeepInfra")
    assert deepinfra.relation == "same"
    assert deepinfra.input_per_million == pytest.approx(0.36 * 7.2)  # USD list price at 7.2 CNY per USD
    assert deepinfra.cost_per_request == pytest.approx((1500 * 0.36 + 300 * 0.40) * 7.2 / 1e6)
    assert deepinfra.cost_per_month == pytest.approx(deepinfra.cost_per_request * result.fleet.requests_per_month)
    assert {o.api_model for o in cmp.options if o.relation == "reference"} == {"gpt-4o-mini", "deepseek-chat"}
    assert [o.relation for o in cmp.options] == sorted((o.relation for o in cmp.options), key=lambda r: r != "same")
    assert cmp.self_hosted_per_month == result.fleet.fleet_cost_per_month
    assert cmp.cheapest_same is not None and cmp.cheapest_same.provider == "DeepInfra"
    assert not math.isnan(cmp.requests_per_month)


def test_the_apis_cached_share_is_the_traffics_unless_given() -> None:
    base = {"model": "qwen2.5-72b", "in_tokens": "1000", "out_tokens": "200"}

    def cheapest(params: dict[str, str]) -> float:
        inputs = TcoInputs.model_validate({**base, **params})
        result = estimate(inputs)
        cmp = compare_apis(inputs, result.capacity, result.fleet)
        with_cache = [o for o in cmp.options if o.cached_input_per_million is not None]
        assert with_cache, "the snapshot has an API with a cached-input price for this model"
        return with_cache[0].cost_per_request

    cold, traffic, given = cheapest({}), cheapest({"cached": "50"}), cheapest({"cached": "50", "api_cached": "0"})
    assert traffic < cold  # half of each prompt billed at the cached price
    assert given == pytest.approx(cold)  # an explicit api_cached wins
