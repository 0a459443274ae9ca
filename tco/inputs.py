"""The cost calculator's inputs: one frozen model whose aliases are the page's URL parameters."""

import copy
import re
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from catalog import GpuLookupError, engine_release, find_gpu, load_handbook
from catalog.engines import find_engine
from catalog.errors import NameLookupError
from catalog.models import find_model
from catalog.prices import PriceKind
from catalog.quantization import AUTO, find_quant
from i18n import N_
from perf.inputs import ENGINE_FAMILIES
from perf.topology import ServedTopology
from selector.inputs import AdviceRequest
from selector.rules import load_rules
from tco.money import Currency
from tco.owning_inputs import OwningInputs
from tco.power import parse_power_kw, power_text
from tco.prices import PriceBook, snapshot_book

CUSTOM_GPU = "custom"
MAX_SLO_MS = 3_600_000

_HB = load_handbook()
_EX = _HB.tco
_PD = _HB.tco_project_defaults
_LV = _HB.levers

Pct = Annotated[float, Field(ge=0, le=100)]


def _pct(share: float) -> float:
    return round(share * 100, 6)


def slo_ms_field(default: float, alias: str, title: str) -> Any:
    """An SLO target in ms, with the URL parameter and limits /probe gives it (`ttft_p50`, ...)."""
    return Field(default=default, alias=alias, gt=0, le=MAX_SLO_MS, title=title)


def shared_field(model_cls: type[BaseModel], name: str) -> Any:
    """A field of another page's model (alias, default, limits, title), for a page that asks the same thing."""
    return copy.deepcopy(model_cls.model_fields[name])


def catalog_price(
    gpu_id: str,
    currency: Currency | str,
    cny_per_usd: float,
    *,
    kind: PriceKind = "on_demand",
    book: PriceBook | None = None,
) -> float | None:
    """The price a catalog GPU fills in, in `currency`: its lowest tier of `kind` (None: no such tier, or custom).

    `book` is the prices in use (default: the shipped snapshot).
    """
    if gpu_id == CUSTOM_GPU:
        return None
    return (book or snapshot_book()).price(find_gpu(gpu_id).id, kind, currency, cny_per_usd)


@lru_cache(maxsize=4096)
def _engine_id(name: str) -> str:
    return find_engine(name).id


@lru_cache(maxsize=4096)
def _model_id(name: str) -> str:
    return find_model(name).id


@lru_cache(maxsize=4096)
def _quant_id(name: str) -> str:
    return find_quant(name).id


@lru_cache(maxsize=4096)
def _gpu_id(name: str) -> str:
    return find_gpu(name).id


def known_estimate_engine(value: object) -> object:
    """An engine name as the estimator takes it: one of perf's engine families, read forgivingly ('trtllm')."""
    if not isinstance(value, str):
        return value
    try:
        engine = _engine_id(value)
    except NameLookupError as exc:
        raise ValueError(f"engine '{value}' is not in the catalog; allowed: {', '.join(ENGINE_FAMILIES)}") from exc
    if engine not in ENGINE_FAMILIES:
        raise ValueError(f"no estimate for {engine}; allowed: {', '.join(ENGINE_FAMILIES)}")
    return engine


def known_model(value: object) -> object:
    """A catalog model by id, name or Hugging Face repo."""
    if not isinstance(value, str):
        return value
    try:
        return _model_id(value)
    except NameLookupError as exc:
        raise ValueError(str(exc)) from exc


def known_quant(value: object) -> object:
    """'auto' or a quantization method of the advisor."""
    if not isinstance(value, str) or value.strip().lower() in {AUTO, ""}:
        return AUTO if isinstance(value, str) else value
    try:
        return _quant_id(value)
    except NameLookupError as exc:
        raise ValueError(str(exc)) from exc


MAX_RPS = 10_000_000  # requests/s per replica (`rps`)
MIN_RPS = 0.0001  # below this a fleet for any traffic has more replicas than a number can hold
RUN_ID = re.compile(r"^[0-9a-f]{6,32}$")


def _rps_text(rate: float, run_id: str | None) -> str:
    """`rps` as the link writes it: 12.5 not 12.50, and the run after @."""
    text = f"{rate:.6g}" if not rate.is_integer() else str(int(rate))
    if float(text).is_integer():  # 999999.5 rounds to 1e+06: written 1000000, which reads back the same
        text = str(int(float(text)))
    return f"{text}@{run_id}" if run_id else text


class TpsSource(StrEnum):
    """Where the throughput came from: typed by a person, estimated by perf, or measured by a probe run."""

    ENTERED = "entered"
    ESTIMATE = "estimate"
    MEASURED = "measured"  # a probe run's level ("Cost this"); `quant_method` then names the run's quantization


_SLO = _HB.slo


class SplitBasis(StrEnum):
    """How a request's GPU time is split between its input, cached and output tokens (tco/tokens.py)."""

    ESTIMATE = "estimate"  # perf's step-time model at the operating point (perf/phases.py)
    SHARE = "share"  # the prefill share of GPU time, an assumption (`prefill_share`)


class TcoInputs(OwningInputs):  # owning, energy and API fields: tco/owning_inputs.py
    """Everything the cost page asks for. Shares and utilization are in percent, as people type them."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    gpu: str = Field(
        default=_HB.seed_benchmark.gpu,
        alias="gpu",
        title=N_("GPU"),
        description="a catalog GPU (id or name, e.g. A800, H100) or 'custom'",
    )
    price_per_gpu_hour: float = Field(
        default=_EX.price_per_gpu_hour,
        alias="price",
        gt=0,
        le=100_000,
        title=N_("Price per GPU-hour"),
    )
    currency: Currency = Field(default=Currency(_EX.currency), alias="currency", title=N_("Currency"))
    cny_per_usd: float = Field(
        default=_HB.fx.cny_per_usd, alias="fx", ge=0.001, le=1000, title=N_("Exchange rate (CNY per USD)")
    )
    gpus_per_replica: int = Field(
        default=_EX.gpus_per_replica, alias="gpus", ge=1, le=4096, title=N_("GPUs per replica")
    )
    output_tok_s_per_replica: float = Field(
        default=_EX.output_tok_s_per_replica,
        alias="tps",
        ge=0.01,
        le=100_000_000,
        title=N_("Throughput (output tok/s per replica)"),
    )
    out_tokens_per_request: int = shared_field(AdviceRequest, "out_tokens_per_request")
    in_tokens_per_request: int = shared_field(AdviceRequest, "in_tokens_per_request")
    hours_per_month: float = Field(
        default=_PD.hours_per_month, alias="hours", gt=0, le=744, title=N_("Hours per month")
    )
    traffic_requests_per_day: float = shared_field(AdviceRequest, "traffic_requests_per_day")
    peak_to_average: float = Field(
        default=_PD.peak_to_average, alias="peak", ge=1, le=1000, title=N_("Peak-to-average ratio")
    )
    target_utilization_pct: float = Field(
        default=_pct(_PD.target_utilization),
        alias="util",
        ge=0.1,
        le=100,
        title=N_("Target utilization (%)"),
    )

    quantization: bool = Field(default=True, alias="quant", title=N_("Quantization lever"))
    quant_throughput_gain_pct: float = Field(
        default=_pct(_LV.quantization.throughput_gain),
        alias="quant_gain",
        ge=0,
        le=1000,
        title=N_("Quantization throughput gain (%)"),
    )
    prefix_caching: bool = Field(default=True, alias="prefix", title=N_("Prefix caching lever"))
    prompt_reuse_pct: Pct = Field(
        default=_pct(_LV.prefix_caching.prompt_reuse_share), alias="reuse", title=N_("Prompt reuse (%)")
    )
    prefill_time_pct: float = Field(
        default=_pct(_LV.prefix_caching.prefill_time_share),
        alias="prefill_share",
        ge=0,
        le=95,
        title=N_("Prefill share of GPU time (%)"),
    )
    cached_pct: float = Field(
        default=0,
        alias="cached",
        ge=0,
        le=99,
        title=N_("Cached share of input tokens (%)"),
        description="what-if: the share of each prompt that hits the prefix cache (0 unless you know your traffic's "
        "hit ratio); cached tokens are priced at what the estimator says a cached token costs",
    )
    token_split: SplitBasis | None = Field(
        default=None,
        alias="split",
        title=N_("Split of GPU time by kind of token"),
        description="'estimate': perf's prefill and decode times at the operating point; 'share': the prefill share "
        "(`prefill_share`); default: the estimate when the throughput came from an estimate or a probe run",
    )
    speculative: bool = Field(default=False, alias="spec", title=N_("Speculative decoding lever"))
    acceptance_pct: float = Field(
        default=_pct(_LV.speculative_decoding.acceptance_rate),
        alias="accept",
        ge=0,
        le=99,
        title=N_("Draft acceptance rate (%)"),
    )
    speculative_tokens: int = Field(
        default=_LV.speculative_decoding.speculative_tokens,
        alias="spec_tokens",
        ge=1,
        le=16,
        title=N_("Speculative tokens"),
    )
    break_even_acceptance_pct: float = Field(
        default=_pct(_LV.speculative_decoding.break_even_acceptance),
        alias="spec_break_even",
        ge=1,
        le=99,
        title=N_("Break-even acceptance (%)"),
    )
    distillation: bool = Field(default=False, alias="distill", title=N_("Distillation lever"))
    distill_cost_cut_pct: float = Field(
        default=_pct(_LV.distillation.cost_cut),
        alias="distill_cut",
        ge=0,
        lt=100,
        title=N_("Distillation cost cut (%)"),
    )
    spot: bool = Field(default=True, alias="spot", title=N_("Spot GPUs lever"))
    spot_price_cut_pct: float = Field(
        default=_pct(_LV.spot.price_cut),
        alias="spot_cut",
        ge=0,
        lt=100,
        title=N_("Spot price cut (%)"),
    )

    tps_source: TpsSource = Field(
        default=TpsSource.ENTERED,
        alias="tps_source",
        title=N_("Throughput source"),
        description="'estimate' when `tps` came from perf's estimate for `model`, `engine` and `quant_method`; "
        "'measured' when it came from a probe run (on `quant_method` when the run declared it)",
    )
    measured_rps: str | None = Field(
        default=None,
        alias="rps",
        max_length=60,
        title=N_("Requests/s per replica (measured)"),
        description="requests/s one replica served within its SLO, as a probe run measured it ('12.5', or "
        "'12.5@<run id>' naming the run); when given, it sets the replica's capacity instead of `tps`",
    )
    model: str = Field(default=load_rules().defaults.model, alias="model", title=N_("Model (for the estimate)"))
    engine: str = Field(default=ENGINE_FAMILIES[0], alias="engine", title=N_("Engine (for the estimate)"))
    engine_version: str = shared_field(AdviceRequest, "engine_version")
    quant_method: str = Field(default=AUTO, alias="quant_method", title=N_("Quantization (for the estimate)"))
    topology: ServedTopology = Field(
        default="agg",
        alias="topology",
        title=N_("Serving topology (for the estimate)"),
        description="'disagg' when `tps` and `gpus` are one unit of separate prefill and decode pools (/compare)",
    )
    pools: str = Field(
        default="",
        alias="pools",
        max_length=80,
        title=N_("Prefill and decode pools"),
        description="the xPyD layout of a disaggregated unit, as /compare words it",
    )
    ttft_p50_ms: float = slo_ms_field(_SLO.ttft_p50_ms, "ttft_p50", N_("SLO: TTFT p50 target (ms)"))
    ttft_p99_ms: float = slo_ms_field(_SLO.ttft_p99_ms, "ttft_p99", N_("SLO: TTFT p99 target (ms)"))
    tpot_p50_ms: float = slo_ms_field(_SLO.tpot_p50_ms, "tpot_p50", N_("SLO: TPOT p50 target (ms)"))

    budget_per_month: float | None = Field(
        default=None,
        alias="budget",
        gt=0,
        le=1e12,
        title=N_("Monthly budget (what traffic it serves)"),
        description="a monthly budget in `currency`: the page answers the traffic it serves",
    )
    power: str | None = Field(
        default=None,
        alias="power",
        max_length=40,
        title=N_("Power budget (kW or MW)"),
        description="a power budget ('800kW', '2MW'; a bare number is kW): the page answers the GPUs, tokens/s and "
        "concurrent users it runs",
    )

    @field_validator("power", mode="before")
    @classmethod
    def _power(cls, value: object) -> object:
        """'2 MW' -> '2MW', '800' -> '800kW'; blank is no power budget."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            return None if isinstance(value, str) else value
        return power_text(parse_power_kw(value))

    @property
    def power_kw(self) -> float | None:
        """The power budget in kW, None when not given."""
        return None if self.power is None else parse_power_kw(self.power)

    @field_validator("engine_version", mode="before")
    @classmethod
    def _release(cls, value: object) -> object:
        return engine_release(value)

    @field_validator("measured_rps", mode="before")
    @classmethod
    def _measured_rps(cls, value: object) -> object:
        """'12.5' or '12.5@9f0c1a2b': a rate above 0 (requests/s), optionally the probe run that measured it."""
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            return None if value is None else _rps_text(float(value), None)
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text:
            return None
        rate_text, _, run_id = text.partition("@")
        try:
            rate = float(rate_text)
        except ValueError:
            raise ValueError("give requests/s per replica, e.g. 12.5 or 12.5@<probe run id>") from None
        if not MIN_RPS <= rate <= MAX_RPS:
            raise ValueError(f"requests/s per replica must be at least {MIN_RPS:g} and at most {MAX_RPS:,.0f}")
        run_id = run_id.strip().lower()
        if run_id and not RUN_ID.match(run_id):
            raise ValueError(f"a probe run id is 6-32 hexadecimal characters, not {run_id!r}")
        return _rps_text(rate, run_id or None)

    @model_validator(mode="after")
    def _capacity_from_rps(self) -> "TcoInputs":
        """A measured request rate sets the replica's throughput: rps x output tokens per request."""
        rps = self.requests_per_s_per_replica
        if rps is not None:
            object.__setattr__(self, "output_tok_s_per_replica", rps * self.out_tokens_per_request)
        return self

    @property
    def requests_per_s_per_replica(self) -> float | None:
        """The measured requests/s per replica (`rps`), None when not given."""
        return None if self.measured_rps is None else float(self.measured_rps.partition("@")[0])

    @property
    def rps_run_id(self) -> str | None:
        """The probe run that measured `rps`, when the link names it."""
        return (self.measured_rps or "").partition("@")[2] or None

    @field_validator("model", mode="before")
    @classmethod
    def _known_model(cls, value: object) -> object:
        return known_model(value)

    @field_validator("engine", mode="before")
    @classmethod
    def _known_engine(cls, value: object) -> object:
        return known_estimate_engine(value)

    @field_validator("quant_method", mode="before")
    @classmethod
    def _known_quant(cls, value: object) -> object:
        return known_quant(value)

    @field_validator("gpu", mode="before")
    @classmethod
    def _known_gpu(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        if value.strip().lower() == CUSTOM_GPU:
            return CUSTOM_GPU
        try:
            return _gpu_id(value)
        except GpuLookupError as exc:
            raise ValueError(f"{exc}; or 'custom'") from exc

    @property
    def split_basis(self) -> SplitBasis:
        """The split asked for (`split`), else the estimate's when the throughput is an estimate or measured."""
        if self.token_split is not None:
            return self.token_split
        return SplitBasis.ESTIMATE if self.throughput_derived else SplitBasis.SHARE

    @property
    def throughput_derived(self) -> bool:
        """The throughput came from perf's estimate or a probe run (not typed by hand)."""
        return self.tps_source != TpsSource.ENTERED or self.requests_per_s_per_replica is not None

    @property
    def cached_share(self) -> float:
        """The share of input tokens that hit the prefix cache (0 to 0.99)."""
        return self.cached_pct / 100

    @property
    def total_tokens_per_request(self) -> int:
        return self.in_tokens_per_request + self.out_tokens_per_request

    @property
    def target_utilization(self) -> float:
        return self.target_utilization_pct / 100
