"""Owned hardware per GPU-hour (capital recovery, hosting, power, support) and when owning beats renting."""

from pydantic import BaseModel, ConfigDict

from catalog import find_gpu
from catalog.owning import OwningDefault, OwningKey, owning_default, purchase_price
from catalog.units import PCT, W_PER_KW
from tco.cost import MONTHS_PER_YEAR
from tco.inputs import CUSTOM_GPU, TcoInputs
from tco.money import convert


class OwnedHardware(BaseModel):
    """One owned GPU's costs and power, every amount in the page's currency."""

    model_config = ConfigDict(frozen=True)

    price_per_gpu: float
    depreciation_years: float
    interest_pct: float
    hosting_per_kw_month: float
    gpu_power_w: float
    overhead_w_per_gpu: float
    power_draw_pct: float
    pue: float
    electricity_per_kwh: float
    support_per_gpu_year: float
    utilization_pct: float


class OwnedCost(BaseModel):
    """What one owned GPU costs a year and an hour, beside the rental price, with the two break-even figures."""

    model_config = ConfigDict(frozen=True)

    capital_recovery_factor: float
    capital_per_gpu_year: float
    hosting_per_gpu_year: float
    electricity_per_gpu_year: float
    support_per_gpu_year: float
    total_per_gpu_year: float
    per_gpu_hour_all_hours: float
    per_used_gpu_hour: float
    rental_per_gpu_hour: float
    break_even_utilization: float
    payback_months: float | None


def capital_recovery_factor(interest_pct: float, years: float) -> float:
    """The share of a price paid back each year to repay it with interest over `years`: i(1+i)^n / ((1+i)^n - 1).

    At 0% it is 1/n (straight-line depreciation).
    """
    rate = interest_pct / PCT
    if rate == 0:
        return 1 / years
    growth: float = (1 + rate) ** years
    return rate * growth / (growth - 1)


def owned_cost(hw: OwnedHardware, rental_per_gpu_hour: float, hours_per_month: float) -> OwnedCost:
    """Cost of one owned GPU (NIM TCO sheet / AIPerf TCO notebook method; docs/owning-energy-apis.md)."""
    hours_per_year = hours_per_month * MONTHS_PER_YEAR
    nameplate_kw = (hw.gpu_power_w + hw.overhead_w_per_gpu) / W_PER_KW
    average_kw = (hw.gpu_power_w * hw.power_draw_pct / PCT + hw.overhead_w_per_gpu) / W_PER_KW
    crf = capital_recovery_factor(hw.interest_pct, hw.depreciation_years)
    capital = hw.price_per_gpu * crf
    hosting = hw.hosting_per_kw_month * nameplate_kw * MONTHS_PER_YEAR
    electricity = average_kw * hw.pue * hours_per_year * hw.electricity_per_kwh
    total = capital + hosting + electricity + hw.support_per_gpu_year
    per_hour = total / hours_per_year
    utilization = hw.utilization_pct / PCT
    running_per_month = (hosting + electricity + hw.support_per_gpu_year) / MONTHS_PER_YEAR
    saving_per_month = rental_per_gpu_hour * hours_per_month * utilization - running_per_month
    return OwnedCost(
        capital_recovery_factor=crf,
        capital_per_gpu_year=capital,
        hosting_per_gpu_year=hosting,
        electricity_per_gpu_year=electricity,
        support_per_gpu_year=hw.support_per_gpu_year,
        total_per_gpu_year=total,
        per_gpu_hour_all_hours=per_hour,
        per_used_gpu_hour=per_hour / utilization,
        rental_per_gpu_hour=rental_per_gpu_hour,
        break_even_utilization=per_hour / rental_per_gpu_hour,
        payback_months=hw.price_per_gpu / saving_per_month if saving_per_month > 0 else None,
    )


def _money(row: OwningDefault, inputs: TcoInputs) -> float:
    return convert(row.value, row.currency or inputs.currency, inputs.currency, inputs.cny_per_usd)


def _or_default(value: float | None, key: OwningKey, inputs: TcoInputs) -> float:
    return value if value is not None else _money(owning_default(key), inputs)


def catalog_purchase_price(inputs: TcoInputs) -> OwningDefault | None:
    """The sourced purchase price the GPU of the inputs starts from (None: none found, or a custom GPU)."""
    return None if inputs.gpu == CUSTOM_GPU else purchase_price(inputs.gpu)


def purchase_price_per_gpu(inputs: TcoInputs) -> float | None:
    """Per server / GPUs per server, else per GPU as entered, else the catalog's; None when there is none."""
    if inputs.own_price_per_server is not None:
        return inputs.own_price_per_server / inputs.own_gpus_per_server
    if inputs.own_price_per_gpu is not None:
        return inputs.own_price_per_gpu
    row = catalog_purchase_price(inputs)
    return None if row is None else _money(row, inputs)


def gpu_power_w(inputs: TcoInputs) -> float | None:
    """The GPU's power as entered, else its TDP from the catalog (None for a custom GPU or a part without one)."""
    if inputs.own_gpu_power_w is not None:
        return inputs.own_gpu_power_w
    return None if inputs.gpu == CUSTOM_GPU else find_gpu(inputs.gpu).tdp_w


def owned_hardware(inputs: TcoInputs) -> tuple[OwnedHardware | None, list[str]]:
    """The owned GPU the inputs describe, blanks filled from the catalog; else None and the aliases still missing."""
    price, power = purchase_price_per_gpu(inputs), gpu_power_w(inputs)
    missing = [alias for alias, value in (("own_price", price), ("gpu_w", power)) if value is None]
    if price is None or power is None:
        return None, missing
    return (
        OwnedHardware(
            price_per_gpu=price,
            depreciation_years=inputs.own_depreciation_years,
            interest_pct=inputs.own_interest_pct,
            hosting_per_kw_month=_or_default(inputs.own_hosting_per_kw_month, "hosting_per_kw_month", inputs),
            gpu_power_w=power,
            overhead_w_per_gpu=inputs.own_overhead_w_per_gpu,
            power_draw_pct=inputs.power_draw_pct,
            pue=inputs.pue,
            electricity_per_kwh=electricity_per_kwh(inputs),
            support_per_gpu_year=_or_default(inputs.own_support_per_gpu_year, "support_per_gpu_year", inputs),
            utilization_pct=inputs.own_utilization_pct,
        ),
        [],
    )


def electricity_per_kwh(inputs: TcoInputs) -> float:
    """The electricity price as entered, else the catalog's, in the page's currency."""
    return _or_default(inputs.electricity_per_kwh, "electricity_per_kwh", inputs)
