"""Bands from held-out error: measured / estimated at the 10th and 90th percentiles, per metric and per key.

A band is quoted for the most specific key (the engine on this GPU architecture, the engine, every engine), its
quantiles shrunk towards the wider keys' by how few held-out sources it rests on, then widened (or narrowed) in log
space about its centre by a factor per metric, engine and dense/MoE: the factor that puts 8 in 10 measurements of
sources the band was quoted without inside it, found on folds of sources.
Coverage is checked the way a user meets the band: each source in turn is left out of the band's quantiles and of
its widening factors too, and its measurements are counted inside or outside.
"""

import math
from collections.abc import Callable, Sequence
from functools import cache

import numpy as np
from pydantic import BaseModel, ConfigDict

from catalog import find_gpu, find_model
from perf.fitset import Point
from perf.hardware import model_facts
from perf.quantiles import weighted_percentiles
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
    return _keys(point.engine, point.gpu)


@cache
def _keys(engine: str, gpu: str) -> tuple[str, ...]:
    return (band_key(engine, find_gpu(gpu).arch), engine, POOLED_KEY)


@cache
def _is_moe(model: str) -> bool:
    return find_model(model).is_moe


def widening_key(metric: str, engine: str, moe: bool) -> str:
    """'metric|engine|moe' or 'metric|engine|dense': what one widening factor answers for."""
    return band_key(metric, engine, "moe" if moe else "dense")


def widening_for(factors: dict[str, float], metric: str, engine: str, moe: bool) -> float:
    """The engine's widening factor, or every engine's for an engine without held-out sources (1 without either)."""
    own = factors.get(widening_key(metric, engine, moe))
    return own if own is not None else factors.get(widening_key(metric, POOLED_KEY, moe), 1.0)


def widened(low: float, high: float, factor: float) -> tuple[float, float]:
    """A band's ends moved `factor` times as far from its centre in log space (below 1: nearer)."""
    centre = math.sqrt(low * high)
    return centre * (low / centre) ** factor, centre * (high / centre) ** factor


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


def _quoted(bands: dict[str, BandStats], metric: str, point: Point) -> tuple[float, float] | None:
    """The shrunk band quoted for a point, before widening (None without one)."""
    try:
        _, band = choose(bands, metric, point_keys(point))
    except KeyError:
        return None
    return band.low_ratio, band.high_ratio


def _least_factor(rows: Sequence[tuple[float, float, float]]) -> float:
    """The least factor on the grid that puts `calibration_target` of these (log ratio, log low, log high) inside."""
    grid = np.arange(_band_fact("widening_min"), _band_fact("widening_max") + 1e-9, _band_fact("widening_step"))
    ratio, low, high = np.asarray(rows).T
    centre = (low + high) / 2
    target = _band_fact("calibration_target")
    for w in grid:
        if np.mean((ratio >= centre + (low - centre) * w) & (ratio <= centre + (high - centre) * w)) >= target:
            return float(w)
    return float(grid[-1])


def _fold_rows(
    predictions: Sequence[Prediction], unit: Callable[[Point], str]
) -> dict[str, list[tuple[float, float, float, str]]]:
    """Per widening_key: (log ratio, log low, log high, unit) of each measurement met with the band of other folds."""
    units = sorted({unit(p.row.point) for p in predictions})
    folds = int(_band_fact("calibration_folds"))
    found: dict[str, list[tuple[float, float, float, str]]] = {}
    for f in range(folds):
        fold = set(units[f::folds])
        bands = metric_bands([p for p in predictions if unit(p.row.point) not in fold], unit)
        for p in predictions:
            point = p.row.point
            if unit(point) not in fold:
                continue
            for metric in METRICS:
                ratio = p.ratio(metric)
                quoted = _quoted(bands, metric, point) if math.isfinite(ratio) and ratio > 0 else None
                if quoted is not None:
                    row = (math.log(ratio), math.log(quoted[0]), math.log(quoted[1]), unit(point))
                    found.setdefault(widening_key(metric, point.engine, _is_moe(point.model)), []).append(row)
    return found


def widenings(predictions: Sequence[Prediction], unit: Callable[[Point], str]) -> dict[str, float]:
    """Per widening_key: the least factor on the grid that puts `calibration_target` of the measurements inside.

    The units are dealt into `calibration_folds` folds; each fold's measurements are met with the bands quoted
    without that fold, so the factor answers for sources the band has not seen. The factor of an engine is shrunk
    towards every engine's (same metric, dense or MoE) in log space as the bands are, by its sources n: n / (n +
    `shrink_sources`) its own. A factor found on two or three sources must not narrow the band on their word alone.
    The pooled factors are kept too, under the engine POOLED_KEY, for engines without held-out sources.
    """
    found = _fold_rows(predictions, unit)
    pooled: dict[str, list[tuple[float, float, float, str]]] = {}
    for key, rows in found.items():
        metric, _, kind = key.split("|")
        pooled.setdefault(band_key(metric, POOLED_KEY, kind), []).extend(rows)
    parents = {key: _least_factor([r[:3] for r in rows]) for key, rows in pooled.items()}
    out = {key: round(factor, 2) for key, factor in parents.items()}
    shrink = _band_fact("shrink_sources")
    for key, rows in sorted(found.items()):
        metric, _, kind = key.split("|")
        sources = len({r[3] for r in rows})
        weight = sources / (sources + shrink)
        own, parent = _least_factor([r[:3] for r in rows]), parents[band_key(metric, POOLED_KEY, kind)]
        out[key] = round(math.exp(weight * math.log(own) + (1 - weight) * math.log(parent)), 2)
    return dict(sorted(out.items()))


class Coverage(BaseModel):
    """How many of an engine's held-out measurements of one metric fell inside the band quoted without their source."""

    model_config = ConfigDict(frozen=True)

    share: float
    points: int
    sources: int


def engine_coverage(
    predictions: Sequence[Prediction], inside: dict[int, dict[str, bool]], unit: Callable[[Point], str]
) -> dict[str, Coverage]:
    """'metric|engine' -> its coverage, from `coverage`'s verdicts (the figures docs/performance-model.md reports)."""
    hits: dict[str, list[bool]] = {}
    units: dict[str, set[str]] = {}
    for i, p in enumerate(predictions):
        for metric, hit in inside.get(i, {}).items():
            key = band_key(metric, p.row.point.engine)
            hits.setdefault(key, []).append(hit)
            units.setdefault(key, set()).add(unit(p.row.point))
    return {
        key: Coverage(share=round(float(np.mean(v)), 4), points=len(v), sources=len(units[key]))
        for key, v in sorted(hits.items())
    }


def coverage(predictions: Sequence[Prediction], unit: Callable[[Point], str]) -> dict[int, dict[str, bool]]:
    """For each prediction (by index): whether its measurement fell inside the band quoted without its unit.

    The band is quoted as an estimate quotes it: shrunk, then widened by factors found without that unit either.
    """
    units = sorted({unit(p.row.point) for p in predictions})
    out: dict[int, dict[str, bool]] = {}
    for held in units:
        rest = [p for p in predictions if unit(p.row.point) != held]
        bands, factors = metric_bands(rest, unit), widenings(rest, unit)
        for i, p in enumerate(predictions):
            point = p.row.point
            if unit(point) != held:
                continue
            inside: dict[str, bool] = {}
            for metric in METRICS:
                ratio = p.ratio(metric)
                quoted = _quoted(bands, metric, point) if math.isfinite(ratio) else None
                if quoted is None:
                    continue
                factor = widening_for(factors, metric, point.engine, _is_moe(point.model))
                low, high = widened(*quoted, factor)
                inside[metric] = low <= ratio <= high
            out[i] = inside
    return out
