"""Bands from held-out error: measured / estimated at the 10th and 90th percentiles, per metric and per key.

A band is quoted for the most specific key (the engine on this GPU architecture, the engine, every engine), its
quantiles shrunk towards the wider keys' by how few held-out sources it rests on.
Coverage is checked the way a user meets the band: each source
in turn is left out of the band's quantiles too, and its measurements are counted inside or outside.
"""

import math
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from catalog import find_gpu
from perf.fitset import Point
from perf.hardware import model_facts
from perf.validate import METRICS, Prediction

POOLED_KEY = "all"
NEW_ARCH = "new-architecture"  # bands of GPUs whose architecture the fit never saw (held out by architecture)


class BandStats(BaseModel):
    """Measured / predicted over held-out points, at the band's percentiles."""

    model_config = ConfigDict(frozen=True)

    low_ratio: float
    high_ratio: float
    groups: int  # held-out units (sources, or architectures) behind it
    points: int


def _band_fact(key: str) -> float:
    value = model_facts()["band"][key]
    assert isinstance(value, int | float)
    return float(value)


def band_key(*parts: str) -> str:
    """'metric|engine|arch' and shorter: the parts joined."""
    return "|".join(parts)


def point_keys(point: Point) -> tuple[str, ...]:
    """The keys a point's error counts under, most specific first (engine on its architecture, engine, all)."""
    arch = find_gpu(point.gpu).arch
    return (band_key(point.engine, arch), point.engine, POOLED_KEY)


def weighted_percentiles(values: Sequence[float], weights: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Percentiles of `values` where each value counts `weights` times (midpoint interpolation)."""
    order = np.argsort(values)
    v = np.asarray(values, dtype=float)[order]
    w = np.asarray(weights, dtype=float)[order]
    cum = (np.cumsum(w) - w / 2) / w.sum()
    return [float(np.interp(q / 100, cum, v)) for q in qs]


def stats(ratios: Sequence[float], units: Sequence[str]) -> BandStats | None:
    """The band of these ratios, every unit (source) weighing the same however many points it has (None: no ratio).

    Weighing by unit is what a user meets: a new benchmark is one new source, and a source with thousands of points
    must not decide the band alone.
    """
    pairs = [(r, u) for r, u in zip(ratios, units, strict=True) if math.isfinite(r) and r > 0]
    if not pairs:
        return None
    per_unit: dict[str, int] = {}
    for _, u in pairs:
        per_unit[u] = per_unit.get(u, 0) + 1
    low, high = weighted_percentiles(
        [r for r, _ in pairs],
        [per_unit[u] ** -_band_fact("unit_weight_power") for _, u in pairs],
        [_band_fact("low_percentile"), _band_fact("high_percentile")],
    )
    return BandStats(low_ratio=round(low, 4), high_ratio=round(high, 4), groups=len(per_unit), points=len(pairs))


def metric_bands(
    predictions: Sequence[Prediction],
    unit: Callable[[Point], str],
    keys: Callable[[Point], tuple[str, ...]] = point_keys,
    prefix: str = "",
) -> dict[str, BandStats]:
    """Bands per 'metric|key' (with `prefix|` before the key) over held-out predictions."""
    keyed: dict[str, list[Prediction]] = {}
    for p in predictions:
        for key in keys(p.row.point):
            keyed.setdefault(band_key(prefix, key) if prefix else key, []).append(p)
    out: dict[str, BandStats] = {}
    for key, preds in sorted(keyed.items()):
        for metric in METRICS:
            band = stats([p.ratio(metric) for p in preds], [unit(p.row.point) for p in preds])
            if band is not None:
                out[band_key(metric, key)] = band
    return out


def choose(bands: dict[str, BandStats], metric: str, keys: Sequence[str]) -> tuple[str, BandStats]:
    """The band of the most specific key, shrunk towards its parents' by how few held-out sources it rests on.

    From the last (widest) key with a band to the first, each key's ends are averaged with its parent's in log
    space, weighing the key's sources against `shrink_sources`: a key of 1 source moves the pooled band a little,
    one of many sources nearly decides it. Every quantile comes from held-out residuals of other sources.
    """
    found = [(key, band) for key in keys if (band := bands.get(band_key(metric, key))) is not None]
    if not found:
        raise KeyError(f"no band for {metric} under {', '.join(keys)}")
    widest = found[-1][1]
    low, high = math.log(widest.low_ratio), math.log(widest.high_ratio)
    groups, points = widest.groups, widest.points
    shrink = _band_fact("shrink_sources")
    for _, band in reversed(found[:-1]):
        weight = band.groups / (band.groups + shrink)
        low = weight * math.log(band.low_ratio) + (1 - weight) * low
        high = weight * math.log(band.high_ratio) + (1 - weight) * high
        groups, points = band.groups, band.points
    shrunk = BandStats(
        low_ratio=round(math.exp(low), 4), high_ratio=round(math.exp(high), 4), groups=groups, points=points
    )
    return found[0][0], shrunk


def coverage(predictions: Sequence[Prediction], unit: Callable[[Point], str]) -> dict[int, dict[str, bool]]:
    """For each prediction (by index): whether its measurement fell inside the band quoted without its unit."""
    units = sorted({unit(p.row.point) for p in predictions})
    out: dict[int, dict[str, bool]] = {}
    for held in units:
        rest = [p for p in predictions if unit(p.row.point) != held]
        bands = metric_bands(rest, unit)
        for i, p in enumerate(predictions):
            if unit(p.row.point) != held:
                continue
            inside: dict[str, bool] = {}
            for metric in METRICS:
                ratio = p.ratio(metric)
                if not math.isfinite(ratio):
                    continue
                try:
                    _, band = choose(bands, metric, point_keys(p.row.point))
                except KeyError:
                    continue
                inside[metric] = band.low_ratio <= ratio <= band.high_ratio
            out[i] = inside
    return out
