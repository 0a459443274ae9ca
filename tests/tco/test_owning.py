"""Owned cost per GPU-hour and the two break-even figures, against examples worked by hand."""

import pytest

from tco import TcoInputs
from tco.owning import OwnedHardware, capital_recovery_factor, owned_cost, owned_hardware
from ui.params import to_params, validate_params

# 10,000 per GPU over 5 years at 0%: 2,000 a year. 500 W GPU + 500 W overhead = 1 kW: hosting 100 x 1 x 12 = 1,200;
# power 1 kW x PUE 1.5 x 8,760 h x 0.10 = 1,314; support 1,200. Total 5,714 a year = 0.65228 per hour of 8,760.
HAND = OwnedHardware(
    price_per_gpu=10_000,
    depreciation_years=5,
    interest_pct=0,
    hosting_per_kw_month=100,
    gpu_power_w=500,
    overhead_w_per_gpu=500,
    power_draw_pct=100,
    pue=1.5,
    electricity_per_kwh=0.10,
    support_per_gpu_year=1_200,
    utilization_pct=100,
)


@pytest.mark.parametrize(
    ("interest_pct", "years", "factor"),
    [(0, 5, 0.2), (10, 2, 0.1 * 1.21 / 0.21), (3.5, 5, 0.035 * 1.035**5 / (1.035**5 - 1))],
)
def test_capital_recovery_repays_the_price_with_interest(interest_pct: float, years: float, factor: float) -> None:
    assert capital_recovery_factor(interest_pct, years) == pytest.approx(factor)


def test_owned_gpu_hour_adds_capital_hosting_power_and_support() -> None:
    cost = owned_cost(HAND, rental_per_gpu_hour=2.0, hours_per_month=730)
    assert cost.capital_per_gpu_year == pytest.approx(2_000)
    assert cost.hosting_per_gpu_year == pytest.approx(1_200)
    assert cost.electricity_per_gpu_year == pytest.approx(1_314)
    assert cost.total_per_gpu_year == pytest.approx(5_714)
    assert cost.per_gpu_hour_all_hours == pytest.approx(5_714 / 8_760)
    assert cost.per_used_gpu_hour == pytest.approx(5_714 / 8_760)
    # owning wins once the GPU is used more than 0.65228 / 2.0 of the hours
    assert cost.break_even_utilization == pytest.approx(5_714 / 8_760 / 2.0)
    # rent saved 2.0 x 730 = 1,460 a month, running costs 3,714 / 12 = 309.5: 10,000 / 1,150.5 months
    assert cost.payback_months == pytest.approx(10_000 / 1_150.5)


def test_a_half_used_gpu_costs_twice_per_used_hour_and_pays_back_later() -> None:
    cost = owned_cost(HAND.model_copy(update={"utilization_pct": 50}), rental_per_gpu_hour=2.0, hours_per_month=730)
    assert cost.per_used_gpu_hour == pytest.approx(2 * 5_714 / 8_760)
    assert cost.payback_months == pytest.approx(10_000 / (730 - 309.5))


def test_cheap_rent_never_pays_back() -> None:
    cost = owned_cost(HAND, rental_per_gpu_hour=0.3, hours_per_month=730)
    assert cost.payback_months is None
    assert cost.break_even_utilization > 1


def test_the_a800_starts_from_sourced_defaults_in_yuan() -> None:
    hw, missing = owned_hardware(TcoInputs())  # A800 40GB, CNY at 7.2 per USD
    assert missing == [] and hw is not None
    assert hw.price_per_gpu == pytest.approx(12_000 * 7.2)  # catalog/data/owning.csv, a USD card price
    assert hw.gpu_power_w == 400  # gpus.csv tdp_w
    assert hw.electricity_per_kwh == pytest.approx(0.088 * 7.2)
    assert hw.pue == 1.5 and hw.depreciation_years == 5 and hw.interest_pct == 3.5


def test_a_server_price_is_shared_by_its_gpus_and_overrides_the_gpu_price() -> None:
    inputs = TcoInputs.model_validate({"own_price": "50000", "own_server_price": "800000", "own_server_gpus": "8"})
    hw, _ = owned_hardware(inputs)
    assert hw is not None and hw.price_per_gpu == 100_000


def test_a_gpu_without_a_price_asks_for_one_instead_of_borrowing_another() -> None:
    hw, missing = owned_hardware(TcoInputs.model_validate({"gpu": "custom"}))
    assert hw is None and missing == ["own_price", "gpu_w"]
    hw, missing = owned_hardware(TcoInputs.model_validate({"gpu": "h20-96gb"}))
    assert hw is None and missing == ["own_price"]


def test_owning_inputs_are_url_parameters_and_bad_ones_are_named() -> None:
    model = TcoInputs.model_validate({"own_price": "90000", "pue": "1.3", "own_util": "60", "carbon": "550"})
    assert to_params(model) == {"own_price": "90000", "pue": "1.3", "own_util": "60", "carbon": "550"}
    _model, messages, rejected = validate_params(TcoInputs, {"pue": "0.8"})
    assert rejected == {"pue": "0.8"} and "`pue`" in messages[0] and "1" in messages[0]
