"""Held-out accuracy by group: median and P90 error and band coverage per engine, release, vendor, MoE, metric."""

import math
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from catalog import find_gpu
from catalog.models import find_model
from perf.bands import coverage
from perf.errors import PerfError
from perf.estimate import estimate
from perf.fit import Row, fit_theta
from perf.fitset import Point
from perf.targets import coverage_range, judged, targets
from perf.validate import METRICS, Prediction, by_source, predict


class GroupAccuracy(BaseModel):
    """One group's held-out error for one metric."""

    model_config = ConfigDict(frozen=True)

    kind: str  # engine, release, vendor, moe, all
    group: str
    metric: str
    points: int
    sources: int
    median_ape: float
    p90_ape: float
    coverage: float  # share of measurements inside the band quoted without their own source


def _moe(point: Point) -> str:
    return "MoE" if find_model(point.model).is_moe else "dense"


GROUP_KINDS: dict[str, Callable[[Point], str]] = {
    "all": lambda p: "all",
    "engine": lambda p: p.engine,
    "release": lambda p: f"{p.engine} {p.release}",
    "vendor": lambda p: find_gpu(p.gpu).vendor,
    "moe": _moe,
    "publisher": lambda p: p.publisher,
}


def accuracy(
    predictions: Sequence[Prediction],
    unit: Callable[[Point], str] = by_source,
    inside: dict[int, dict[str, bool]] | None = None,
) -> list[GroupAccuracy]:
    """Every group of every kind, per metric (groups without a measurement of a metric are left out).

    `inside` is `perf.bands.coverage` of the predictions when the caller has it already (it takes minutes).
    """
    inside = coverage(predictions, unit) if inside is None else inside
    out: list[GroupAccuracy] = []
    for kind, key in GROUP_KINDS.items():
        grouped: dict[str, list[int]] = {}
        for i, p in enumerate(predictions):
            grouped.setdefault(key(p.row.point), []).append(i)
        for group, indices in sorted(grouped.items()):
            for metric in METRICS:
                errors, hits, units = [], [], set()
                for i in indices:
                    ratio = predictions[i].ratio(metric)
                    if not math.isfinite(ratio):
                        continue
                    errors.append(abs(1 / ratio - 1))
                    units.add(unit(predictions[i].row.point))
                    if metric in inside.get(i, {}):
                        hits.append(inside[i][metric])
                if not errors:
                    continue
                out.append(
                    GroupAccuracy(
                        kind=kind,
                        group=group,
                        metric=metric,
                        points=len(errors),
                        sources=len(units),
                        median_ape=float(np.median(errors)),
                        p90_ape=float(np.percentile(errors, 90)),
                        coverage=float(np.mean(hits)) if hits else float("nan"),
                    )
                )
    return out


class MaxLoad(BaseModel):
    """A published maximum-throughput point (never fitted: it gives no concurrency) beside the estimate's maximum."""

    model_config = ConfigDict(frozen=True)

    point: Point
    estimated_tok_s: float | None  # None: no estimate (the message says why)
    low_ratio: float = float("nan")
    high_ratio: float = float("nan")
    message: str = ""

    @property
    def ratio(self) -> float:
        """Measured / estimated output tokens/s."""
        measured = self.point.output_tok_s
        return measured / self.estimated_tok_s if measured and self.estimated_tok_s else float("nan")

    @property
    def inside(self) -> bool:
        """Whether the measurement fell inside the estimate's throughput band."""
        return self.low_ratio <= self.ratio <= self.high_ratio


def max_load(points: Sequence[Point]) -> list[MaxLoad]:
    """Each maximum-load point estimated at its own configuration and release (about 20 ms each)."""
    out = []
    for p in points:
        try:
            result = estimate(p.max_load_request())
        except PerfError as exc:
            out.append(MaxLoad(point=p, estimated_tok_s=None, message=str(exc)))
            continue
        band = result.bands["output_tok_s"]
        out.append(
            MaxLoad(
                point=p,
                estimated_tok_s=result.max_output_tok_s,
                low_ratio=band.low_ratio,
                high_ratio=band.high_ratio,
            )
        )
    return out


class Check(BaseModel):
    """One target of perf/data/model.toml [targets] against the held-out-by-source groups."""

    model_config = ConfigDict(frozen=True)

    name: str  # 'tpot_ms median error in engine vllm', 'ttft_ms band coverage in moe MoE'
    value: float
    low: float  # the target: low <= value <= high
    high: float
    missed_limit: float | None = None  # a known miss: the value it must not pass (perf/data/model.toml)

    @property
    def met(self) -> bool:
        return self.low <= self.value <= self.high

    @property
    def holds(self) -> bool:
        """Met, or a known miss no worse than its recorded limit."""
        if self.met:
            return True
        if self.missed_limit is None:
            return False
        return self.value >= self.missed_limit if self.missed_limit < self.low else self.value <= self.missed_limit

    def text(self) -> str:
        median = self.name.split()[1] == "median"
        target = f"at most {self.high:.0%}" if median else f"{self.low:.0%}-{self.high:.0%}"
        return f"{self.name}: {self.value:.1%} (target {target})"


def target_checks(groups: Sequence[GroupAccuracy]) -> list[Check]:
    """Each target of perf/data/model.toml [targets] against the held-out-by-source groups.

    Groups smaller than `group_min_points` points or `group_min_sources` sources are reported, not judged.
    """
    t = targets()
    overall, per_group, kinds, missed = (
        t[k] for k in ("overall_median_ape", "group_median_ape", "group_kinds", "missed")
    )
    assert isinstance(overall, dict) and isinstance(per_group, dict) and isinstance(kinds, list)
    assert isinstance(missed, dict)
    low, high = coverage_range()
    out: list[Check] = []

    def add(name: str, value: float, lo: float, hi: float) -> None:
        limit = missed.get(name)
        out.append(Check(name=name, value=value, low=lo, high=hi, missed_limit=float(limit) if limit else None))

    for g in groups:
        is_judged = judged(g.points, g.sources)
        where = "overall" if g.kind == "all" else f"in {g.kind} {g.group}"
        if g.kind == "all" and g.metric in overall:
            add(f"{g.metric} median error overall", g.median_ape, 0.0, float(overall[g.metric]))
        if g.kind in kinds and g.metric in per_group and is_judged:
            add(f"{g.metric} median error {where}", g.median_ape, 0.0, float(per_group[g.metric]))
        if (g.kind in kinds or g.kind == "all") and is_judged and math.isfinite(g.coverage):
            add(f"{g.metric} band coverage {where}", g.coverage, low, high)
    return out


def release_scale_experiment(rows: Sequence[Row]) -> str:
    """Would a step-time scale per engine release help? Groups held out, with and without their release's scale.

    The scale is the release's median measured / predicted TPOT over the other groups' points, shrunk towards 1
    by `shrink` points. Reported in docs/performance-model.md; the estimate applies no such scale unless it helps.
    """
    lines = [
        "| engine | shrink (points) | median error without | with the release's scale |",
        "| --- | ---: | ---: | ---: |",
    ]
    for engine in sorted({r.point.engine for r in rows} - {"lmdeploy"}):
        family = [r for r in rows if r.point.engine == engine]
        errors: dict[int, tuple[list[float], list[float]]] = {k: ([], []) for k in (10, 100)}
        for group in sorted({r.point.group for r in family}):
            train = [r for r in family if r.point.group != group]
            theta = fit_theta(train, [r for r in rows if r.point.group != group])
            logs: dict[str, list[float]] = {}
            for r in train:
                pred = predict(theta, r)
                if r.point.tpot_ms and pred.tpot_ms > 0:
                    logs.setdefault(r.point.source_key, []).append(math.log(r.point.tpot_ms / pred.tpot_ms))
            for r in (r for r in family if r.point.group == group):
                pred = predict(theta, r)
                measured = r.point.measured_tok_s
                if not measured or pred.tok_s <= 0:
                    continue
                for shrink, (without, with_scale) in errors.items():
                    found = logs.get(r.point.source_key, [])
                    scale = math.exp(sum(found) / (len(found) + shrink))
                    without.append(abs(pred.tok_s / measured - 1))
                    with_scale.append(abs(pred.tok_s / scale / measured - 1))
        for shrink, (without, with_scale) in errors.items():
            lines.append(
                f"| {engine} | {shrink} | {float(np.median(without)):.1%} | {float(np.median(with_scale)):.1%} |"
            )
    return "\n".join(lines)


class CalibrationCheck(BaseModel):
    """Other levels of measured sweeps, before and after calibrating on one level of each (held out by source)."""

    model_config = ConfigDict(frozen=True)

    sweeps: int
    levels: int  # the levels predicted (every level of a sweep but the calibrating one)
    before: dict[str, float]  # metric -> median error of the held-out estimate
    after: dict[str, float]  # metric -> median error once calibrated by the sweep's calibrating level


def _sweep_key(p: Prediction) -> tuple[object, ...]:
    q = p.row.point
    return (q.source_key, q.model, q.gpu, q.quant, q.shape, q.input_tokens, q.output_tokens, q.load)


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def calibration_check(predictions: Sequence[Prediction], min_levels: int = 3) -> CalibrationCheck:
    """Calibrate each sweep (one source, configuration and request shape, several concurrencies) on half its levels.

    As perf.calibrate does with a stored run of several levels: the step time is scaled by the geometric mean of the
    calibrating levels' measured / estimated TPOT (or throughput where no TPOT is given) and TTFT by their measured /
    estimated TTFT; the other levels (every second one, from the second lowest) are then compared with their
    measurements. The estimates themselves are held out by source.
    """
    sweeps: dict[tuple[object, ...], list[Prediction]] = {}
    for p in predictions:
        if p.row.point.concurrency:
            sweeps.setdefault(_sweep_key(p), []).append(p)
    before: dict[str, list[float]] = {m: [] for m in METRICS}
    after: dict[str, list[float]] = {m: [] for m in METRICS}
    used = levels = 0
    for preds in sweeps.values():
        if len(preds) < min_levels:
            continue
        preds = sorted(preds, key=lambda p: p.row.point.concurrency or 0)
        anchors, rest = preds[0::2], preds[1::2]
        steps = [
            a.ratio("tpot_ms") if math.isfinite(a.ratio("tpot_ms")) else 1 / a.ratio("output_tok_s") for a in anchors
        ]
        steps = [s for s in steps if math.isfinite(s) and s > 0]
        if not steps:
            continue
        step = _geomean(steps)
        firsts = [r for r in (a.ratio("ttft_ms") for a in anchors) if math.isfinite(r) and r > 0]
        first = _geomean(firsts) if firsts else step
        used += 1
        for p in rest:
            point = p.row.point
            tpot, ttft = p.tpot_ms * step, p.ttft_ms * first
            e2e = ttft + (point.output_tokens - 1) * tpot
            tok_s = (point.concurrency or 0) * point.output_tokens / e2e * 1000.0 if e2e > 0 else float("nan")
            if point.load == "one-batch":
                tok_s = p.tok_s / step  # a whole run's span scales with the step time
            fixed = {"output_tok_s": tok_s, "tpot_ms": tpot, "ttft_ms": ttft}
            levels += 1
            for metric in METRICS:
                measured = p.measured(metric)
                if not measured:
                    continue
                before[metric].append(abs(p.estimated(metric) / measured - 1))
                after[metric].append(abs(fixed[metric] / measured - 1))
    return CalibrationCheck(
        sweeps=used,
        levels=levels,
        before={m: float(np.median(v)) for m, v in before.items() if v},
        after={m: float(np.median(v)) for m, v in after.items() if v},
    )
