"""Throughput for the cost model from perf's estimate at the SLO operating point, labelled as an estimate."""

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, ValidationError

from catalog import find_gpu, get_engine
from catalog.quantization import AUTO
from i18n import Translate, identity
from perf import (
    ENGINE_FAMILIES,
    Calibration,
    Estimate,
    LevelEstimate,
    PerfError,
    PerfRequest,
    Slo,
    estimate,
    request_from_advice,
)
from perf.hardware import modelled
from selector import Advice, advise
from tco.inputs import CUSTOM_GPU, TcoInputs

SIGNIFICANT_DIGITS = 4  # the throughput a link carries: 1235 tok/s, 12.35 tok/s
MIN_TPS = 0.01  # the cost page's lowest throughput


def link_tps(output_tok_s: float) -> float:
    """Throughput as a link carries it (four significant digits), so the linked page prices the same number."""
    return max(float(f"{output_tok_s:.{SIGNIFICANT_DIGITS}g}"), MIN_TPS)


class OperatingPoint(BaseModel):
    """The level a replica serves at: the highest concurrency within the SLO, else concurrency 1 (misses the SLO)."""

    model_config = ConfigDict(frozen=True)

    estimate: Estimate
    level: LevelEstimate
    meets_slo: bool

    @property
    def concurrency(self) -> int:
        return self.level.concurrency or 1

    @property
    def output_tok_s(self) -> float:
        """Output tokens/s per replica at this point, as a link carries it."""
        return link_tps(self.level.output_tok_s)

    def band_words(self, tr: Translate = identity, group: str | None = None) -> str:
        """'bands tok/s 0.58–1.15×, TPOT ..., TTFT ... of the estimate (8 in 10 held-out measurements of ...)'.

        `group` words the held-out group as a page names it (engines by name); by default the band's own words.
        """
        return tr("bands {bands} of the estimate (8 in 10 held-out measurements of {group} fell within)").format(
            bands=self.estimate.bands_text(tr), group=self.estimate.band.group_text(tr) if group is None else group
        )

    def short_label_text(self, tr: Translate = identity) -> str:
        """'estimate (band 0.58–1.15×, basis fitted)'."""
        band = self.estimate.band
        return tr("estimate (band {low}–{high}×, basis {basis})").format(
            low=f"{band.low_ratio:.2f}", high=f"{band.high_ratio:.2f}", basis=self.estimate.basis.kind_text(tr)
        )

    def label_text(self, tr: Translate = identity, group: str | None = None, basis: str | None = None) -> str:
        """'estimate: band 0.58–1.15× ...; basis fitted: ...': how a page names the number (group, basis: as worded)."""
        return tr("estimate: {band}; basis {basis}").format(
            band=self.band_words(tr, group), basis=self.estimate.basis.worded(tr) if basis is None else basis
        )

    @property
    def band_text(self) -> str:
        """The band in English (band_words)."""
        return self.band_words()

    @property
    def short_label(self) -> str:
        """The short label in English (short_label_text)."""
        return self.short_label_text()

    @property
    def label(self) -> str:
        """The label in English (label_text)."""
        return self.label_text()


def level_at(est: Estimate, concurrency: int) -> LevelEstimate | None:
    """The estimate's closed-loop level at this concurrency, if it has one."""
    return next((lv for lv in est.levels if lv.concurrency == concurrency), None)


def operating_point(request: PerfRequest, calibrations: Sequence[Calibration] = ()) -> OperatingPoint:
    """Estimate the configuration and pick its SLO operating point (perf caches repeated requests).

    Raises PerfError (a message naming the field) or NoEstimateError (an engine without a step-time model).
    """
    est = estimate(request.model_copy(update={"concurrency": tuple({1, *request.concurrency})}), calibrations)
    if est.slo_level is not None:
        return OperatingPoint(estimate=est, level=est.slo_level, meets_slo=True)
    first = level_at(est, 1)
    if first is None:  # concurrency 1 is always asked for above
        raise PerfError("concurrency: the estimate has no level at concurrency 1")
    return OperatingPoint(estimate=est, level=first, meets_slo=False)


def perf_request(inputs: TcoInputs, concurrency: tuple[int, ...] = (1,)) -> PerfRequest:
    """The estimate the cost page's "Estimate throughput" asks for: its GPU, count, model, engine and tokens."""
    if inputs.gpu == CUSTOM_GPU:
        raise PerfError("gpu: pick a catalog GPU to estimate its throughput (a custom GPU has no datasheet)")
    try:
        return PerfRequest(
            gpu=inputs.gpu,
            gpus=inputs.gpus_per_replica,
            model=inputs.model,
            engine=inputs.engine,
            engine_version=inputs.engine_version,
            quant=inputs.quant_method,
            input_tokens=max(inputs.in_tokens_per_request, 1),
            output_tokens=inputs.out_tokens_per_request,
            prefix_cache_hit=inputs.cached_share,
            concurrency=concurrency,
            slo=Slo(ttft_p50_ms=inputs.ttft_p50_ms, ttft_p99_ms=inputs.ttft_p99_ms, tpot_p50_ms=inputs.tpot_p50_ms),
        )
    except ValidationError as exc:
        problems = "; ".join(f"{e['loc'][0] if e.get('loc') else 'input'}: {e['msg']}" for e in exc.errors())
        raise PerfError(f"cannot estimate these inputs ({problems})") from exc


def estimate_tps(inputs: TcoInputs, calibrations: Sequence[Calibration] = ()) -> OperatingPoint:
    """The cost page's estimated throughput: the SLO operating point of its GPU x count, model, engine, tokens."""
    return operating_point(perf_request(inputs), calibrations)


class AdviceEstimate(BaseModel):
    """perf's estimate for one engine of an advice, at the advice's concurrency and at the SLO operating point."""

    model_config = ConfigDict(frozen=True)

    engine: str
    engine_name: str
    quant: str
    input_tokens: int
    output_tokens: int
    target_concurrency: int
    at_target: LevelEstimate | None = None
    point: OperatingPoint | None = None
    missing: str = ""  # why there is no estimate ('' when there is one)
    unmodelled_gpu: str = ""  # the GPU's name when the step-time model cannot speak for it at all (an Ascend NPU)


def estimate_advice(
    advice: Advice, *, runner_up: bool = False, calibrations: Sequence[Calibration] = ()
) -> AdviceEstimate:
    """The estimate for the advice's engine, or its runner-up with the quantization the advisor picks for it.

    Only engines with a step-time model (perf.ENGINE_FAMILIES) get one; `missing` says why not otherwise.
    """
    request = advice.request
    engine, quant = advice.engine, advice.quantization
    if runner_up:
        engine = advice.runner_up
        if engine in ENGINE_FAMILIES:
            quant = advise(request.model_copy(update={"engine": engine, "quant": AUTO})).quantization
    in_tokens, out_tokens = request.in_tokens_per_request, request.out_tokens_per_request
    base = AdviceEstimate(
        engine=engine,
        engine_name=get_engine(engine).name,
        quant=quant,
        input_tokens=in_tokens,
        output_tokens=out_tokens,
        target_concurrency=request.concurrency,
    )
    if engine not in ENGINE_FAMILIES:
        return base.model_copy(update={"missing": f"no estimate for {base.engine_name}"})
    gpu = find_gpu(advice.gpu_id)
    if not modelled(gpu):
        missing = f"no estimate on {gpu.name}: the step-time model has no measurements on {gpu.vendor} NPUs"
        return base.model_copy(update={"missing": missing, "unmodelled_gpu": gpu.name})
    try:
        version = "" if runner_up else None  # the asked release names the chosen engine
        point = operating_point(request_from_advice(request, engine, quant, engine_version=version), calibrations)
    except PerfError as exc:
        return base.model_copy(update={"missing": f"no estimate for {base.engine_name}: {exc}"})
    return base.model_copy(update={"point": point, "at_target": level_at(point.estimate, request.concurrency)})
