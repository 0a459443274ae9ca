"""Estimated energy: joules per output token and kWh per month from power x time at the operating point."""

from pydantic import BaseModel, ConfigDict

from catalog.units import J_PER_KWH, PCT, TOKENS_PER_MILLION, W_PER_KW
from tco.inputs import TcoInputs
from tco.owning import electricity_per_kwh, gpu_power_w

G_PER_KG = 1000.0


class EnergyEstimate(BaseModel):
    """Energy of one replica at full load and of the fleet for a month; an estimate from rated power, not a meter."""

    model_config = ConfigDict(frozen=True)

    wall_w_per_replica: float
    joules_per_output_token: float
    kwh_per_million_output_tokens: float
    energy_cost_per_million_output_tokens: float
    kg_co2e_per_million_output_tokens: float | None
    fleet_kwh_per_month: float
    fleet_energy_cost_per_month: float
    fleet_kg_co2e_per_month: float | None


def wall_watts(gpus: int, gpu_w: float, overhead_w_per_gpu: float, draw_pct: float, pue: float) -> float:
    """Power at the wall of `gpus` GPUs: (GPU power x draw + server overhead) x PUE, per GPU."""
    return gpus * (gpu_w * draw_pct / PCT + overhead_w_per_gpu) * pue


def energy(
    wall_w_per_replica: float,
    output_tok_s_per_replica: float,
    fleet_replicas: int,
    hours_per_month: float,
    price_per_kwh: float,
    carbon_g_per_kwh: float | None,
) -> EnergyEstimate:
    """Joules per output token = wall power / output tokens/s; the fleet draws its power every hour of the month."""
    joules = wall_w_per_replica / output_tok_s_per_replica
    kwh_per_million = joules * TOKENS_PER_MILLION / J_PER_KWH
    fleet_kwh = fleet_replicas * wall_w_per_replica * hours_per_month / W_PER_KW
    return EnergyEstimate(
        wall_w_per_replica=wall_w_per_replica,
        joules_per_output_token=joules,
        kwh_per_million_output_tokens=kwh_per_million,
        energy_cost_per_million_output_tokens=kwh_per_million * price_per_kwh,
        kg_co2e_per_million_output_tokens=None
        if carbon_g_per_kwh is None
        else kwh_per_million * carbon_g_per_kwh / G_PER_KG,
        fleet_kwh_per_month=fleet_kwh,
        fleet_energy_cost_per_month=fleet_kwh * price_per_kwh,
        fleet_kg_co2e_per_month=None if carbon_g_per_kwh is None else fleet_kwh * carbon_g_per_kwh / G_PER_KG,
    )


def energy_of(inputs: TcoInputs, fleet_replicas: int) -> EnergyEstimate | None:
    """The estimate for the page's inputs (None when the GPU's power is unknown: a custom GPU without `gpu_w`)."""
    power = gpu_power_w(inputs)
    if power is None:
        return None
    wall = wall_watts(inputs.gpus_per_replica, power, inputs.own_overhead_w_per_gpu, inputs.power_draw_pct, inputs.pue)
    return energy(
        wall,
        inputs.output_tok_s_per_replica,
        fleet_replicas,
        inputs.hours_per_month,
        electricity_per_kwh(inputs),
        inputs.carbon_g_per_kwh,
    )
