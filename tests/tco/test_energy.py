"""Estimated energy per output token and per month, against examples worked by hand."""

import pytest

from tco import TcoInputs, estimate
from tco.energy import energy, energy_of, wall_watts


def test_wall_power_is_gpu_draw_plus_overhead_times_pue() -> None:
    assert wall_watts(2, 400, 100, 50, 1.2) == pytest.approx(2 * (200 + 100) * 1.2)


def test_joules_kwh_cost_and_carbon_per_million_output_tokens() -> None:
    est = energy(720, 600, 3, 730, 0.5, 500)
    assert est.joules_per_output_token == pytest.approx(1.2)  # 720 W / 600 tok/s
    assert est.kwh_per_million_output_tokens == pytest.approx(1.2e6 / 3.6e6)
    assert est.energy_cost_per_million_output_tokens == pytest.approx(0.5 / 3)
    assert est.kg_co2e_per_million_output_tokens == pytest.approx(500 / 3 / 1000)
    assert est.fleet_kwh_per_month == pytest.approx(3 * 720 * 730 / 1000)
    assert est.fleet_energy_cost_per_month == pytest.approx(1576.8 * 0.5)
    assert est.fleet_kg_co2e_per_month == pytest.approx(1576.8 * 0.5)


def test_without_a_carbon_intensity_there_is_no_carbon_figure() -> None:
    est = energy(720, 600, 3, 730, 0.5, None)
    assert est.kg_co2e_per_million_output_tokens is None and est.fleet_kg_co2e_per_month is None


def test_the_handbook_a800_at_588_tok_s() -> None:
    inputs = TcoInputs()
    est = energy_of(inputs, estimate(inputs).fleet.replicas)
    assert est is not None
    # (400 W TDP + 412.5 W overhead) x PUE 1.5 = 1,218.75 W at the wall, over 588 output tokens/s
    assert est.joules_per_output_token == pytest.approx(1218.75 / 588)


def test_a_custom_gpu_needs_its_power() -> None:
    assert energy_of(TcoInputs.model_validate({"gpu": "custom"}), 1) is None
    est = energy_of(TcoInputs.model_validate({"gpu": "custom", "gpu_w": "300", "overhead_w": "0", "pue": "1"}), 1)
    assert est is not None and est.joules_per_output_token == pytest.approx(300 / 588)
