"""The estimator's entry point: a configuration in, per-level figures, the SLO operating point, band and basis out."""

from collections.abc import Sequence
from functools import lru_cache

from catalog import Gpu, GpuLookupError, find_gpu
from i18n import N_
from perf.calibrate import Correction, correction
from perf.coefficients import NEW_ARCH, band_key, load_coefficients, theta_for
from perf.errors import NoEstimateError, PerfError
from perf.features import ReplicaShape
from perf.fitset import Point, published_points
from perf.hardware import model_facts
from perf.inputs import ENGINE_FAMILIES, PerfRequest, Slo
from perf.levels import closed_level, poisson_level, search_concurrency, search_rate
from perf.replica import kv_capacity_tokens, replica_engine
from perf.result import (
    CALIBRATING_GROUP,
    Band,
    Basis,
    Calibration,
    Estimate,
    Layout,
    LevelEstimate,
    MeasuredLevel,
    Percentiles,
    Wording,
)
from perf.simulate import Engine, Workload
from selector import Advice, AdviceRequest, SelectorError, advise, find_model
from selector.models import ModelSpec


def _min_groups() -> int:
    value = model_facts()["band"]["min_groups"]
    assert isinstance(value, int)
    return value


def _engine_name(engine: str) -> str:
    if engine not in ENGINE_FAMILIES:
        raise NoEstimateError(
            f"engine: no estimate for '{engine}' (the step-time model covers {', '.join(ENGINE_FAMILIES)})"
        )
    return engine


def _advice(request: PerfRequest, concurrency: int) -> Advice:
    try:
        gpu = find_gpu(request.gpu)
    except GpuLookupError as exc:
        raise PerfError(f"gpu: {exc}") from exc
    try:
        model = find_model(request.model)
    except SelectorError as exc:
        raise PerfError(f"model: {exc}") from exc
    try:
        advice = advise(
            AdviceRequest(
                gpu=gpu.id,
                gpus=request.gpus,
                model=model.id,
                engine=request.engine,
                quant=request.quant,
                context=max(request.context_tokens, 256),
                concurrency=min(concurrency, 4096),
            )
        )
    except (SelectorError, ValueError) as exc:
        raise PerfError(str(exc)) from exc
    if advice.engine != request.engine:
        raise PerfError(f"engine: {request.engine} does not run on {gpu.name} (the advisor: {advice.switch_when})")
    if request.quant != "auto" and advice.quantization != request.quant:
        raise PerfError(
            f"quant: {request.quant} is not available for {model.name} with {advice.engine_name} on {gpu.name}; "
            f"the advisor would use {advice.quantization}"
        )
    return advice


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


def _matching_published(gpu: Gpu, model: ModelSpec, engine: str, quant: str, gpus: int) -> list[Point]:
    return [
        p
        for p in published_points()
        if (p.gpu, p.model, p.engine, p.quant, p.shape.gpus) == (gpu.id, model.id, engine, quant, gpus)
        and p.concurrency
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


def _calibrated_by(runs: Sequence[str], published: Sequence[Point]) -> Wording | str:
    """What calibrated an estimate: its probe runs, the published measurements, or both."""
    named: list[Wording] = []
    if runs:
        run_list = (("runs", ", ".join(runs)),)
        named.append(
            Wording(template=N_("probe runs {runs}") if len(runs) > 1 else N_("probe run {runs}"), values=run_list)
        )
    if published:
        rows = "; ".join(sorted({p.row_id for p in published}))
        named.append(Wording(template=N_("published measurements ({rows})"), values=(("rows", rows),)))
    if len(named) == 2:
        return Wording(template=N_("{first} and {second}"), values=(("first", named[0]), ("second", named[1])))
    return named[0] if named else ""


def _band_and_basis(
    gpu: Gpu, engine: str, family: str, fix: Correction | None, published: Sequence[Point]
) -> tuple[Band, Basis]:
    coefficients = load_coefficients()
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
        band = Band(low_ratio=fix.low_ratio, high_ratio=fix.high_ratio, group=CALIBRATING_GROUP, groups=fix.levels)
        return band, Basis(kind="calibrated", text=wording.worded(), run_ids=tuple(runs), wording=wording)
    fitted_pairs = coefficients.fitted_groups.get(engine, [])
    arch_key = band_key(engine, gpu.arch)
    on_this_arch = arch_key in coefficients.bands
    keys = (
        (arch_key, band_key(engine), "all") if on_this_arch else (band_key(NEW_ARCH, engine), band_key(NEW_ARCH, "all"))
    )
    stats, group = None, ""
    for key in keys:
        candidate = coefficients.bands.get(key)
        if candidate and candidate.groups >= _min_groups():
            stats, group = candidate, key
            break
    if stats is None:
        group = keys[-1]
        stats = coefficients.bands[group]
    band = Band(low_ratio=stats.low_ratio, high_ratio=stats.high_ratio, group=group, groups=stats.groups)
    source = Wording(template=N_("its own") if family == engine else N_("the pooled (vLLM, SGLang, TensorRT-LLM)"))
    if on_this_arch:
        wording = Wording(
            template=N_(
                "fitted: {source} coefficients from {points} public measurements; {engine} on {arch} GPUs is in the "
                "fit set ({pairs} model/GPU pairs for {engine})"
            ),
            values=(
                ("source", source),
                ("points", str(coefficients.families[family].points)),
                ("engine", engine),
                ("arch", str(gpu.arch)),
                ("pairs", str(len(fitted_pairs))),
            ),
        )
        return band, Basis(kind="fitted", text=wording.worded(), wording=wording)
    wording = Wording(
        template=N_(
            "datasheet: no public measurement of {engine} on {arch} GPUs; {gpu}'s datasheet bandwidth and tensor "
            "rates with {source} coefficients fitted on other GPUs"
        ),
        values=(("engine", engine), ("arch", str(gpu.arch)), ("gpu", gpu.name), ("source", source)),
    )
    return band, Basis(kind="datasheet", text=wording.worded(), wording=wording)


def _scaled(engine: Engine, scale: float) -> Engine:
    return Engine(
        cost=engine.cost,
        theta=tuple(t * scale for t in engine.theta),
        max_seqs=engine.max_seqs,
        budget_tokens=engine.budget_tokens,
        kv_capacity_tokens=engine.kv_capacity_tokens,
        accepted_per_step=engine.accepted_per_step,
        computed_per_step=engine.computed_per_step,
    )


def _with_ttft(level: LevelEstimate, factor: float, slo: Slo) -> LevelEstimate:
    if factor == 1.0:
        return level
    ttft = Percentiles(p50=round(level.ttft_ms.p50 * factor, 3), p99=round((level.ttft_ms.p99 or 0) * factor, 3))
    meets = ttft.p50 <= slo.ttft_p50_ms and (ttft.p99 or 0) <= slo.ttft_p99_ms and level.tpot_ms.p50 <= slo.tpot_p50_ms
    return level.model_copy(update={"ttft_ms": ttft, "meets_slo": meets})


def estimate(request: PerfRequest, calibrations: Sequence[Calibration] = ()) -> Estimate:
    """Estimate one configuration (see PerfRequest); calibrations are stored probe runs of it, if any."""
    _engine_name(request.engine)
    return _estimate(request, tuple(calibrations))


@lru_cache(maxsize=4096)
def _estimate(request: PerfRequest, calibrations: tuple[Calibration, ...]) -> Estimate:
    concurrency_hint = max(request.concurrency, default=1)
    advice = _advice(request, concurrency_hint)
    gpu, model = find_gpu(advice.gpu_id), advice.model
    memory = advice.memory
    if not memory.fits:
        raise PerfError(f"gpus: {model.name} does not fit {request.gpus}x {gpu.name} in {advice.quantization}")
    shape = ReplicaShape(
        tensor_parallel=memory.tensor_parallel,
        pipeline_parallel=memory.pipeline_parallel,
        attention_data_parallel=memory.attention_data_parallel,
        expert_parallel=memory.expert_parallel,
    )
    kv_dtype = advice.kv_cache_dtype if request.kv_cache == "auto" else request.kv_cache
    theta, family = theta_for(request.engine)
    accepted, computed, draft_share = _speculation(request, model)
    capacity = kv_capacity_tokens(model, gpu, advice.quantization, kv_dtype, shape, request.context_tokens)
    base = replica_engine(
        model,
        gpu,
        quant=advice.quantization,
        kv_dtype=kv_dtype,
        shape=shape,
        theta=theta,
        max_seqs=advice.max_num_seqs,
        budget_tokens=advice.max_num_batched_tokens,
        context=request.context_tokens,
        accepted_per_step=accepted,
        computed_per_step=computed,
        draft_share=draft_share,
        kv_capacity=capacity,
    )
    workload = Workload(
        request.input_tokens, request.output_tokens, cached_tokens=int(request.input_tokens * request.prefix_cache_hit)
    )
    slo = request.slo
    published = _matching_published(gpu, model, request.engine, advice.quantization, shape.gpus)
    runs = [
        c
        for c in calibrations
        if (c.gpu, c.gpus, c.model, c.engine, c.quant)
        == (gpu.id, request.gpus, model.id, request.engine, advice.quantization)
    ]
    extra = _published_calibration(published)
    fix = None
    if runs or extra:

        def measured_level(m: MeasuredLevel) -> LevelEstimate | None:
            if not m.concurrency:
                return None
            w = Workload(max(int(m.input_tokens), 1), max(int(m.output_tokens), 1))
            try:
                return closed_level(base, w, slo, m.concurrency)
            except PerfError:
                return None

        fix = correction([*runs, *([extra] if extra else [])], measured_level)
    engine = _scaled(base, fix.step_scale) if fix else base
    ttft_factor = fix.ttft_scale if fix else 1.0

    cache: dict[int, LevelEstimate] = {}

    def at(c: int) -> LevelEstimate:
        if c not in cache:
            cache[c] = _with_ttft(closed_level(engine, workload, slo, c), ttft_factor, slo)
        return cache[c]

    per_seq = max(request.context_tokens, 1)
    ceiling = max(1, min(advice.max_num_seqs, capacity // per_seq))
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
            rate_levels[r] = _with_ttft(poisson_level(engine, workload, slo, r), ttft_factor, slo)
        return rate_levels[r]

    levels.extend(rate_at(r) for r in request.request_rates_rps)
    best_rate = search_rate(rate_at, best.req_s) if request.request_rates_rps or request.find_max_rate else None
    band, basis = _band_and_basis(gpu, request.engine, family, fix, published)
    notes = list(advice.warnings)
    own_notes: list[Wording] = []
    if family != request.engine:
        own_notes.append(
            Wording(
                template=N_("no public measurements of {engine}: its step time uses the pooled coefficients"),
                values=(("engine", request.engine),),
            )
        )
    notes += [w.worded() for w in own_notes]
    return Estimate(
        request=request,
        gpu_id=gpu.id,
        gpu_name=gpu.name,
        model_id=model.id,
        model_name=model.name,
        engine=request.engine,
        quant=advice.quantization,
        kv_cache_dtype=kv_dtype,
        layout=Layout(
            gpus=shape.gpus,
            tensor_parallel=shape.tensor_parallel,
            pipeline_parallel=shape.pipeline_parallel,
            expert_parallel=shape.expert_parallel,
            attention_data_parallel=shape.attention_data_parallel,
            replicas=memory.replicas,
        ),
        max_num_seqs=advice.max_num_seqs,
        max_num_batched_tokens=advice.max_num_batched_tokens,
        kv_capacity_tokens=capacity,
        levels=tuple(levels),
        max_output_tok_s=best.output_tok_s,
        max_throughput_concurrency=ceiling,
        best_concurrency_within_slo=best_c,
        best_request_rate_within_slo_rps=best_rate,
        slo_level=at(best_c) if best_c else None,
        band=band,
        basis=basis,
        notes=tuple(notes),
        note_wordings=tuple(own_notes),
    )
