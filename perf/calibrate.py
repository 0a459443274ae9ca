"""Correcting an estimate with measured runs of the same configuration: a scale on step time, a band from residuals."""

import math
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from perf.hardware import model_facts
from perf.result import Calibration, LevelEstimate, MeasuredLevel


class Correction(BaseModel):
    """Measured / estimated ratios that calibrate one configuration, and the residual spread they leave."""

    model_config = ConfigDict(frozen=True)

    step_scale: float  # multiplies every step's time (from TPOT, else throughput)
    ttft_scale: float  # multiplies reported TTFT after the step scale
    low_ratio: float
    high_ratio: float
    run_ids: tuple[str, ...]
    levels: int
    ttft_low_ratio: float = 1.0  # the measured TTFTs' residual spread (ttft_levels of them)
    ttft_high_ratio: float = 1.0
    ttft_levels: int = 0


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 1.0


def correction(
    calibrations: Sequence[Calibration], level_for: Callable[[MeasuredLevel], LevelEstimate | None]
) -> Correction | None:
    """Scales fitted on the calibrations' levels (level_for estimates a measured level uncalibrated)."""
    step_ratios, ttft_ratios, run_ids = [], [], []
    for calibration in calibrations:
        used = False
        for measured in calibration.levels:
            estimated = level_for(measured)
            if estimated is None:
                continue
            if measured.tpot_p50_ms and estimated.tpot_ms.p50:
                step_ratios.append(measured.tpot_p50_ms / estimated.tpot_ms.p50)
            elif measured.output_tok_s and estimated.output_tok_s:
                step_ratios.append(estimated.output_tok_s / measured.output_tok_s)
            else:
                continue
            used = True
            if measured.ttft_p50_ms and estimated.ttft_ms.p50:
                ttft_ratios.append(measured.ttft_p50_ms / estimated.ttft_ms.p50)
        if used:
            run_ids.append(calibration.run_id)
    if not step_ratios:
        return None
    scale = _geomean(step_ratios)
    residuals = [r / scale for r in step_ratios]  # what one scale leaves unexplained, level by level
    ttft_scale = _geomean(ttft_ratios)
    ttft_residuals = [r / ttft_scale for r in ttft_ratios]
    return Correction(
        step_scale=scale,
        ttft_scale=ttft_scale / scale if ttft_ratios else 1.0,
        low_ratio=_spread(residuals, min),
        high_ratio=_spread(residuals, max),
        run_ids=tuple(run_ids),
        levels=len(step_ratios),
        ttft_low_ratio=_spread(ttft_residuals, min) if ttft_ratios else 1.0,
        ttft_high_ratio=_spread(ttft_residuals, max) if ttft_ratios else 1.0,
        ttft_levels=len(ttft_ratios),
    )


def _spread(residuals: Sequence[float], side: Callable[[Sequence[float]], float]) -> float:
    """The low (side=min) or high (side=max) end of a calibrated band: the residuals, never within the floor."""
    floor = model_facts()["band"]["calibrated_floor"]
    assert isinstance(floor, int | float)
    edge = side([1 / r for r in residuals])
    return round(min(edge, 1 - floor) if side is min else max(edge, 1 + floor), 4)
