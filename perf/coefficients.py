"""The fitted coefficients, their bands and their fit set: built by `python -m perf fit`, read by every estimate."""

import json
import math
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from catalog import find_gpu
from perf.features import FEATURES
from perf.fit import POOLED, Row, family_rows, fit_theta
from perf.fitset import fitset_config, load_points
from perf.hardware import model_facts
from perf.pointfeatures import point_features
from perf.validate import Prediction, by_architecture, leave_one_group_out, median_ape

COEFFICIENTS_JSON = Path(__file__).parent / "data" / "coefficients.json"
FITTED_FAMILIES = ("vllm", "sglang", "tensorrt-llm")
NEW_ARCH = "new-architecture"  # bands of GPUs whose architecture the fit never saw (held out by architecture)


class BandStats(BaseModel):
    """Measured / predicted tokens/s over held-out points, at the band's percentiles."""

    model_config = ConfigDict(frozen=True)

    low_ratio: float
    high_ratio: float
    groups: int
    points: int


class Family(BaseModel):
    """One engine family's theta and what it was fitted on."""

    model_config = ConfigDict(frozen=True)

    theta: tuple[float, ...]
    points: int
    groups: int


class Coefficients(BaseModel):
    """coefficients.json."""

    model_config = ConfigDict(frozen=True)

    features: tuple[str, ...]
    families: dict[str, Family]
    bands: dict[str, BandStats]
    fitted_groups: dict[str, list[str]]  # engine -> 'model | gpu' pairs in its fit
    held_out_median_ape: dict[str, float]
    fit_set: str
    left_out: dict[str, int]


def _percentile(key: str) -> float:
    value = model_facts()["band"][key]
    assert isinstance(value, int | float)
    return float(value)


def band_key(engine: str, arch: str | None = None) -> str:
    """'engine|arch', 'engine' or 'all'."""
    return f"{engine}|{arch}" if arch else engine


def _bands(predictions: Sequence[Prediction], *, new_architecture: bool = False) -> dict[str, BandStats]:
    keyed: dict[str, list[Prediction]] = {}
    for p in predictions:
        point = p.row.point
        arch = find_gpu(point.gpu).arch
        keys = (
            (band_key(NEW_ARCH, point.engine), band_key(NEW_ARCH, POOLED))
            if new_architecture
            else (band_key(point.engine, arch), band_key(point.engine), POOLED)
        )
        for key in keys:
            keyed.setdefault(key, []).append(p)
    out = {}
    for key, preds in sorted(keyed.items()):
        ratios = [p.tok_s_ratio for p in preds if math.isfinite(p.tok_s_ratio)]
        if not ratios:
            continue
        low, high = np.percentile(ratios, [_percentile("low_percentile"), _percentile("high_percentile")])
        out[key] = BandStats(
            low_ratio=round(float(low), 4),
            high_ratio=round(float(high), 4),
            groups=len({p.row.point.group for p in preds}),
            points=len(ratios),
        )
    return out


def feature_rows(progress: Callable[[int, int], None] | None = None) -> list[Row]:
    """Every usable point with its simulated feature sums (about 20 s)."""
    points, _ = load_points()
    rows = []
    for i, point in enumerate(points):
        if progress:
            progress(i, len(points))
        features = point_features(point)
        if features is not None and (point.tpot_ms is not None or point.output_tok_s is not None):
            rows.append(Row(point=point, features=features))
    return rows


def build(rows: Sequence[Row]) -> tuple[Coefficients, list[Prediction]]:
    """Fit every family and the pooled set, validate by leaving one group out, and quote the bands."""
    families = {}
    for family in (*FITTED_FAMILIES, POOLED):
        subset = family_rows(rows, family)
        families[family] = Family(
            theta=tuple(float(f"{v:.6g}") for v in fit_theta(subset)),
            points=len(subset),
            groups=len({r.point.group for r in subset}),
        )
    predictions = leave_one_group_out(rows, FITTED_FAMILIES)
    tpot, ttft, tok_s = median_ape(predictions)
    unseen = leave_one_group_out(rows, FITTED_FAMILIES, unit=by_architecture)
    arch_tpot, _, arch_tok_s = median_ape(unseen)
    fitted: dict[str, list[str]] = {}
    for r in rows:
        fitted.setdefault(r.point.engine, [])
        pair = f"{r.point.model} | {r.point.gpu}"
        if pair not in fitted[r.point.engine]:
            fitted[r.point.engine].append(pair)
    _, left_out = load_points()
    source = fitset_config()["aiconfigurator"]
    assert isinstance(source, dict)
    coefficients = Coefficients(
        features=FEATURES,
        families=families,
        bands={**_bands(predictions), **_bands(unseen, new_architecture=True)},
        fitted_groups={k: sorted(v) for k, v in sorted(fitted.items())},
        held_out_median_ape={
            "tpot": round(tpot, 4),
            "ttft": round(ttft, 4),
            "output_tok_s": round(tok_s, 4),
            "tpot_new_architecture": round(arch_tpot, 4),
            "output_tok_s_new_architecture": round(arch_tok_s, 4),
        },
        fit_set=str(source["source"]),
        left_out=dict(left_out),
    )
    return coefficients, predictions


def write(coefficients: Coefficients, path: Path = COEFFICIENTS_JSON) -> None:
    """Store the coefficients as data (sorted, indented, so a diff reads)."""
    path.write_text(json.dumps(coefficients.model_dump(), indent=1, sort_keys=True) + "\n", encoding="utf-8")


@cache
def load_coefficients() -> Coefficients:
    """The stored coefficients (perf/data/coefficients.json)."""
    return Coefficients.model_validate_json(COEFFICIENTS_JSON.read_text(encoding="utf-8"))


def theta_for(engine: str) -> tuple[tuple[float, ...], str]:
    """The theta an engine uses and the family it comes from (an engine without a fit uses the pooled one)."""
    coefficients = load_coefficients()
    family = engine if engine in coefficients.families else POOLED
    return coefficients.families[family].theta, family
