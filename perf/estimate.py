"""The estimator's entry point: a configuration in, per-level figures, the SLO operating point, bands and basis out."""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from catalog import Gpu
from catalog.models import ModelSpec
from i18n import N_
from perf.basis import band_and_basis
from perf.calibrate import Correction, correction
from perf.errors import NoEstimateError, PerfError
from perf.fitset import Point, published_points
from perf.hardware import model_facts
from perf.inputs import ENGINE_FAMILIES, PerfRequest
from perf.levels import closed_level, poisson_level, search_concurrency, search_rate
from perf.phases import split_phases
from perf.resolve import Setup, copy_gpus, node_gpus, resolve, spans_nodes, with_advised_engine, with_copy_layout
from perf.result import Band, Basis, Calibration, Estimate, Layout, LevelEstimate, MeasuredLevel, Wording
from perf.simulate import Engine, Workload
from perf.vouch import near_shape, vouched


def _engine_name(engine: str, *, advised: bool = False) -> str:
    """The engine, or NoEstimateError naming it (and, when --engine was left to the advisor, that it was its pick)."""
    if engine not in ENGINE_FAMILIES:
        covered = ", ".join(ENGINE_FAMILIES)
        if advised:
            raise NoEstimateError(
                f"engine: no estimate for '{engine}', the advisor's engine for this GPU and model: the step-time "
                f"model covers {covered}; pass --engine with one of them"
            )
        raise NoEstimateError(f"engine: no estimate for '{engine}' (the step-time model covers {covered})")
    return engine


def _matching_published(
    gpu: Gpu, model: ModelSpec, engine: str, quant: str, gpus: int, version: str | None = None
) -> list[Point]:
    """Published closed-loop points of this very configuration (and engine release, when given)."""
    found = _published_closed_loops().get((gpu.id, model.id, engine, quant, gpus), ())
    return [p for p in found if version is None or p.release == version]


@lru_cache(maxsize=1)
def _published_closed_loops() -> dict[tuple[str, str, str, str, int], tuple[Point, ...]]:
    """The published closed-loop points by configuration (GPU, model, engine, quantization, GPUs), file order."""
    out: dict[tuple[str, str, str, str, int], list[Point]] = {}
    for p in published_points():
        if p.concurrency and p.load == "closed-loop":
            out.setdefault((p.gpu, p.model, p.engine, p.quant, p.shape.gpus), []).append(p)
    return {key: tuple(points) for key, points in out.items()}


def _published_calibration(points: Sequence[Point]) -> Calibration | None:
    if not points:
        return None
    first = points[0]
    return Calibration(
        run_id="",
        gpu=first.gpu,
        gpus=first.shape.gpus,
        model=first.model,
        engine=first.engine,
        quant=first.quant,
        levels=tuple(
            MeasuredLevel(
                concurrency=p.concurrency,
                input_tokens=p.input_tokens,
                output_tokens=p.output_tokens,
                ttft_p50_ms=p.ttft_ms,
                tpot_p50_ms=p.tpot_ms,
                output_tok_s=p.output_tok_s,
            )
            for p in points
        ),
    )


def _scaled(engine: Engine, scale: float) -> Engine:
    return Engine(
        cost=engine.cost,
        theta=tuple(t * scale for t in engine.theta),
        max_seqs=engine.max_seqs,
        budget_tokens=engine.budget_tokens,
        kv_capacity_tokens=engine.kv_capacity_tokens,
        accepted_per_step=engine.accepted_per_step,
        computed_per_step=engine.computed_per_step,
        ttft_readout=engine.ttft_readout,
    )


def _with_ttft(level: LevelEstimate, factor: float, request: PerfRequest) -> LevelEstimate:
    if factor == 1.0:
        return level
    t = level.ttft_ms
    ttft = t.model_copy(
        update={
            "p50": round(t.p50 * factor, 3),
            "p99": round((t.p99 or 0) * factor, 3),
            "mean": round((t.mean or 0) * factor, 3) if t.mean is not None else None,
        }
    )
    slo = request.slo
    meets = ttft.p50 <= slo.ttft_p50_ms and (ttft.p99 or 0) <= slo.ttft_p99_ms and level.tpot_ms.p50 <= slo.tpot_p50_ms
    return level.model_copy(update={"ttft_ms": ttft, "meets_slo": meets})


def estimate(request: PerfRequest, calibrations: Sequence[Calibration] = ()) -> Estimate:
    """Estimate one configuration (see PerfRequest); calibrations are stored probe runs of it, if any."""
    advised = with_advised_engine(request)
    _engine_name(advised.engine, advised=advised.engine != request.engine)
    request = advised
    return _estimate(with_copy_layout(request), tuple(calibrations))


def _correction(
    request: PerfRequest, setup: Setup, calibrations: Sequence[Calibration], published: Sequence[Point]
) -> tuple[Correction | None, list[Wording]]:
    """The calibration of this very configuration by stored runs and published points (of its release), if any."""
    key = (setup.gpu.id, setup.shape.gpus, setup.advice.model.id, request.engine, setup.advice.quantization)
    extra = _published_calibration(published)
    mine = [c for c in calibrations if (c.gpu, c.gpus, c.model, c.engine, c.quant) == key]
    usable, notes = vouched(request, [*mine, *([extra] if extra else [])])
    if not usable:
        return None, notes

    def measured_level(m: MeasuredLevel) -> LevelEstimate | None:
        if not m.concurrency:
            return None
        w = Workload(max(int(m.input_tokens), 1), max(int(m.output_tokens), 1))
        try:
            return closed_level(setup.base, w, request.slo, m.concurrency)
        except PerfError:
            return None

    return correction(usable, measured_level), notes


@dataclass(frozen=True)
class _Loads:
    """The simulated levels asked for, and the operating points searched for: maximum throughput and the SLO's."""

    levels: tuple[LevelEstimate, ...]
    best: LevelEstimate  # the highest-throughput point
    ceiling: int  # its concurrency
    best_concurrency: int | None
    slo_level: LevelEstimate | None
    best_rate: float | None
    searched: tuple[LevelEstimate, ...]  # every closed-loop level simulated (asked, searched, maximum), by concurrency


def _simulated(request: PerfRequest, setup: Setup, engine: Engine, ttft_factor: float) -> _Loads:
    """Every level asked for (closed loops, then Poisson rates), the maximum and the highest load within the SLO."""
    slo = request.slo
    cache: dict[int, LevelEstimate] = {}

    def at(c: int) -> LevelEstimate:
        if c not in cache:
            cache[c] = _with_ttft(closed_level(engine, setup.workload, slo, c), ttft_factor, request)
        return cache[c]

    ceiling = max(1, min(setup.max_seqs, setup.capacity // max(request.context_tokens, 1)))
    levels = [at(c) for c in request.concurrency]
    best = at(ceiling)
    if request.max_throughput:
        levels.append(best)
    limit = model_facts()["simulation"]["max_concurrency_search"]
    assert isinstance(limit, int)
    best_c = search_concurrency(at, min(ceiling, limit))
    rate_levels: dict[float, LevelEstimate] = {}

    def rate_at(r: float) -> LevelEstimate:
        if r not in rate_levels:
            rate_levels[r] = _with_ttft(poisson_level(engine, setup.workload, slo, r), ttft_factor, request)
        return rate_levels[r]

    levels.extend(rate_at(r) for r in request.request_rates_rps)
    best_rate = search_rate(rate_at, best.req_s) if request.request_rates_rps or request.find_max_rate else None
    return _Loads(
        levels=tuple(levels),
        best=best,
        ceiling=ceiling,
        best_concurrency=best_c,
        slo_level=at(best_c) if best_c else None,
        best_rate=best_rate,
        searched=tuple(cache[c] for c in sorted(cache)),
    )


def _own_notes(request: PerfRequest, setup: Setup) -> list[Wording]:
    """What the estimate says about itself: pooled coefficients, a count estimated per copy, an extrapolation."""
    notes: list[Wording] = []
    if setup.family != request.engine:
        notes.append(
            Wording(
                template=N_("no public measurements of {engine}: its step time uses the pooled coefficients"),
                values=(("engine", request.engine),),
            )
        )
    if setup.shape.gpus != copy_gpus(request):
        notes.append(
            Wording(
                template=N_(
                    "{gpus} GPUs: estimated per copy of {per_copy} GPU(s), {copies} copies, the layout the advisor "
                    "found the engines accept"
                ),
                values=(
                    ("gpus", str(copy_gpus(request))),
                    ("per_copy", str(setup.shape.gpus)),
                    ("copies", str(setup.advice.memory.replicas)),
                ),
            )
        )
    if spans_nodes(request):
        notes.append(
            Wording(
                template=N_(
                    "one copy over {nodes} nodes of {node} GPUs, laid out as given: the engine's settings are the "
                    "advisor's for one node of the same GPUs"
                ),
                values=(("nodes", str(-(-copy_gpus(request) // node_gpus()))), ("node", str(node_gpus()))),
            )
        )
    if setup.release.gaps:
        notes.append(
            Wording(
                template=N_("extrapolated: {gaps}; the bands are the error measured when whole sources were held out"),
                values=(("gaps", Wording.joined(setup.release.gaps)),),
            )
        )
    return notes


def _result(
    request: PerfRequest, setup: Setup, loads: _Loads, bands: dict[str, Band], basis: Basis, notes: list[Wording]
) -> Estimate:
    """The estimate as callers read it: what was resolved, the levels, the operating points, bands and basis."""
    advice, gpu = setup.advice, setup.gpu
    return Estimate(
        request=request,
        gpu_id=gpu.id,
        gpu_name=gpu.name,
        model_id=advice.model.id,
        model_name=advice.model.name,
        engine=request.engine,
        engine_version=setup.release.version,
        quant=advice.quantization,
        kv_cache_dtype=setup.kv_dtype,
        layout=Layout.of(setup.shape, request, replicas=advice.memory.replicas if not request.layout_given else 1),
        max_num_seqs=setup.max_seqs,
        max_num_batched_tokens=advice.max_num_batched_tokens,
        kv_capacity_tokens=setup.capacity,
        levels=loads.levels,
        max_output_tok_s=loads.best.output_tok_s,
        max_throughput_concurrency=loads.ceiling,
        best_concurrency_within_slo=loads.best_concurrency,
        best_request_rate_within_slo_rps=loads.best_rate,
        slo_level=loads.slo_level,
        band=bands["output_tok_s"],
        bands=bands,
        basis=basis,
        notes=(*([] if spans_nodes(request) else advice.warnings), *(w.worded() for w in notes)),
        note_wordings=tuple(notes),
        searched_levels=loads.searched,
        phases=split_phases(
            setup.base,
            setup.workload.input_tokens,
            setup.workload.cached_tokens,
            setup.workload.output_tokens,
            loads.best_concurrency or 1,
        ),
    )


@lru_cache(maxsize=4096)
def _estimate(request: PerfRequest, calibrations: tuple[Calibration, ...]) -> Estimate:
    """Resolve the configuration, calibrate it, simulate its loads, then band and word the result."""
    setup = resolve(request)
    advice, shape = setup.advice, setup.shape
    published = _matching_published(
        setup.gpu, advice.model, request.engine, advice.quantization, shape.gpus, setup.release.version
    )
    fix, calibration_notes = _correction(request, setup, calibrations, published)
    published = [p for p in published if near_shape(request, p.input_tokens, p.output_tokens)]
    engine = _scaled(setup.base, fix.step_scale) if fix else setup.base
    loads = _simulated(request, setup, engine, fix.ttft_scale if fix else 1.0)
    bands, basis = band_and_basis(
        setup.gpu,
        request.engine,
        advice.model.is_moe,
        setup.family,
        setup.release.version,
        setup.release.gaps,
        fix,
        published,
    )
    return _result(request, setup, loads, bands, basis, [*calibration_notes, *_own_notes(request, setup)])
