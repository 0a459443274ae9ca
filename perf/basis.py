"""What an estimate rests on and how far to trust it: the basis in words, and a band for each of its three figures."""

import math
from collections.abc import Sequence

from catalog import Gpu
from i18n import N_
from perf.bands import NEW_ARCH, POOLED_KEY, BandStats, band_key, choose, widened, widening_for
from perf.calibrate import Correction
from perf.coefficients import load_coefficients
from perf.fitset import Point
from perf.result import CALIBRATING_GROUP, Band, Basis, Wording
from perf.targets import coverage_range, judged
from perf.validate import METRIC_LABELS, METRICS


def _calibrated_by(runs: Sequence[str], published: Sequence[Point]) -> Wording | str:
    """What calibrated an estimate: its probe runs, the published measurements, or both."""
    named: list[Wording] = []
    if runs:
        run_list = (("runs", Wording.listed(runs)),)
        named.append(
            Wording(template=N_("probe runs {runs}") if len(runs) > 1 else N_("probe run {runs}"), values=run_list)
        )
    if published:
        rows = "; ".join(sorted({p.row_id for p in published}))
        named.append(Wording(template=N_("published measurements ({rows})"), values=(("rows", rows),)))
    if len(named) == 2:
        return Wording(template=N_("{first} and {second}"), values=(("first", named[0]), ("second", named[1])))
    return named[0] if named else ""


def _held_out_bands(gpu: Gpu, engine: str, moe: bool, on_this_arch: bool, extrapolated: bool) -> dict[str, Band]:
    """Each metric's band from held-out error: by source, and also by architecture on a GPU the fit never saw.

    The by-source band is widened by the factor found for its metric, engine and dense/MoE (perf.bands.widenings).

    Every estimate may meet a new source, so the by-source band is the least it quotes; a new architecture widens it
    to the error of architectures held out, and an extrapolation (no data of this release or vendor) to every
    engine's by-source band, whichever reaches further on each side.
    """
    coefficients = load_coefficients()
    bands = coefficients.bands
    out: dict[str, Band] = {}
    for metric in METRICS:
        key, stats = choose(bands, metric, (band_key(engine, gpu.arch), engine, POOLED_KEY))
        factor = widening_for(coefficients.widening, metric, engine, moe)
        low, high = widened(stats.low_ratio, stats.high_ratio, factor)
        wider = []
        if not on_this_arch:  # no narrower than on any architecture the engine was measured on
            wider.append(choose(bands, metric, (band_key(NEW_ARCH, engine), band_key(NEW_ARCH, POOLED_KEY))))
            prefix = band_key(metric, engine, "")
            wider += [(k.split("|", 1)[1], b) for k, b in bands.items() if k.startswith(prefix)]
        if extrapolated:
            wider.append(choose(bands, metric, (POOLED_KEY,)))
        low, high, groups = round(low, 4), round(high, 4), stats.groups
        for other_key, other in wider:
            if other.low_ratio < low or other.high_ratio > high:
                low, high = min(low, other.low_ratio), max(high, other.high_ratio)
                key, groups = other_key, max(groups, other.groups)
        if not on_this_arch and not key.startswith(NEW_ARCH):
            key = band_key(NEW_ARCH, engine)
        out[metric] = Band(low_ratio=low, high_ratio=high, group=key, groups=groups)
    return out


def _calibrated_bands(fix: Correction, fallback: dict[str, Band]) -> dict[str, Band]:
    """A calibrated estimate's bands: the residuals its measured levels left, for what they measured."""
    own = Band(low_ratio=fix.low_ratio, high_ratio=fix.high_ratio, group=CALIBRATING_GROUP, groups=fix.levels)
    out = {"output_tok_s": own, "tpot_ms": own}
    out["ttft_ms"] = (
        Band(low_ratio=fix.ttft_low_ratio, high_ratio=fix.ttft_high_ratio, group=CALIBRATING_GROUP, groups=fix.levels)
        if fix.ttft_levels
        else fallback["ttft_ms"]
    )
    return out


def _said_outside(
    basis: Wording, bands: dict[str, BandStats], engine: str, arch: str, quoted: dict[str, Band]
) -> Wording:
    """The basis, and the figures its engine's held-out sources on this architecture mostly measured outside the band.

    A band is shrunk towards the engine's on other GPUs when few sources measured it here; when those few say the
    band is too kind (the centre of their own band lies outside it), the estimate says so in words as well.
    """
    found, sources = [], 0
    for metric in METRICS:
        own = bands.get(band_key(metric, engine, arch))
        band = quoted[metric]
        if own is None or band.low_ratio <= math.sqrt(own.low_ratio * own.high_ratio) <= band.high_ratio:
            continue
        found.append(f"{METRIC_LABELS[metric]} {own.low_ratio:.2f}–{own.high_ratio:.2f}×")
        sources = max(sources, own.groups)
    if not found:
        return basis
    return Wording(
        template=N_(
            "{basis}. Beware: on {arch} GPUs, {engine}'s {sources} source(s), each predicted by a fit without it, "
            "measured {figures} the prediction, outside this band (shrunk towards {engine} on other GPUs)"
        ),
        values=(
            ("basis", basis),
            ("arch", arch),
            ("engine", engine),
            ("sources", str(sources)),
            ("figures", Wording.listed(found)),
        ),
    )


def _held_short(basis: Wording, engine: str) -> Wording:
    """The basis, and the figures whose bands held fewer of the engine's held-out measurements than 8 in 10.

    Coverage as docs/performance-model.md reports it (each source met with the band quoted without it), judged as
    its targets are (perf/data/model.toml [targets]): at least `group_min_points` and `group_min_sources`, short of
    `coverage_low`. A band that promises 8 in 10 must say when its engine's own sources held it to fewer.
    """
    low, _ = coverage_range()
    coverage = load_coefficients().coverage
    short = []
    for metric in METRICS:
        held = coverage.get(band_key(metric, engine))
        if held and judged(held.points, held.sources) and held.share < low:
            short.append(f"{METRIC_LABELS[metric]} {held.share:.1%}")
    if not short:
        return basis
    return Wording(
        template=N_(
            "{basis}. Held out by source, {engine}'s bands held fewer than 8 in 10 of its measurements: {figures}; "
            "its sources disagree more than its bands show"
        ),
        values=(("basis", basis), ("engine", engine), ("figures", Wording.listed(short))),
    )


def _fitted(source: Wording, family: str, engine: str, version: str, gpu: Gpu) -> Wording:
    """The basis of an estimate whose engine and release are in the fit set, on this GPU architecture."""
    coefficients = load_coefficients()
    return Wording(
        template=N_(
            "fitted: {source} coefficients from {points} public measurements; {engine} {version} and {engine} on "
            "{arch} GPUs are in the fit set ({pairs} model/GPU pairs for {engine})"
        ),
        values=(
            ("source", source),
            ("points", str(coefficients.families[family].points)),
            ("engine", engine),
            ("version", version),
            ("arch", str(gpu.arch)),
            ("pairs", str(len(coefficients.fitted_groups.get(engine, [])))),
        ),
    )


def band_and_basis(
    gpu: Gpu,
    engine: str,
    moe: bool,
    family: str,
    version: str,
    gaps: Sequence[Wording],
    fix: Correction | None,
    published: Sequence[Point],
) -> tuple[dict[str, Band], Basis]:
    """The bands of the three figures and the basis of an estimate."""
    coefficients = load_coefficients()
    on_this_arch = band_key("output_tok_s", engine, gpu.arch) in coefficients.bands
    held_out = _held_out_bands(gpu, engine, moe, on_this_arch, extrapolated=bool(gaps))
    if fix is not None:
        runs = [i for i in fix.run_ids if i]
        wording = Wording(
            template=N_("calibrated by {sources}: {levels} measured level(s) scale the fitted step time by {scale}"),
            values=(
                ("sources", _calibrated_by(runs, published)),
                ("levels", str(fix.levels)),
                ("scale", f"{fix.step_scale:.2f}"),
            ),
        )
        basis = Basis(kind="calibrated", text=wording.worded(), run_ids=tuple(runs), wording=wording)
        return _calibrated_bands(fix, held_out), basis
    source = Wording(template=N_("its own") if family == engine else N_("the pooled (vLLM, SGLang, TensorRT-LLM)"))
    if gaps:
        wording = Wording(
            template=N_(
                "extrapolated: {gaps}; {source} coefficients, with bands widened to the error of held-out sources"
            ),
            values=(("gaps", Wording.joined(gaps)), ("source", source)),
        )
        wording = _said_outside(wording, coefficients.bands, engine, str(gpu.arch), held_out)
        return held_out, Basis(kind="extrapolated", text=wording.worded(), wording=wording)
    if on_this_arch:
        fitted = _held_short(_fitted(source, family, engine, version, gpu), engine)
        wording = _said_outside(fitted, coefficients.bands, engine, str(gpu.arch), held_out)
        return held_out, Basis(kind="fitted", text=wording.worded(), wording=wording)
    wording = Wording(
        template=N_(
            "datasheet: no public measurement of {engine} on {arch} GPUs; {gpu}'s datasheet bandwidth and tensor "
            "rates with {source} coefficients fitted on other GPUs"
        ),
        values=(("engine", engine), ("arch", str(gpu.arch)), ("gpu", gpu.name), ("source", source)),
    )
    return held_out, Basis(kind="datasheet", text=wording.worded(), wording=wording)
