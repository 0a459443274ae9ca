"""A ranking of serving options: GPU x count x engine x quantization, estimated by perf and priced by the cost model.

Every priced catalog GPU x 1, 2, 4, 8 GPUs x engine with a step-time model x quantization the advisor allows is
estimated at its SLO operating point (the highest concurrency within the SLO) and priced as the cost page prices it,
cheapest first; options that miss the SLO even at concurrency 1 come last.
"""

from collections import Counter
from collections.abc import Callable, Sequence
from enum import StrEnum
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from catalog import GpuLookupError, engine_release, find_gpu, get_engine, load_gpus
from catalog.engines import find_engine
from catalog.quantization import get_quant
from i18n import N_, Translate, identity
from perf import ENGINE_FAMILIES, Band, Basis, Calibration, NoEstimateError, PerfError, PerfRequest, Slo
from perf.result import Wording, bands_text
from selector import AdviceRequest, SelectorError, advise, gate
from selector.inputs import MIN_CONTEXT_TOKENS
from selector.rules import load_rules
from tco.cost import capacity_of, fleet_of
from tco.inputs import TcoInputs, TpsSource, catalog_price, known_model, shared_field
from tco.money import Currency
from tco.throughput import OperatingPoint, operating_point

GPU_COUNTS = (1, 2, 4, 8)
SKIPPED_KINDS = ("cpu", "apple")  # served by CPU or Metal builds, which have no step-time model
PERF_MIN_CONTEXT = 256  # perf asks the advisor for at least this context; the fit check asks the same
PRICE_SEPARATOR = ":"
MAX_PRICE = 100_000
_REASONS: dict[str, Wording] = {}  # why an option was left out, in English -> its wording for other languages


def _reason(template: str, **values: str) -> str:
    """A reason for leaving options out: the English text (the key of `Ranking.skipped`), its wording kept."""
    wording = Wording(template=template, values=tuple(values.items()))
    text = wording.worded()
    _REASONS.setdefault(text, wording)
    return text


def reason_text(reason: str, tr: Translate = identity) -> str:
    """A key of `Ranking.skipped` in the language of `tr`."""
    wording = _REASONS.get(reason)
    return reason if wording is None else wording.worded(tr)


class RankBy(StrEnum):
    """Which cost orders the ranking: as estimated, the monthly fleet, or the pessimistic end of the band."""

    PER_MILLION = "per_million"
    FLEET = "fleet"
    PESSIMISTIC = "pessimistic"  # cost per million output tokens if throughput comes in at the band's low end


class LatencyAxis(StrEnum):
    """The latency the chart puts against cost."""

    TPOT = "tpot"
    TTFT = "ttft"


def _price_item(value: str) -> str:
    """'H100:2.5' -> 'h100-80gb-sxm:2.5' (a catalog GPU and a price above 0)."""
    gpu_name, sep, price_text = value.rpartition(PRICE_SEPARATOR)
    if not sep or not gpu_name.strip():
        raise ValueError(f"'{value}' is not <gpu>{PRICE_SEPARATOR}<price per GPU-hour>")
    try:
        gpu_id = find_gpu(gpu_name.strip()).id
    except GpuLookupError as exc:
        raise ValueError(str(exc)) from exc
    try:
        price = float(price_text)
    except ValueError as exc:
        raise ValueError(f"'{price_text}' in '{value}' is not a price") from exc
    if not 0 < price <= MAX_PRICE:
        raise ValueError(f"the price in '{value}' must be above 0 and at most {MAX_PRICE:,}")
    return f"{gpu_id}{PRICE_SEPARATOR}{price:g}"


def _version_item(value: str) -> tuple[str, str]:
    """'trtllm:1.2.0rc6' -> ('tensorrt-llm', '1.2.0rc6'): an engine with a step-time model and a release."""
    engine_name, sep, version = value.partition(PRICE_SEPARATOR)
    if not sep or not engine_name.strip():
        raise ValueError(f"'{value}' is not <engine>{PRICE_SEPARATOR}<release>, e.g. vllm{PRICE_SEPARATOR}0.19.0")
    try:
        engine = find_engine(engine_name.strip()).id
    except SelectorError as exc:
        raise ValueError(str(exc)) from exc
    if engine not in ENGINE_FAMILIES:
        raise ValueError(f"no estimate for {engine}; allowed: {', '.join(ENGINE_FAMILIES)}")
    release = engine_release(version)
    assert isinstance(release, str)
    return engine, release


class CompareInputs(BaseModel):
    """Everything the comparison asks. Aliases are the /compare page's URL parameters (shared with /tco)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    model: str = Field(default=load_rules().defaults.model, alias="model", title=N_("Model"))
    traffic_requests_per_day: float = shared_field(TcoInputs, "traffic_requests_per_day")
    peak_to_average: float = shared_field(TcoInputs, "peak_to_average")
    target_utilization_pct: float = shared_field(TcoInputs, "target_utilization_pct")
    in_tokens_per_request: int = shared_field(TcoInputs, "in_tokens_per_request")
    out_tokens_per_request: int = shared_field(TcoInputs, "out_tokens_per_request")
    ttft_p50_ms: float = shared_field(TcoInputs, "ttft_p50_ms")
    ttft_p99_ms: float = shared_field(TcoInputs, "ttft_p99_ms")
    tpot_p50_ms: float = shared_field(TcoInputs, "tpot_p50_ms")
    currency: Currency = shared_field(TcoInputs, "currency")
    cny_per_usd: float = shared_field(TcoInputs, "cny_per_usd")
    prices: tuple[str, ...] = Field(
        default=(),
        alias="prices",
        title=N_("Price overrides"),
        description=N_("<gpu>:<price per GPU-hour in the currency>, comma-separated; replaces the catalog price"),
    )
    engines: tuple[str, ...] = Field(default=ENGINE_FAMILIES, alias="engines", min_length=1, title=N_("Engines"))
    versions: tuple[str, ...] = Field(
        default=(),
        alias="versions",
        title=N_("Engine releases"),
        description=N_(
            "<engine>:<release>, comma-separated (vllm:0.19.0); an engine not named is estimated at its newest release "
            "with measured data"
        ),
    )
    counts: tuple[int, ...] = Field(default=GPU_COUNTS, alias="counts", min_length=1, title=N_("GPU counts"))
    rank_by: RankBy = Field(default=RankBy.PER_MILLION, alias="rank_by", title=N_("Rank by"))
    latency: LatencyAxis = Field(default=LatencyAxis.TPOT, alias="latency", title=N_("Chart latency"))

    @field_validator("model", mode="before")
    @classmethod
    def _known_model(cls, value: object) -> object:
        return known_model(value)

    @field_validator("prices", mode="before")
    @classmethod
    def _prices(cls, value: object) -> object:
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if not isinstance(value, list | tuple):
            return value
        items = [_price_item(str(v)) for v in value]
        by_gpu = {item.rpartition(PRICE_SEPARATOR)[0]: item for item in items}  # the last price of a GPU wins
        return tuple(sorted(by_gpu.values()))

    @field_validator("versions", mode="before")
    @classmethod
    def _versions(cls, value: object) -> object:
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if not isinstance(value, list | tuple):
            return value
        by_engine = dict(_version_item(str(v)) for v in value)  # the last release of an engine wins
        return tuple(f"{e}{PRICE_SEPARATOR}{v}" for e, v in sorted(by_engine.items()) if v)

    @field_validator("engines", mode="before")
    @classmethod
    def _engines(cls, value: object) -> object:
        if not isinstance(value, list | tuple):
            return value
        wanted = {str(v).strip().lower() for v in value}
        unknown = sorted(wanted - set(ENGINE_FAMILIES))
        if unknown:
            raise ValueError(f"no estimate for {', '.join(unknown)}; allowed: {', '.join(ENGINE_FAMILIES)}")
        return tuple(e for e in ENGINE_FAMILIES if e in wanted)

    @field_validator("counts", mode="after")
    @classmethod
    def _counts(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        unknown = sorted(set(value) - set(GPU_COUNTS))
        if unknown:
            raise ValueError(f"GPU counts {unknown} are not offered; allowed: {', '.join(map(str, GPU_COUNTS))}")
        return tuple(sorted(set(value)))

    @property
    def priced_inputs(self) -> "CompareInputs":
        """The inputs an estimate or a price depends on: the view's ordering and chart axis set to their defaults."""
        return self.model_copy(update={"rank_by": RankBy.PER_MILLION, "latency": LatencyAxis.TPOT})

    @property
    def engine_versions(self) -> dict[str, str]:
        """Engine id -> the release to estimate ('' or absent: the newest with measured data)."""
        return {engine: version for engine, _, version in (v.partition(PRICE_SEPARATOR) for v in self.versions)}

    @property
    def price_overrides(self) -> dict[str, float]:
        """GPU id -> price per GPU-hour in the currency."""
        return {gpu: float(price) for gpu, _, price in (p.rpartition(PRICE_SEPARATOR) for p in self.prices)}

    @property
    def slo(self) -> Slo:
        return Slo(ttft_p50_ms=self.ttft_p50_ms, ttft_p99_ms=self.ttft_p99_ms, tpot_p50_ms=self.tpot_p50_ms)

    @property
    def context_tokens(self) -> int:
        return max(self.in_tokens_per_request + self.out_tokens_per_request, PERF_MIN_CONTEXT)


class RankedOption(BaseModel):
    """One option at its SLO operating point, priced; figures per replica unless they say fleet."""

    model_config = ConfigDict(frozen=True)

    rank: int
    gpu_id: str
    gpu_name: str
    gpus_per_replica: int
    replicas: int
    total_gpus: int
    engine: str
    engine_name: str
    quant: str
    quant_name: str
    concurrency: int
    ttft_p50_ms: float
    ttft_p99_ms: float | None
    tpot_p50_ms: float
    output_tok_s: float
    band_low: float
    band_high: float
    band_group: str
    basis_kind: str
    basis_text: str
    band: Band
    bands: dict[str, Band]  # output_tok_s, tpot_ms, ttft_ms
    basis: Basis
    engine_version: str
    price_per_gpu_hour: float
    price_overridden: bool
    cost_per_million_output_tokens: float
    fleet_cost_per_month: float
    meets_slo: bool
    tco_inputs: TcoInputs
    advice_request: AdviceRequest

    @property
    def label(self) -> str:
        """'2x H100 80GB SXM · vllm · fp8'."""
        return f"{self.gpus_per_replica}x {self.gpu_name} · {self.engine_name} · {self.quant_name}"

    @property
    def cost_per_million_range(self) -> tuple[float, float]:
        """Cost per million output tokens if throughput comes in at the band's high and at its low end."""
        return self.cost_per_million_output_tokens / self.band_high, self.cost_per_million_output_tokens / self.band_low

    @property
    def datasheet_only(self) -> bool:
        """No measurement of this engine on this GPU architecture backs the estimate: datasheet figures alone."""
        return self.basis_kind == "datasheet"

    def bands_text(self, tr: Translate = identity) -> str:
        """The three bands in the language of `tr`."""
        return bands_text(self.bands, tr)

    def latency_ms(self, axis: LatencyAxis) -> float:
        return self.tpot_p50_ms if axis == LatencyAxis.TPOT else self.ttft_p50_ms

    def band_group_text(self, tr: Translate = identity) -> str:
        """`band_group` in the language of `tr`."""
        return self.band.group_text(tr)

    def basis_kind_text(self, tr: Translate = identity) -> str:
        """`basis_kind` in the language of `tr`."""
        return self.basis.kind_text(tr)

    def basis_worded(self, tr: Translate = identity) -> str:
        """`basis_text` in the language of `tr`."""
        return self.basis.worded(tr)


class Ranking(BaseModel):
    """The ranked options (SLO-meeting first, by the chosen cost), and what was left out and why (counts)."""

    model_config = ConfigDict(frozen=True)

    inputs: CompareInputs
    options: tuple[RankedOption, ...]
    considered: int
    skipped: dict[str, int]

    @property
    def meeting(self) -> tuple[RankedOption, ...]:
        return tuple(o for o in self.options if o.meets_slo)

    @property
    def top(self) -> RankedOption | None:
        return self.options[0] if self.options else None


class Candidate(BaseModel):
    """One GPU x count x engine x quantization to check and estimate."""

    model_config = ConfigDict(frozen=True)

    gpu: str
    gpus: int
    engine: str
    quant: str


Progress = Callable[[int, int], None]
"""Called as (options done, options in all) while the ranking runs."""


def candidates(inputs: CompareInputs) -> tuple[list[Candidate], Counter[str]]:
    """Every priced catalog GPU x count x engine x quantization that passes the quick gates; skips counted by reason.

    The quick gates are the advisor's own tables (the engine runs on the GPU's platform, serves the format, and
    the architecture gate allows it); the advisor itself then confirms each one (see `advised`).
    """
    overrides = inputs.price_overrides
    skipped: Counter[str] = Counter()
    found: list[Candidate] = []
    for gpu in load_gpus():
        if gpu.kind in SKIPPED_KINDS:
            skipped[_reason(N_("GPU types of kind {kind} (no step-time model)"), kind=gpu.kind)] += 1
            continue
        if gpu.id not in overrides and catalog_price(gpu.id, inputs.currency, inputs.cny_per_usd) is None:
            skipped[_reason(N_("GPU types without a public price (give one in prices)"))] += 1
            continue
        for engine_id in inputs.engines:
            engine = get_engine(engine_id)
            if not engine.runs_on_gpu(gpu) or not engine.launchable:
                skipped[_reason(N_("engine does not run on the GPU"))] += len(inputs.counts)
                continue
            for quant in engine.quant_methods:
                if not gate(quant, gpu).allowed:
                    skipped[_reason(N_("quantization refused by the architecture gate"))] += len(inputs.counts)
                    continue
                found.extend(Candidate(gpu=gpu.id, gpus=n, engine=engine_id, quant=quant) for n in inputs.counts)
    return found, skipped


@lru_cache(maxsize=16_384)
def advised(candidate: Candidate, model: str, context: int) -> tuple[int, str]:
    """Ask the advisor with engine and quantization pinned: (GPUs per model copy, '') or (0, why not).

    An option stays when the advice keeps both pins and the model fits one node. Cached: the inputs are frozen and
    the advisor is pure.
    """
    try:
        advice = advise(
            AdviceRequest(
                gpu=candidate.gpu,
                gpus=candidate.gpus,
                model=model,
                engine=candidate.engine,
                quant=candidate.quant,
                context=max(context, MIN_CONTEXT_TOKENS),
                concurrency=1,  # as perf asks it for the SLO search, so the layout is the one perf estimates
            )
        )
    except SelectorError as exc:
        return 0, _reason(N_("the advisor refuses it ({error})"), error=type(exc).__name__)
    if advice.engine != candidate.engine:
        return 0, _reason(N_("the advisor does not keep the engine"))
    if advice.quantization != candidate.quant:
        return 0, _reason(N_("the advisor refuses the quantization (engine or model gate)"))
    memory = advice.memory
    if not memory.fits or memory.nodes > 1 or memory.gpus != candidate.gpus:
        return 0, _reason(N_("the model does not fit"))
    return memory.split, ""


@lru_cache(maxsize=16_384)
def estimated(
    candidate: Candidate,
    model: str,
    in_tokens: int,
    out_tokens: int,
    slo: Slo,
    calibrations: tuple[Calibration, ...],
    version: str = "",
) -> OperatingPoint | str:
    """The option's SLO operating point at the engine release (''= newest with data), or why perf gives none."""
    request = PerfRequest(
        gpu=candidate.gpu,
        gpus=candidate.gpus,
        model=model,
        engine=candidate.engine,
        engine_version=version,
        quant=candidate.quant,
        input_tokens=max(in_tokens, 1),
        output_tokens=out_tokens,
        concurrency=(1,),
        slo=slo,
    )
    try:
        return operating_point(request, calibrations)
    except NoEstimateError as exc:
        return _reason(N_("no estimate ({error})"), error=str(exc))
    except PerfError as exc:
        return _reason(N_("perf refused it ({error})"), error=str(exc).split(":")[0])


def _price(inputs: CompareInputs, gpu_id: str) -> tuple[float, bool]:
    overrides = inputs.price_overrides
    if gpu_id in overrides:
        return overrides[gpu_id], True
    price = catalog_price(gpu_id, inputs.currency, inputs.cny_per_usd)
    assert price is not None  # candidates() keeps only priced GPUs
    return price, False


def price_option(inputs: CompareInputs, candidate: Candidate, split: int, point: OperatingPoint) -> RankedOption:
    """Cost one option with the cost model, through the very inputs its /tco link opens."""
    price, overridden = _price(inputs, candidate.gpu)
    est, level = point.estimate, point.level
    tco_inputs = TcoInputs.model_validate(
        {
            "gpu": candidate.gpu,
            "price": price,
            "currency": inputs.currency,
            "fx": inputs.cny_per_usd,
            "gpus": split,
            "tps": point.output_tok_s,
            "out_tokens": inputs.out_tokens_per_request,
            "in_tokens": inputs.in_tokens_per_request,
            "traffic": inputs.traffic_requests_per_day,
            "peak": inputs.peak_to_average,
            "util": inputs.target_utilization_pct,
            "tps_source": TpsSource.ESTIMATE,
            "model": inputs.model,
            "engine": candidate.engine,
            "engine_version": inputs.engine_versions.get(candidate.engine, ""),
            "quant_method": candidate.quant,
            "ttft_p50": inputs.ttft_p50_ms,
            "ttft_p99": inputs.ttft_p99_ms,
            "tpot_p50": inputs.tpot_p50_ms,
        }
    )
    cap = capacity_of(tco_inputs)
    fleet = fleet_of(tco_inputs, cap)
    gpu = find_gpu(candidate.gpu)
    advice_request = AdviceRequest(
        gpu=candidate.gpu,
        gpus=split,
        model=inputs.model,
        engine=candidate.engine,
        engine_version=inputs.engine_versions.get(candidate.engine, ""),
        quant=candidate.quant,
        context=max(inputs.context_tokens, MIN_CONTEXT_TOKENS),
        concurrency=point.concurrency,
        in_tokens_per_request=inputs.in_tokens_per_request,
        out_tokens_per_request=inputs.out_tokens_per_request,
        traffic_requests_per_day=inputs.traffic_requests_per_day,
    )
    return RankedOption(
        rank=0,
        gpu_id=gpu.id,
        gpu_name=gpu.name,
        gpus_per_replica=split,
        replicas=fleet.replicas,
        total_gpus=fleet.gpus,
        engine=candidate.engine,
        engine_name=get_engine(candidate.engine).name,
        quant=candidate.quant,
        quant_name=get_quant(candidate.quant).name,
        concurrency=point.concurrency,
        ttft_p50_ms=level.ttft_ms.p50,
        ttft_p99_ms=level.ttft_ms.p99,
        tpot_p50_ms=level.tpot_ms.p50,
        output_tok_s=point.output_tok_s,
        band_low=est.band.low_ratio,
        band_high=est.band.high_ratio,
        band_group=est.band.group,
        basis_kind=est.basis.kind,
        basis_text=est.basis.text,
        band=est.band,
        bands=dict(est.bands),
        basis=est.basis,
        engine_version=est.engine_version,
        price_per_gpu_hour=price,
        price_overridden=overridden,
        cost_per_million_output_tokens=cap.cost_per_million_output_tokens,
        fleet_cost_per_month=fleet.fleet_cost_per_month,
        meets_slo=point.meets_slo,
        tco_inputs=tco_inputs,
        advice_request=advice_request,
    )


def sort_key(rank_by: RankBy) -> Callable[[RankedOption], tuple[Any, ...]]:
    """SLO-meeting options first, then the chosen cost, then the other cost, then fewer GPUs.

    The pessimistic order takes each option's cost at the low end of its throughput band: an option that rests on
    datasheets alone (a wide band) no longer wins on a figure nobody measured.
    """
    if rank_by == RankBy.FLEET:
        return lambda o: (not o.meets_slo, o.fleet_cost_per_month, o.cost_per_million_output_tokens, o.total_gpus)
    if rank_by == RankBy.PESSIMISTIC:
        return lambda o: (not o.meets_slo, o.cost_per_million_range[1], o.cost_per_million_output_tokens, o.total_gpus)
    return lambda o: (not o.meets_slo, o.cost_per_million_output_tokens, o.fleet_cost_per_month, o.total_gpus)


def ordered(options: Sequence[RankedOption], rank_by: RankBy) -> tuple[RankedOption, ...]:
    """The options sorted for `rank_by`, numbered from 1."""
    ranked = sorted(options, key=sort_key(rank_by))
    return tuple(o.model_copy(update={"rank": i}) for i, o in enumerate(ranked, start=1))


def rank(
    inputs: CompareInputs, *, calibrations: Sequence[Calibration] = (), progress: Progress | None = None
) -> Ranking:
    """Rank every option for the inputs (see the module docstring); `progress` hears (done, all) as it goes.

    Each option's check and estimate is cached, so a second ranking that changes only prices, traffic or the
    currency costs no estimate.
    """
    found, skipped = candidates(inputs)
    cals = tuple(calibrations)
    seen: set[tuple[str, int, str, str]] = set()
    options: list[RankedOption] = []
    for done, candidate in enumerate(found, start=1):
        if progress is not None:
            progress(done - 1, len(found))
        split, refused = advised(candidate, inputs.model, inputs.context_tokens)
        if refused:
            skipped[refused] += 1
            continue
        shape = (candidate.gpu, split, candidate.engine, candidate.quant)
        if shape in seen:  # e.g. 8 GPUs as two copies of 4: the same replica as the 4-GPU option
            skipped[_reason(N_("the same replica as a smaller count"))] += 1
            continue
        seen.add(shape)
        point = estimated(
            candidate,
            inputs.model,
            inputs.in_tokens_per_request,
            inputs.out_tokens_per_request,
            inputs.slo,
            cals,
            inputs.engine_versions.get(candidate.engine, ""),
        )
        if isinstance(point, str):
            skipped[point] += 1
            continue
        options.append(price_option(inputs, candidate, split, point))
    if progress is not None:
        progress(len(found), len(found))
    return Ranking(
        inputs=inputs, options=ordered(options, inputs.rank_by), considered=len(found), skipped=dict(skipped)
    )


def reordered(ranking: Ranking, inputs: CompareInputs) -> Ranking:
    """The same options for inputs that differ only in the ordering or the chart axis (nothing is estimated)."""
    if ranking.inputs.priced_inputs != inputs.priced_inputs:
        raise ValueError("the inputs change the prices or the estimates: rank them again")
    return ranking.model_copy(update={"inputs": inputs, "options": ordered(ranking.options, inputs.rank_by)})


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both coordinates (both lower is better), by the first.

    A point is dominated when another is at most as large on both and smaller on one; equal points all stay.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front: list[int] = []
    best_second = float("inf")
    for i in order:
        x, y = points[i]
        if y < best_second or (front and points[front[-1]] == (x, y)):
            front.append(i)
            best_second = min(best_second, y)
    return front
