"""The fitted coefficients, their bands and their fit set: built by `python -m perf fit`, read by every estimate."""

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from catalog import find_gpu
from perf.bands import NEW_ARCH, POOLED_KEY, BandStats, Coverage, coverage, engine_coverage, metric_bands, widenings
from perf.features import FEATURES
from perf.fit import POOLED, Row, family_rows, fit_theta, readout
from perf.fitset import Point, fitset_config, load_points
from perf.pointfeatures import point_features
from perf.readout import TTFT_TERMS
from perf.validate import Prediction, by_architecture, by_group, by_source, leave_one_group_out, median_ape

COEFFICIENTS_JSON = Path(__file__).parent / "data" / "coefficients.json"
FITTED_FAMILIES = ("vllm", "sglang", "tensorrt-llm")
_RELEASE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:\.?(a|b|rc)(\d+))?(?:\.post(\d+))?$")


class Family(BaseModel):
    """One engine family's theta, its TTFT readout and what they were fitted on."""

    model_config = ConfigDict(frozen=True)

    theta: tuple[float, ...]
    ttft: tuple[float, ...]  # the TTFT readout (perf.readout.TTFT_TERMS)
    points: int
    groups: int


class Coefficients(BaseModel):
    """coefficients.json."""

    model_config = ConfigDict(frozen=True)

    features: tuple[str, ...]
    ttft_terms: tuple[str, ...]
    families: dict[str, Family]
    bands: dict[str, BandStats]  # 'metric|key' (perf.bands)
    widening: dict[str, float]  # 'metric|engine|moe|dense' -> the factor the band is widened by (perf.bands.widenings)
    fitted_groups: dict[str, list[str]]  # engine -> 'model | gpu' pairs in its fit
    releases: dict[str, dict[str, int]]  # engine -> release -> measured points
    vendors: dict[str, dict[str, list[str]]]  # engine -> GPU vendor with measured points -> releases measured there
    held_out_median_ape: dict[str, float]
    fit_set: str
    left_out: dict[str, int]
    coverage: dict[str, Coverage] = {}  # 'metric|engine' -> share of held-out measurements inside (with_coverage)


@dataclass(frozen=True)
class Validation:
    """The held-out predictions behind the bands: by (model, GPU, engine) group, by source, by architecture."""

    by_group: list[Prediction]
    by_source: list[Prediction]
    by_architecture: list[Prediction]


def release_order(version: str) -> tuple[int, ...] | None:
    """A sortable key of a numbered release ('0.19.0', '1.2.0rc6.post3'); None for nightlies and unversioned."""
    match = _RELEASE.match(version)
    if not match:
        return None
    major, minor, patch, pre, pre_no, post = match.groups()
    stage = {"a": 0, "b": 1, "rc": 2, None: 3}[pre]
    return int(major), int(minor), int(patch or 0), stage, int(pre_no or 0), int(post or 0)


def feature_rows(progress: Callable[[int, int], None] | None = None) -> list[Row]:
    """Every usable point with its simulated feature sums (about 10 s)."""
    points, _ = load_points()
    rows = []
    for i, point in enumerate(points):
        if progress:
            progress(i, len(points))
        features = point_features(point)
        if features is not None and (point.tpot_ms is not None or point.output_tok_s is not None):
            rows.append(Row(point=point, features=features))
    return rows


def validate(rows: Sequence[Row]) -> Validation:
    """Every row predicted held out three ways (the bands and docs/performance-model.md read these)."""
    return Validation(
        by_group=leave_one_group_out(rows, FITTED_FAMILIES, unit=by_group),
        by_source=leave_one_group_out(rows, FITTED_FAMILIES, unit=by_source),
        by_architecture=leave_one_group_out(rows, FITTED_FAMILIES, unit=by_architecture),
    )


def _new_arch_keys(point: Point) -> tuple[str, ...]:
    return (point.engine, POOLED_KEY)


def _releases(rows: Sequence[Row]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        releases = out.setdefault(r.point.engine, {})
        releases[r.point.release] = releases.get(r.point.release, 0) + 1
    return {e: dict(sorted(v.items())) for e, v in sorted(out.items())}


def build(rows: Sequence[Row]) -> tuple[Coefficients, Validation]:
    """Fit every family and the pooled set, validate held out, and quote the bands."""
    families = {}
    for family in (*FITTED_FAMILIES, POOLED):
        subset = family_rows(rows, family)
        theta = fit_theta(subset, rows)
        families[family] = Family(
            theta=tuple(float(f"{v:.6g}") for v in theta),
            ttft=tuple(float(f"{v:.6g}") for v in readout(subset, theta, rows)),
            points=len(subset),
            groups=len({r.point.group for r in subset}),
        )
    checked = validate(rows)
    tpot, ttft, tok_s = median_ape(checked.by_group)
    s_tpot, s_ttft, s_tok_s = median_ape(checked.by_source)
    arch_tpot, arch_ttft, arch_tok_s = median_ape(checked.by_architecture)
    fitted: dict[str, list[str]] = {}
    vendors: dict[str, dict[str, set[str]]] = {}
    for r in rows:
        pair = f"{r.point.model} | {r.point.gpu}"
        fitted.setdefault(r.point.engine, [])
        if pair not in fitted[r.point.engine]:
            fitted[r.point.engine].append(pair)
        on_vendor = vendors.setdefault(r.point.engine, {}).setdefault(find_gpu(r.point.gpu).vendor, set())
        on_vendor.add(r.point.release)
    _, left_out = load_points()
    source = fitset_config()["aiconfigurator"]
    assert isinstance(source, dict)
    bands = {
        **metric_bands(checked.by_source, by_source),
        **metric_bands(checked.by_architecture, by_architecture, keys=_new_arch_keys, prefix=NEW_ARCH),
    }
    coefficients = Coefficients(
        features=FEATURES,
        ttft_terms=TTFT_TERMS,
        families=families,
        bands=bands,
        widening=widenings(checked.by_source, by_source),
        fitted_groups={k: sorted(v) for k, v in sorted(fitted.items())},
        releases=_releases(rows),
        vendors={k: {vendor: sorted(r) for vendor, r in sorted(v.items())} for k, v in sorted(vendors.items())},
        held_out_median_ape={
            "tpot": round(tpot, 4),
            "ttft": round(ttft, 4),
            "output_tok_s": round(tok_s, 4),
            "tpot_by_source": round(s_tpot, 4),
            "ttft_by_source": round(s_ttft, 4),
            "output_tok_s_by_source": round(s_tok_s, 4),
            "tpot_new_architecture": round(arch_tpot, 4),
            "ttft_new_architecture": round(arch_ttft, 4),
            "output_tok_s_new_architecture": round(arch_tok_s, 4),
        },
        fit_set=str(source["source"]),
        left_out=dict(left_out),
    )
    return coefficients, checked


def coverage_by_source(checked: Validation) -> dict[int, dict[str, bool]]:
    """Each by-source prediction inside or outside the band quoted without its source (about two minutes)."""
    return coverage(checked.by_source, by_source)


def with_coverage(coefficients: Coefficients, checked: Validation, inside: dict[int, dict[str, bool]]) -> Coefficients:
    """The coefficients with each engine's held-out band coverage per metric (an estimate words a shortfall)."""
    return coefficients.model_copy(update={"coverage": engine_coverage(checked.by_source, inside, by_source)})


def write(coefficients: Coefficients, path: Path = COEFFICIENTS_JSON) -> None:
    """Store the coefficients as data (sorted, indented, so a diff reads)."""
    path.write_text(json.dumps(coefficients.model_dump(), indent=1, sort_keys=True) + "\n", encoding="utf-8")


@cache
def load_coefficients() -> Coefficients:
    """The stored coefficients (perf/data/coefficients.json)."""
    return Coefficients.model_validate_json(COEFFICIENTS_JSON.read_text(encoding="utf-8"))


def family_for(engine: str) -> tuple[Family, str]:
    """The coefficients an engine uses and the family they come from (an engine without a fit uses the pooled)."""
    coefficients = load_coefficients()
    family = engine if engine in coefficients.families else POOLED
    return coefficients.families[family], family


def theta_for(engine: str) -> tuple[tuple[float, ...], str]:
    """The theta an engine uses and the family it comes from."""
    found, family = family_for(engine)
    return found.theta, family


def newest_release(engine: str) -> str | None:
    """The newest numbered release of `engine` with measured points (None when it has none)."""
    numbered = [v for v in load_coefficients().releases.get(engine, {}) if release_order(v)]
    return max(numbered, key=lambda v: release_order(v) or ()) if numbered else None
