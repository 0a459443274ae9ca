"""/compare's options: each GPU x count x engine x quantization gated, advised, estimated and priced, or why not."""

from collections import Counter
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from catalog import Gpu, find_gpu, get_engine, load_gpus
from catalog.prices import PriceTier, market_gpus
from catalog.quantization import get_quant
from i18n import N_, Translate, identity
from perf import Band, Basis, Calibration, NoEstimateError, PerfError, Slo, request_from_advice
from perf.hardware import UNMODELLED_KINDS
from perf.npu_measurements import measured_on
from perf.phases import PhaseSeconds
from perf.result import Wording, bands_text
from selector import AdviceRequest, SelectorError, gate
from selector.advisor import advise_remembered
from selector.inputs import MIN_CONTEXT_TOKENS
from tco.compare_inputs import ANY_MARKET, CompareInputs, LatencyAxis
from tco.cost import capacity_of, fleet_of
from tco.inputs import SplitBasis, TcoInputs, TpsSource
from tco.inverse import LevelPoint
from tco.lever_basis import lever_link_params
from tco.money import convert
from tco.prices import KIND_WORDS, MARKET_WORDS, PriceBook, snapshot_book
from tco.throughput import OperatingPoint, operating_point
from tco.tokens import TokensByKind, tokens_by_kind

# served by CPU, Metal or Ascend (CANN) builds, which have no step-time model
SKIPPED_KINDS = ("cpu", "apple", *UNMODELLED_KINDS)
_KIND_WORDS = {"cpu": N_("cpu"), "apple": N_("apple"), "npu": N_("NPU (Huawei Ascend)")}  # as the pages word them
_REASONS: dict[str, Wording] = {}  # why an option was left out, in English -> its wording for other languages


def left_out(template: str, **values: str | Wording) -> str:
    """A reason for leaving options out: the English text (the key of `Ranking.skipped`), its wording kept."""
    wording = Wording(template=template, values=tuple(values.items()))
    text = wording.worded()
    _REASONS.setdefault(text, wording)
    return text


def reason_text(reason: str, tr: Translate = identity) -> str:
    """A key of `Ranking.skipped` in the language of `tr`."""
    wording = _REASONS.get(reason)
    return reason if wording is None else wording.worded(tr)


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
    price_kind: str = ""  # the tier the price is of: on_demand, spot, ... ('' when overridden)
    price_provider: str = ""  # who sells it, and where ('' when overridden)
    price_region: str = ""
    price_fetched_at: str = ""
    cost_per_million_output_tokens: float
    fleet_cost_per_month: float
    meets_slo: bool
    tco_inputs: TcoInputs
    advice_request: AdviceRequest
    tokens: TokensByKind | None = None  # cost per million tokens by kind (tco/tokens.py)
    levels: tuple[LevelPoint, ...] = ()  # every estimated concurrency level (for the cost-ceiling question)
    topology: str = "agg"  # 'disagg': separate prefill and decode pools (tco/disagg_options.py); a replica is one xPyD
    pools: str = ""  # the xPyD layout of a disaggregated option ('' for one pool)

    @property
    def label(self) -> str:
        """'2x H100 80GB SXM · vllm · fp8', with ' · disaggregated 4P1D (...)' for separate pools."""
        return self.worded_label()

    def worded_label(self, tr: Translate = identity) -> str:
        """The label in the language of `tr` (only the separate pools' word is translated)."""
        text = f"{self.gpus_per_replica}x {self.gpu_name} · {self.engine_name} · {self.quant_name}"
        if self.topology != "disagg":
            return text
        return f"{text} · " + tr(N_("disaggregated {pools}")).format(pools=self.pools)

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


class Candidate(BaseModel):
    """One GPU x count x engine x quantization to check and estimate."""

    model_config = ConfigDict(frozen=True)

    gpu: str
    gpus: int
    engine: str
    quant: str


def candidates(inputs: CompareInputs, prices: PriceBook | None = None) -> tuple[list[Candidate], Counter[str]]:
    """Every priced catalog GPU x count x engine x quantization that passes the quick gates; skips counted by reason.

    The quick gates are the advisor's own tables (the engine runs on the GPU's platform, serves the format, and
    the architecture gate allows it); the advisor itself then confirms each one (see `advised`).
    """
    skipped: Counter[str] = Counter()
    found: list[Candidate] = []
    for gpu in load_gpus():
        excluded = gpu_excluded(inputs, gpu, prices)
        if excluded:
            skipped[excluded] += 1
            continue
        for engine_id in inputs.engines:
            engine = get_engine(engine_id)
            if not engine.runs_on_gpu(gpu) or not engine.launchable:
                skipped[left_out(N_("engine does not run on the GPU"))] += len(inputs.counts)
                continue
            for quant in engine.quant_methods:
                if not gate(quant, gpu).allowed:
                    skipped[left_out(N_("quantization refused by the architecture gate"))] += len(inputs.counts)
                    continue
                found.extend(Candidate(gpu=gpu.id, gpus=n, engine=engine_id, quant=quant) for n in inputs.counts)
    return found, skipped


def _asked(candidate: Candidate, model: str, **fields: Any) -> AdviceRequest:
    """What the advisor is asked about an option: its GPU x count, the model, its engine and format pinned."""
    return AdviceRequest(
        gpu=candidate.gpu, gpus=candidate.gpus, model=model, engine=candidate.engine, quant=candidate.quant, **fields
    )


@lru_cache(maxsize=16_384)
def advised(candidate: Candidate, model: str, context: int) -> tuple[int, str]:
    """Ask the advisor with engine and quantization pinned: (GPUs per model copy, '') or (0, why not).

    An option stays when the advice keeps both pins and the model fits one node. Cached: the inputs are frozen and
    the advisor is pure.
    """
    try:
        # concurrency 1: as perf asks it for the SLO search, so the layout is the one perf estimates
        advice = advise_remembered(_asked(candidate, model, context=max(context, MIN_CONTEXT_TOKENS), concurrency=1))
    except SelectorError as exc:
        return 0, left_out(N_("the advisor refuses it ({error})"), error=type(exc).__name__)
    if advice.engine != candidate.engine:
        return 0, left_out(N_("the advisor does not keep the engine"))
    if advice.quantization != candidate.quant:
        return 0, left_out(N_("the advisor refuses the quantization (engine or model gate)"))
    memory = advice.memory
    if not memory.fits or memory.nodes > 1 or memory.gpus != candidate.gpus:
        return 0, left_out(N_("the model does not fit"))
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
    cached_share: float = 0.0,
) -> OperatingPoint | str:
    """The option's SLO operating point at the engine release (''= newest with data), or why perf gives none.

    `cached_share` of each prompt hits the prefix cache (the what-if `cached`), as perf simulates it.
    """
    asked = _asked(  # concurrency 1: the SLO search starts at one user
        candidate,
        model,
        engine_version=version,
        concurrency=1,
        in_tokens_per_request=in_tokens,
        out_tokens_per_request=out_tokens,
    )
    request = request_from_advice(asked, candidate.engine, candidate.quant, slo=slo)
    if cached_share:
        request = request.model_copy(update={"prefix_cache_hit": cached_share})
    try:
        return operating_point(request, calibrations)
    except NoEstimateError as exc:
        return left_out(N_("no estimate ({error})"), error=str(exc))
    except PerfError as exc:
        return left_out(N_("perf refused it ({error})"), error=str(exc).split(":")[0])


def gpu_excluded(inputs: CompareInputs, gpu: Gpu, prices: PriceBook | None = None) -> str:
    """Why a GPU is not considered at all ('' when it is): its kind, the GPUs asked for, or no price in the tier."""
    if gpu.kind in SKIPPED_KINDS:
        kind = Wording(template=_KIND_WORDS[gpu.kind])
        if measured_on(gpu.id):  # what was measured there is on the advisor's page, as published
            return left_out(
                N_(
                    "GPU types of kind {kind} (no step-time model; the engine advisor lists what was published on them)"
                ),
                kind=kind,
            )
        return left_out(N_("GPU types of kind {kind} (no step-time model)"), kind=kind)
    if inputs.market != ANY_MARKET and gpu.id not in market_gpus(inputs.market):  # type: ignore[arg-type]
        return left_out(N_("not in the market chosen ({market})"), market=Wording(template=MARKET_WORDS[inputs.market]))
    if inputs.gpu_names and gpu.id not in inputs.gpu_names:
        return left_out(N_("not among the GPUs chosen"))
    if inputs.vendors and gpu.vendor not in inputs.vendors:
        return left_out(N_("not of the vendors chosen"))
    if gpu.id not in inputs.price_overrides and _tier(inputs, gpu.id, prices) is None:
        tier = Wording(template=KIND_WORDS[inputs.price_tier])
        return left_out(N_("no {tier} price on record (give one in prices)"), tier=tier)
    return ""


def _tier(inputs: CompareInputs, gpu_id: str, prices: PriceBook | None) -> PriceTier | None:
    return (prices or snapshot_book()).lowest(gpu_id, inputs.price_tier, inputs.currency, inputs.cny_per_usd)


def _price(inputs: CompareInputs, gpu_id: str, prices: PriceBook | None = None) -> tuple[float, PriceTier | None]:
    """The price per GPU-hour an option is ranked at, and the tier it is (None: the user's override)."""
    overrides = inputs.price_overrides
    if gpu_id in overrides:
        return overrides[gpu_id], None
    tier = _tier(inputs, gpu_id, prices)
    assert tier is not None  # candidates() keeps only priced GPUs
    return round(convert(tier.price_per_gpu_hour, tier.currency, inputs.currency, inputs.cny_per_usd), 4), tier


def _tco_inputs(
    inputs: CompareInputs, candidate: Candidate, split: int, point: OperatingPoint, price: float
) -> TcoInputs:
    """The cost page's inputs for one option: the very ones its /tco link opens."""
    return TcoInputs.model_validate(
        {
            "gpu": candidate.gpu,
            "price": price,
            "currency": inputs.currency,
            "fx": inputs.cny_per_usd,
            "gpus": split,
            "tps": point.output_tok_s,
            "out_tokens": inputs.out_tokens_per_request,
            "in_tokens": inputs.in_tokens_per_request,
            "prefill_share": inputs.prefill_time_pct,
            "cached": inputs.cached_pct,
            "split": None if inputs.token_split == SplitBasis.ESTIMATE else inputs.token_split,  # an estimate's default
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
            **lever_link_params(),  # prompt reuse and spot prices are what-ifs the user turns on
        }
    )


# long: one field per figure of the option, named as the table and the links read them
def price_option(
    inputs: CompareInputs,
    candidate: Candidate,
    split: int,
    point: OperatingPoint,
    prices: PriceBook | None = None,
) -> RankedOption:
    """Cost one option with the cost model, through the very inputs its /tco link opens."""
    price, tier = _price(inputs, candidate.gpu, prices)
    est, level = point.estimate, point.level
    tco_inputs = _tco_inputs(inputs, candidate, split, point, price)
    cap = capacity_of(tco_inputs)
    fleet = fleet_of(tco_inputs, cap)
    gpu = find_gpu(candidate.gpu)
    advice_request = _asked(
        candidate.model_copy(update={"gpus": split}),
        inputs.model,
        engine_version=inputs.engine_versions.get(candidate.engine, ""),
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
        price_overridden=tier is None,
        price_kind=tier.kind if tier else "",
        price_provider=tier.provider if tier else "",
        price_region=tier.region if tier else "",
        price_fetched_at=tier.fetched_at if tier else "",
        cost_per_million_output_tokens=cap.cost_per_million_output_tokens,
        fleet_cost_per_month=fleet.fleet_cost_per_month,
        meets_slo=point.meets_slo,
        tco_inputs=tco_inputs,
        advice_request=advice_request,
        tokens=tokens_by_kind(tco_inputs, cap, fleet, _phases(inputs, point)),
        levels=_levels(point),
    )


def _phases(inputs: CompareInputs, point: OperatingPoint) -> PhaseSeconds | None:
    """The estimator's split of the option's request at its operating point (computed once, with the estimate)."""
    return point.estimate.phases if inputs.token_split == SplitBasis.ESTIMATE else None


def _levels(point: OperatingPoint) -> tuple[LevelPoint, ...]:
    """The option's estimated load curve, for the cost-ceiling question.

    Every closed-loop level the estimate simulated: one user, the doubling and bisection of its SLO search (1, 2, 4,
    8, ... up to the highest load within the SLO and the first beyond it) and the maximum-throughput point; no
    level is simulated for this.
    """
    est = point.estimate
    curve = (*est.levels, *est.searched_levels, est.slo_level)
    estimated = {lv.concurrency: lv for lv in curve if lv is not None and lv.concurrency}
    return tuple(
        LevelPoint(concurrency=c, output_tok_s=lv.output_tok_s, tpot_p50_ms=lv.tpot_ms.p50, meets_slo=lv.meets_slo)
        for c, lv in sorted(estimated.items())
        if lv.output_tok_s > 0
    )
