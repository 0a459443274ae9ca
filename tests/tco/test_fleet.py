"""Fleet sizing: replicas for the peak at the target utilization, idle capacity priced in."""

import math

import pytest

from tco import TcoInputs, estimate


def inputs(**params: str) -> TcoInputs:
    base = {"price": "15", "tps": "588", "out_tokens": "200", "hours": "720"}
    return TcoInputs.model_validate({**base, **params})


@pytest.mark.parametrize(
    ("traffic", "peak", "util", "replicas"),
    [
        (254_016, 1, 100, 1),  # exactly one card's day at 100%: no rounding up past it
        (254_017, 1, 100, 2),
        (254_016, 2, 100, 2),
        (1_000_000, 2, 70, 12),  # 23.15 peak req/s / (2.94 * 0.7) = 11.25 -> 12
        (0, 2, 70, 0),
    ],
)
def test_replicas_at_peak(traffic: int, peak: float, util: float, replicas: int) -> None:
    fleet = estimate(inputs(traffic=str(traffic), peak=str(peak), util=str(util))).fleet
    assert fleet.replicas == replicas


def test_gpus_fleet_cost_and_utilization() -> None:
    result = estimate(inputs(traffic="1000000", peak="2", util="70", gpus="2", tps="1176"))
    fleet = result.fleet
    # 2 GPUs per replica at 1176 tok/s is the same 2.94 req/s per GPU: 12 replicas, 24 GPUs.
    assert (fleet.replicas, fleet.gpus) == (6, 12)
    assert fleet.fleet_cost_per_month == pytest.approx(6 * 2 * 15 * 720)
    assert fleet.fleet_cost_per_year == pytest.approx(fleet.fleet_cost_per_month * 12)
    average = 1_000_000 / 86_400
    assert fleet.utilization_at_average == pytest.approx(average / (6 * 5.88))
    requests_per_month = 1_000_000 * 720 / 24
    assert fleet.effective_cost_per_request == pytest.approx(fleet.fleet_cost_per_month / requests_per_month)


def test_effective_cost_is_full_load_cost_over_utilization() -> None:
    result = estimate(inputs(traffic="500000", peak="1.5", util="80"))
    fleet, cap = result.fleet, result.capacity
    assert fleet.effective_cost_per_request == pytest.approx(cap.cost_per_request / fleet.utilization_at_average)
    assert fleet.effective_cost_per_request > cap.cost_per_request


def test_zero_traffic_has_no_fleet_and_no_division_by_zero() -> None:
    fleet = estimate(inputs(traffic="0")).fleet
    assert fleet.replicas == 0 and fleet.fleet_cost_per_month == 0
    assert fleet.utilization_at_average is None and fleet.effective_cost_per_request is None


@pytest.mark.parametrize("tps", ["0.01", "1e8"])
def test_extreme_but_valid_values_stay_finite(tps: str) -> None:
    result = estimate(inputs(tps=tps, traffic="1e13", peak="1000", util="0.1", out_tokens="10000000"))
    assert math.isfinite(result.capacity.cost_per_request)
    assert result.fleet.replicas >= 1
