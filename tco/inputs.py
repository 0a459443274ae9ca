"""The cost calculator's inputs: one frozen model whose aliases are the page's URL parameters."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from catalog import GpuLookupError, find_gpu, load_handbook
from tco.money import Currency

CUSTOM_GPU = "custom"

_HB = load_handbook()
_EX = _HB.tco
_PD = _HB.tco_project_defaults
_LV = _HB.levers

Pct = Annotated[float, Field(ge=0, le=100)]


def _pct(share: float) -> float:
    return round(share * 100, 6)


class TcoInputs(BaseModel):
    """Everything the cost page asks for. Shares and utilization are in percent, as people type them."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    gpu: str = Field(
        default=_HB.seed_benchmark.gpu,
        alias="gpu",
        title="GPU",
        description="a catalog GPU (id or name, e.g. A800, H100) or 'custom'",
    )
    price_per_gpu_hour: float = Field(
        default=_EX.price_per_gpu_hour,
        alias="price",
        gt=0,
        le=100_000,
        title="Price per GPU-hour",
    )
    currency: Currency = Field(default=Currency(_EX.currency), alias="currency", title="Currency")
    cny_per_usd: float = Field(
        default=_HB.fx.cny_per_usd, alias="fx", ge=0.001, le=1000, title="Exchange rate (CNY per USD)"
    )
    gpus_per_replica: int = Field(default=_EX.gpus_per_replica, alias="gpus", ge=1, le=4096, title="GPUs per replica")
    output_tok_s_per_replica: float = Field(
        default=_EX.output_tok_s_per_replica,
        alias="tps",
        ge=0.01,
        le=100_000_000,
        title="Throughput (output tok/s per replica)",
    )
    out_tokens_per_request: int = Field(
        default=_EX.out_tokens_per_request,
        alias="out_tokens",
        ge=1,
        le=10_000_000,
        title="Output tokens per request",
    )
    in_tokens_per_request: int = Field(
        default=_PD.in_tokens_per_request,
        alias="in_tokens",
        ge=0,
        le=100_000_000,
        title="Input tokens per request",
    )
    hours_per_month: float = Field(default=_PD.hours_per_month, alias="hours", gt=0, le=744, title="Hours per month")
    traffic_requests_per_day: float = Field(
        default=_PD.traffic_requests_per_day,
        alias="traffic",
        ge=0,
        le=1e13,
        title="Traffic (requests/day)",
    )
    peak_to_average: float = Field(
        default=_PD.peak_to_average, alias="peak", ge=1, le=1000, title="Peak-to-average ratio"
    )
    target_utilization_pct: float = Field(
        default=_pct(_PD.target_utilization),
        alias="util",
        ge=0.1,
        le=100,
        title="Target utilization (%)",
    )

    quantization: bool = Field(default=True, alias="quant", title="Quantization lever")
    quant_throughput_gain_pct: float = Field(
        default=_pct(_LV.quantization.throughput_gain),
        alias="quant_gain",
        ge=0,
        le=1000,
        title="Quantization throughput gain (%)",
    )
    prefix_caching: bool = Field(default=True, alias="prefix", title="Prefix caching lever")
    prompt_reuse_pct: Pct = Field(
        default=_pct(_LV.prefix_caching.prompt_reuse_share), alias="reuse", title="Prompt reuse (%)"
    )
    prefill_time_pct: float = Field(
        default=_pct(_LV.prefix_caching.prefill_time_share),
        alias="prefill_share",
        ge=0,
        le=95,
        title="Prefill share of GPU time (%)",
    )
    speculative: bool = Field(default=False, alias="spec", title="Speculative decoding lever")
    acceptance_pct: float = Field(
        default=_pct(_LV.speculative_decoding.acceptance_rate),
        alias="accept",
        ge=0,
        le=99,
        title="Draft acceptance rate (%)",
    )
    speculative_tokens: int = Field(
        default=_LV.speculative_decoding.speculative_tokens,
        alias="spec_tokens",
        ge=1,
        le=16,
        title="Speculative tokens",
    )
    break_even_acceptance_pct: float = Field(
        default=_pct(_LV.speculative_decoding.break_even_acceptance),
        alias="spec_break_even",
        ge=1,
        le=99,
        title="Break-even acceptance (%)",
    )
    distillation: bool = Field(default=False, alias="distill", title="Distillation lever")
    distill_cost_cut_pct: float = Field(
        default=_pct(_LV.distillation.cost_cut),
        alias="distill_cut",
        ge=0,
        lt=100,
        title="Distillation cost cut (%)",
    )
    spot: bool = Field(default=True, alias="spot", title="Spot GPUs lever")
    spot_price_cut_pct: float = Field(
        default=_pct(_LV.spot.price_cut),
        alias="spot_cut",
        ge=0,
        lt=100,
        title="Spot price cut (%)",
    )

    @field_validator("gpu", mode="before")
    @classmethod
    def _known_gpu(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        if value.strip().lower() == CUSTOM_GPU:
            return CUSTOM_GPU
        try:
            return find_gpu(value).id
        except GpuLookupError as exc:
            raise ValueError(f"{exc}; or 'custom'") from exc

    @property
    def total_tokens_per_request(self) -> int:
        return self.in_tokens_per_request + self.out_tokens_per_request

    @property
    def target_utilization(self) -> float:
        return self.target_utilization_pct / 100
