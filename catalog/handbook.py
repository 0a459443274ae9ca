"""The handbook's numbers and the project's defaults, read from handbook.toml with their sources."""

import tomllib
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

HANDBOOK_TOML = Path(__file__).parent / "data" / "handbook.toml"


class _Sourced(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: str


class SeedBenchmark(_Sourced):
    gpu: str
    engine: str
    model: str
    max_model_len: int
    gpu_memory_utilization: float
    prompts: int
    max_tokens: int
    temperature: float
    concurrency: int
    output_tok_s: float
    tpot_ms: float
    speedup_vs_concurrency_1: float
    transformers_generate_tok_s: float


class TcoExample(_Sourced):
    price_per_gpu_hour: float
    currency: str
    gpus_per_replica: int
    output_tok_s_per_replica: float
    out_tokens_per_request: int
    handbook_hours_per_month: float


class TcoProjectDefaults(_Sourced):
    hours_per_month: float
    in_tokens_per_request: int
    traffic_requests_per_day: float
    peak_to_average: float
    target_utilization: float


class Fx(_Sourced):
    cny_per_usd: float
    date: str


class QuantizationLever(_Sourced):
    throughput_gain: float


class PrefixCachingLever(_Sourced):
    prompt_reuse_share: float
    prefill_time_share: float


class SpeculativeLever(_Sourced):
    acceptance_rate: float
    speculative_tokens: int
    break_even_acceptance: float


class DistillationLever(_Sourced):
    cost_cut: float


class SpotLever(_Sourced):
    price_cut: float


class Levers(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    quantization: QuantizationLever
    prefix_caching: PrefixCachingLever
    speculative_decoding: SpeculativeLever
    distillation: DistillationLever
    spot: SpotLever


class Slo(_Sourced):
    ttft_p50_ms: float
    ttft_p99_ms: float
    tpot_p50_ms: float
    min_output_tok_s_per_gpu: float


class Handbook(BaseModel):
    """Everything in handbook.toml, typed."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    seed_benchmark: SeedBenchmark
    tco: TcoExample
    tco_project_defaults: TcoProjectDefaults
    fx: Fx
    levers: Levers
    slo: Slo


@cache
def load_handbook() -> Handbook:
    """The handbook's numbers, parsed once."""
    with HANDBOOK_TOML.open("rb") as handle:
        return Handbook.model_validate(tomllib.load(handle))
