"""GPU power from a DCGM exporter: its samples, the exposition parser and the energy a run measured."""

import math
from collections.abc import Sequence
from datetime import datetime
from itertools import pairwise
from typing import Literal

from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, ConfigDict, Field

from catalog.units import J_PER_KWH

POWER_METRIC = "DCGM_FI_DEV_POWER_USAGE"  # gauge, W
ENERGY_METRIC = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # counter, mJ since the driver loaded
MJ_PER_J = 1000.0  # millijoules per joule
EnergySource = Literal["energy_counter", "power_integral"]


class PowerSample(BaseModel):
    """One GPU's reading at one scrape, or a failed scrape (gpu empty, error set); None for what was not read."""

    model_config = ConfigDict(frozen=True)

    at: datetime = Field(description="when the scrape answered (UTC)")
    gpu: str = Field(description="the exporter's gpu label (else its UUID); empty for a failed scrape")
    power_w: float | None = Field(default=None, description="DCGM_FI_DEV_POWER_USAGE, W")
    energy_mj: float | None = Field(default=None, description="DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ")
    error: str | None = Field(default=None, description="why the scrape failed")

    @property
    def ok(self) -> bool:
        """True for a GPU's reading, False for a failed scrape."""
        return self.error is None


class MeasuredEnergy(BaseModel):
    """The energy the GPUs used over the run's measured window (first level's start to last level's end)."""

    model_config = ConfigDict(frozen=True)

    source: EnergySource = Field(description="the energy counter's increase, else the integral of the power")
    energy_j: float
    window_s: float
    gpus: int
    output_tokens: int = Field(description="output tokens of the requests that succeeded in the window")
    j_per_output_token: float | None = None
    kwh: float
    mean_power_w: float | None = Field(default=None, description="energy / window, all GPUs together")
    scrapes: int = Field(description="scrapes that answered with a reading")
    failed_scrapes: int


def parse_dcgm(text: str) -> dict[str, tuple[float | None, float | None]]:
    """Per GPU (its gpu label, else its UUID): (power W, energy counter mJ); ValueError for a malformed exposition.

    A GPU split into MIG instances repeats its device's values once per instance: the first is kept.
    """
    readings: dict[str, list[float | None]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name.removesuffix("_total")  # the parser names a typed counter's samples <name>_total
            if name not in (POWER_METRIC, ENERGY_METRIC) or math.isnan(sample.value):
                continue
            gpu = sample.labels.get("gpu") or sample.labels.get("UUID") or "0"
            slot = 0 if name == POWER_METRIC else 1
            reading = readings.setdefault(gpu, [None, None])
            if reading[slot] is None:
                reading[slot] = float(sample.value)
    return {gpu: (power, energy) for gpu, (power, energy) in readings.items()}


def _cumulative_j(points: Sequence[PowerSample], counter: bool) -> list[tuple[float, float]]:
    """(time s, energy J since the first point) of one GPU: the counter's increases, else the trapezoid of power."""
    out: list[tuple[float, float]] = []
    total = 0.0
    for index, now in enumerate(points):
        if index:
            before = points[index - 1]
            if counter:
                step = ((now.energy_mj or 0.0) - (before.energy_mj or 0.0)) / MJ_PER_J
                total += max(0.0, step)  # a reset counter adds nothing for that step
            else:
                gap_s = (now.at - before.at).total_seconds()
                total += gap_s * ((now.power_w or 0.0) + (before.power_w or 0.0)) / 2
        out.append((now.at.timestamp(), total))
    return out


def _at(series: list[tuple[float, float]], t: float) -> float:
    """The cumulative energy at t, linear between points, held flat beyond the first and the last."""
    if t <= series[0][0]:
        return series[0][1]
    for (t0, e0), (t1, e1) in pairwise(series):
        if t <= t1:
            return e0 if t1 == t0 else e0 + (e1 - e0) * (t - t0) / (t1 - t0)
    return series[-1][1]


def measured_energy(
    samples: Sequence[PowerSample], start: datetime | None, end: datetime | None, output_tokens: int
) -> MeasuredEnergy | None:
    """The GPUs' energy over [start, end], summed over GPUs; None without a window or two readings of a GPU.

    The energy counter is used when every GPU reported it at each scrape, else the power is integrated.
    """
    if start is None or end is None or end <= start:
        return None
    readings = [s for s in samples if s.ok]
    by_gpu: dict[str, list[PowerSample]] = {}
    for sample in sorted(readings, key=lambda s: s.at):
        by_gpu.setdefault(sample.gpu, []).append(sample)
    counter = all(s.energy_mj is not None for s in readings)
    kept = {gpu: [s for s in pts if (s.energy_mj if counter else s.power_w) is not None] for gpu, pts in by_gpu.items()}
    series = {gpu: points for gpu, points in kept.items() if len(points) >= 2}
    if not series:
        return None
    energy_j = 0.0
    for points in series.values():
        cumulative = _cumulative_j(points, counter)
        energy_j += _at(cumulative, end.timestamp()) - _at(cumulative, start.timestamp())
    window_s = (end - start).total_seconds()
    return MeasuredEnergy(
        source="energy_counter" if counter else "power_integral",
        energy_j=energy_j,
        window_s=window_s,
        gpus=len(series),
        output_tokens=output_tokens,
        j_per_output_token=energy_j / output_tokens if output_tokens > 0 else None,
        kwh=energy_j / J_PER_KWH,
        mean_power_w=energy_j / window_s,
        scrapes=len({s.at for s in readings}),
        failed_scrapes=sum(1 for s in samples if not s.ok),
    )


def energy_text(energy: MeasuredEnergy | None, failed_reads: int) -> str:
    """The measured energy in one line for the command line (English, as the CLI's other lines)."""
    if energy is None:
        return f"GPU energy: not measured (fewer than two readings of a GPU in the levels; {failed_reads} failed reads)"
    per_token_j = energy.j_per_output_token
    per_token = "—" if per_token_j is None else f"{three_digits(per_token_j)} J/output token"
    source = "energy counter" if energy.source == "energy_counter" else "power integral"
    return (
        f"GPU energy: {per_token}, {energy_amount(energy.energy_j)} over {energy.window_s:.1f} s, "
        f"mean {energy.mean_power_w:.0f} W "
        f"({source}, {energy.gpus} GPUs, {energy.scrapes} reads, {failed_reads} failed)"
    )


def three_digits(value: float) -> str:
    """A figure to three significant digits, never in e-notation (0.000123, 0.674, 12.3, 1,230)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    rounded = float(f"{value:.3g}")
    decimals = max(0, 2 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:,.{decimals}f}"


def energy_amount(joules: float) -> str:
    """An energy in the unit that reads best: J below a watt-hour, Wh below a kilowatt-hour, else kWh."""
    if abs(joules) < 3600:
        return f"{three_digits(joules)} J"
    if abs(joules) < J_PER_KWH:
        return f"{three_digits(joules / 3600)} Wh"
    return f"{three_digits(joules / J_PER_KWH)} kWh"
