"""The estimator's entry point: a configuration in, per-level figures, the SLO operating point, bands and basis out."""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from catalog import Gpu, GpuLookupError, default_max_num_seqs, find_gpu, find_model
from catalog.models import CUSTOM_MODEL, ModelSpec
from i18n import N_
from perf.basis import band_and_basis
from perf.calibrate import Correction, correction
from perf.coefficients import family_for, load_coefficients, newest_release
from perf.errors import NoEstimateError, PerfError
from perf.features import ReplicaShape
from perf.fitset import Point, published_points
from perf.hardware import model_facts
from perf.inputs import ENGINE_FAMILIES, PerfRequest
from perf.levels import closed_level, poisson_level, search_concurrency, search_rate
from perf.replica import kv_capacity_tokens, replica_engine
from perf.result import Calibration, Estimate, Layout, LevelEstimate, MeasuredLevel, Wording
from perf.simulate import Engine, Workload
from perf.vouch import near_shape, vouched
from selector import Advice, AdviceRequest, SelectorError, advise
from selector.memory import split_objections


def _engine_name(engine: str) -> str:
    if engine not in ENGINE_FAMILIES:
        raise NoEstimateError(
            f"engine: no estimate for '{engine}' (the step-time model covers {', '.join(ENGINE_FAMILIES)})"
        )
    return engine


def _gpus(request: PerfRequest) -> int:
    """GPUs of one copy: --gpus, or tp x pp x dp when the layout is given (they must agree when both are)."""
    if not request.layout_given:
        return request.gpus
    if request.gpus not in (1, request.layout_gpus):
        raise PerfError(
            f"gpus: --tp {request.tp or 1} x --pp {request.pp or 1} x --dp {request.dp or 1} is "
            f"{request.layout_gpus} GPUs, but --gpus says {request.gpus}; give one or make them agree"
        )
    return request.layout_gpus


def _advice(request: PerfRequest, concurrency: int) -> Advice:
    try:
        gpu = find_gpu(request.gpu)
    except GpuLookupError as exc:
        raise PerfError(f"gpu: {exc}") from exc
    asked = {
        "gpu": gpu.id,
        "gpus": _gpus(request),
        "engine": request.engine,
        "quant": request.quant,
        "context": max(request.context_tokens, 256),
        "concurrency": min(concurrency, 4096),
    }
    if request.custom is not None:  # a model outside the catalog, as the advisor's custom fields describe it
        advice_request = request.custom.model_copy(update={"model": CUSTOM_MODEL, **asked})
    else:
        try:
            model = find_model(request.model)
        except SelectorError as exc:
            raise PerfError(f"model: {exc}") from exc
        advice_request = AdviceRequest(model=model.id, **asked)
    try:
        advice = advise(advice_request)
    except (SelectorError, ValueError) as exc:
        raise PerfError(str(exc)) from exc
    model = advice.model
    if advice.engine != request.engine:
        raise PerfError(f"engine: {request.engine} does not run on {gpu.name} (the advisor: {advice.switch_when})")
    if request.quant != "auto" and advice.quantization != request.quant:
        raise PerfError(
            f"quant: {request.quant} is not available for {model.name} with {advice.engine_name} on {gpu.name}; "
            f"the advisor would use {advice.quantization}"
        )
    return advice


def _shape(request: PerfRequest, advice: Advice) -> ReplicaShape:
    """The layout estimated: as given (--tp, --pp, --ep, --dp) and checked as the engines would, else the advisor's."""
    memory = advice.memory
    if not request.layout_given:
        return ReplicaShape(
            tensor_parallel=memory.tensor_parallel,
            pipeline_parallel=memory.pipeline_parallel,
            attention_data_parallel=memory.attention_data_parallel,
            expert_parallel=memory.expert_parallel,
        )
    model = advice.model
    tp, pp, dp, ep = request.tp or 1, request.pp or 1, request.dp or 1, request.ep or 1
    if ep > 1 and not model.is_moe:
        raise PerfError(f"ep: {model.name} has no experts; expert parallelism needs a mixture-of-experts model")
    if ep > tp * dp:
        raise PerfError(f"ep: {ep} expert-parallel GPUs is more than the tp x dp = {tp * dp} GPUs of a stage")
    problems = split_objections(model, advice.quantization, tp, expert_parallel=ep > 1, attention_data_parallel=False)
    if problems:
        raise PerfError("tp: the engines refuse " + f"--tp {tp}: " + "; ".join(p.worded() for p in problems))
    if pp > model.layers:
        raise PerfError(f"pp: {model.layers} layers cannot fill {pp} pipeline stages")
    return ReplicaShape(
        tensor_parallel=tp * dp,
        pipeline_parallel=pp,
        attention_data_parallel=dp > 1,
        expert_parallel=ep > 1,
        dp_ranks=dp if dp > 1 else 0,
    )


def _speculation(request: PerfRequest, model: ModelSpec) -> tuple[float, float, float]:
    """Accepted tokens per step, computed tokens per sequence per step and the draft's share of a step's reads."""
    k, alpha = request.speculative_tokens, request.acceptance_rate
    if not k:
        return 1.0, 1.0, 0.0
    accepted = float(k + 1) if alpha >= 1 else (1 - alpha ** (k + 1)) / (1 - alpha)
    share = 0.0
    if request.draft == "model" and model.draft_model:
        share = k * find_model(model.draft_model).params / model.params
    return accepted, float(k + 1), share


def _matching_published(
    gpu: Gpu, model: ModelSpec, engine: str, quant: str, gpus: int, version: str | None = None
) -> list[Point]:
    """Published closed-loop points of this very configuration (and engine release, when given)."""
    return [
        p
        for p in published_points()
        if (p.gpu, p.model, p.engine, p.quant, p.shape.gpus) == (gpu.id, model.id, engine, quant, gpus)
        and p.concurrency
        and p.load == "closed-loop"
        and (version is None or p.release == version)
    ]


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


@dataclass(frozen=True)
class _Release:
    """The engine release estimated, and why its estimate is an extrapolation (empty when measured data backs it)."""

    version: str
    gaps: tuple[Wording, ...]


def _release(request: PerfRequest, gpu: Gpu) -> _Release:
    """--engine-version or the newest release with data; what the measured data lacks for this engine and GPU."""
    coefficients = load_coefficients()
    releases = coefficients.releases.get(request.engine, {})
    version = request.engine_version or newest_release(request.engine) or ""
    gaps: list[Wording] = []
    if not releases:
        gaps.append(Wording(template=N_("no measured data of {engine} at all"), values=(("engine", request.engine),)))
    elif version and version not in releases:
        gaps.append(
            Wording(
                template=N_("no measured data of {engine} {version}"),
                values=(("engine", request.engine), ("version", version)),
            )
        )
    if releases and gpu.vendor not in coefficients.vendors.get(request.engine, []):
        gaps.append(
            Wording(
                template=N_("no measured data of {engine} on {vendor} GPUs"),
                values=(("engine", request.engine), ("vendor", gpu.vendor)),
            )
        )
    return _Release(version=version or "unversioned", gaps=tuple(gaps))


def _max_seqs(request: PerfRequest, gpu: Gpu) -> int:
    """--max-num-seqs, else the engine's own default on this GPU (catalog/data/engine_limits.csv)."""
    if request.max_num_seqs:
        return request.max_num_seqs
    limit = default_max_num_seqs(request.engine, gpu)
    return limit.max_num_seqs if limit else int(str(model_facts()["fit"]["default_max_num_seqs"]))


def estimate(request: PerfRequest, calibrations: Sequence[Calibration] = ()) -> Estimate:
    """Estimate one configuration (see PerfRequest); calibrations are stored probe runs of it, if any."""
    _engine_name(request.engine)
    return _estimate(request, tuple(calibrations))


@dataclass(frozen=True)
class _Setup:
    """Everything a level's simulation needs, resolved once: advice, layout, limits, engine and workload."""

    advice: Advice
    gpu: Gpu
    shape: ReplicaShape
    kv_dtype: str
    capacity: int
    max_seqs: int
    base: Engine
    workload: Workload
    family: str
    release: _Release


def _setup(request: PerfRequest) -> _Setup:
    advice = _advice(request, max(request.concurrency, default=1))
    gpu, model = find_gpu(advice.gpu_id), advice.model
    if not advice.memory.fits and not request.layout_given:
        raise PerfError(f"gpus: {model.name} does not fit {request.gpus}x {gpu.name} in {advice.quantization}")
    shape = _shape(request, advice)
    kv_dtype = advice.kv_cache_dtype if request.kv_cache == "auto" else request.kv_cache
    family, family_name = family_for(request.engine)
    accepted, computed, draft_share = _speculation(request, model)
    capacity = kv_capacity_tokens(model, gpu, advice.quantization, kv_dtype, shape, request.context_tokens)
    if capacity <= 0:
        raise PerfError(f"gpus: {model.name} does not fit {shape.gpus}x {gpu.name} in {advice.quantization}")
    max_seqs = _max_seqs(request, gpu)
    base = replica_engine(
        model,
        gpu,
        quant=advice.quantization,
        kv_dtype=kv_dtype,
        shape=shape,
        theta=family.theta,
        max_seqs=max_seqs,
        budget_tokens=advice.max_num_batched_tokens,
        context=request.context_tokens,
        accepted_per_step=accepted,
        computed_per_step=computed,
        draft_share=draft_share,
        kv_capacity=capacity,
        ttft_readout=family.ttft,
    )
    workload = Workload(
        request.input_tokens, request.output_tokens, cached_tokens=int(request.input_tokens * request.prefix_cache_hit)
    )
    return _Setup(
        advice=advice,
        gpu=gpu,
        shape=shape,
        kv_dtype=kv_dtype,
        capacity=capacity,
        max_seqs=max_seqs,
        base=base,
        workload=workload,
        family=family_name,
        release=_release(request, gpu),
    )


def _correction(
    request: PerfRequest, setup: _Setup, calibrations: Sequence[Calibration], published: Sequence[Point]
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


@lru_cache(maxsize=4096)
def _estimate(request: PerfRequest, calibrations: tuple[Calibration, ...]) -> Estimate:
    setup = _setup(request)
    advice, gpu, shape = setup.advice, setup.gpu, setup.shape
    published = _matching_published(
        gpu, advice.model, request.engine, advice.quantization, shape.gpus, setup.release.version
    )
    fix, calibration_notes = _correction(request, setup, calibrations, published)
    published = [p for p in published if near_shape(request, p.input_tokens, p.output_tokens)]
    engine = _scaled(setup.base, fix.step_scale) if fix else setup.base
    ttft_factor = fix.ttft_scale if fix else 1.0
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
    bands, basis = band_and_basis(
        gpu, request.engine, setup.family, setup.release.version, setup.release.gaps, fix, published
    )
    own_notes: list[Wording] = list(calibration_notes)
    if setup.family != request.engine:
        own_notes.append(
            Wording(
                template=N_("no public measurements of {engine}: its step time uses the pooled coefficients"),
                values=(("engine", request.engine),),
            )
        )
    if shape.gpus != _gpus(request):
        own_notes.append(
            Wording(
                template=N_(
                    "{gpus} GPUs: estimated per copy of {per_copy} GPU(s), {copies} copies, the layout the advisor "
                    "found the engines accept"
                ),
                values=(
                    ("gpus", str(_gpus(request))),
                    ("per_copy", str(shape.gpus)),
                    ("copies", str(advice.memory.replicas)),
                ),
            )
        )
    if setup.release.gaps:
        own_notes.append(
            Wording(
                template=N_("extrapolated: {gaps}; the bands are the error measured when whole sources were held out"),
                values=(("gaps", Wording.joined(setup.release.gaps)),),
            )
        )
    notes = [*advice.warnings, *(w.worded() for w in own_notes)]
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
        layout=Layout.of(shape, request, replicas=advice.memory.replicas if not request.layout_given else 1),
        max_num_seqs=setup.max_seqs,
        max_num_batched_tokens=advice.max_num_batched_tokens,
        kv_capacity_tokens=setup.capacity,
        levels=tuple(levels),
        max_output_tok_s=best.output_tok_s,
        max_throughput_concurrency=ceiling,
        best_concurrency_within_slo=best_c,
        best_request_rate_within_slo_rps=best_rate,
        slo_level=at(best_c) if best_c else None,
        band=bands["output_tok_s"],
        bands=bands,
        basis=basis,
        notes=tuple(notes),
        note_wordings=tuple(own_notes),
    )
