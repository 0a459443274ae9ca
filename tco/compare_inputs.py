"""What /compare asks: the model, traffic, SLO, prices, engines, releases and GPU counts, and how to order them."""

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from catalog import GpuLookupError, engine_release, find_gpu, load_gpus
from catalog.engines import find_engine
from catalog.prices import MARKETS, PRICE_KINDS, PriceKind
from i18n import N_
from perf import ENGINE_FAMILIES, Slo
from selector import SelectorError
from selector.rules import load_rules
from tco.inputs import SplitBasis, TcoInputs, known_model, shared_field
from tco.money import Currency

GPU_COUNTS = (1, 2, 4, 8)
PERF_MIN_CONTEXT = 256  # perf asks the advisor for at least this context; the fit check asks the same
PRICE_SEPARATOR = ":"
MAX_PRICE = 100_000


class RankBy(StrEnum):
    """Which cost orders the ranking: as estimated, the monthly fleet, the pessimistic end, or a kind of token."""

    PER_MILLION = "per_million"  # per million output tokens, all GPU time on them (the handbook's figure)
    FLEET = "fleet"
    PESSIMISTIC = "pessimistic"  # cost per million output tokens if throughput comes in at the band's low end
    INPUT = "input"  # per million input tokens, their prefill share of GPU time (tco/tokens.py), full load
    OUTPUT = "output"  # per million output tokens, their decode share, full load
    BLENDED = "blended"  # per million tokens at the request's own mix, full load
    INPUT_AT_TRAFFIC = "input_traffic"  # the same three for the fleet your traffic needs, idle headroom paid
    OUTPUT_AT_TRAFFIC = "output_traffic"
    BLENDED_AT_TRAFFIC = "blended_traffic"


ANY_MARKET = "any"
MARKET_CHOICES = (ANY_MARKET, *MARKETS)


def _listed(value: object) -> object:
    """A comma-separated URL value as a list (other values pass through)."""
    return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value


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
    prefill_time_pct: float = shared_field(TcoInputs, "prefill_time_pct")
    cached_pct: float = shared_field(TcoInputs, "cached_pct")
    token_split: SplitBasis = Field(
        default=SplitBasis.ESTIMATE,
        alias="split",
        title=N_("Split of GPU time by kind of token"),
        description=N_(
            "'estimate': each option's prefill and decode times at its operating point; 'share': the prefill share "
            "for every option"
        ),
    )
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
    price_tier: PriceKind = Field(
        default="on_demand",
        alias="price_tier",
        title=N_("Price tier"),
        description=N_("the kind of price each GPU is ranked at: its lowest tier of that kind"),
    )
    market: str = Field(
        default=ANY_MARKET,
        alias="market",
        title=N_("Market"),
        description=N_("the GPUs one can buy or rent there (catalog/data/markets.csv); 'any' keeps every GPU"),
    )
    gpu_names: tuple[str, ...] = Field(
        default=(), alias="gpu_names", title=N_("GPUs to consider"), description=N_("catalog GPUs; empty: every GPU")
    )
    vendors: tuple[str, ...] = Field(
        default=(), alias="vendors", title=N_("Vendors"), description=N_("GPU vendors; empty: every vendor")
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
    ceiling: float | None = Field(
        default=None,
        alias="ceiling",
        gt=0,
        le=1e9,
        title=N_("Cost ceiling per million output tokens"),
        description=N_("in the currency: the page answers the best tokens/s per user any option reaches under it"),
    )

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

    @field_validator("price_tier", mode="before")
    @classmethod
    def _price_tier(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() not in PRICE_KINDS:
            raise ValueError(f"'{value}' is not a price tier; allowed: {', '.join(PRICE_KINDS)}")
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("market", mode="before")
    @classmethod
    def _market(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() not in MARKET_CHOICES:
            raise ValueError(f"'{value}' is not a market; allowed: {', '.join(MARKET_CHOICES)}")
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("gpu_names", mode="before")
    @classmethod
    def _gpu_names(cls, value: object) -> object:
        value = _listed(value)
        if not isinstance(value, list | tuple):
            return value
        try:
            wanted = {find_gpu(str(v)).id for v in value}
        except GpuLookupError as exc:
            raise ValueError(str(exc)) from exc
        return tuple(g.id for g in load_gpus() if g.id in wanted)

    @field_validator("vendors", mode="before")
    @classmethod
    def _vendors(cls, value: object) -> object:
        value = _listed(value)
        if not isinstance(value, list | tuple):
            return value
        known = {g.vendor.lower(): g.vendor for g in load_gpus()}
        unknown = sorted({str(v) for v in value if str(v).lower() not in known})
        if unknown:
            raise ValueError(f"unknown vendor {', '.join(unknown)}; allowed: {', '.join(sorted(known.values()))}")
        return tuple(sorted({known[str(v).lower()] for v in value}))

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
        """The inputs an estimate or a price depends on: the ordering, chart axis and ceiling set to their defaults."""
        return self.model_copy(update={"rank_by": RankBy.PER_MILLION, "latency": LatencyAxis.TPOT, "ceiling": None})

    @property
    def cached_share(self) -> float:
        """The share of each prompt that hits the prefix cache (0 to 0.99)."""
        return self.cached_pct / 100

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
