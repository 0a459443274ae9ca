"""What a performance estimate asks: deployment, request lengths, load levels and the SLO, as one frozen model."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from catalog import load_handbook

ENGINE_FAMILIES = ("vllm", "sglang", "tensorrt-llm", "lmdeploy")
"""Engines with a step-time model; any other engine gets no estimate."""

_SLO = load_handbook().slo


class Slo(BaseModel):
    """The service-level objective an operating point must meet (the handbook's Q3 by default)."""

    model_config = ConfigDict(frozen=True)

    ttft_p50_ms: float = Field(default=_SLO.ttft_p50_ms, gt=0)
    ttft_p99_ms: float = Field(default=_SLO.ttft_p99_ms, gt=0)
    tpot_p50_ms: float = Field(default=_SLO.tpot_p50_ms, gt=0)


class PerfRequest(BaseModel):
    """One configuration to estimate: GPU x count, model, engine, quantization, request lengths and load levels.

    `quant` and `kv_cache` take the advisor's values ('auto' lets the advisor choose). Load is closed-loop
    `concurrency` levels, `max_throughput` (offline batch, no SLO) and/or Poisson `request_rates_rps`.
    """

    model_config = ConfigDict(frozen=True)

    gpu: str
    gpus: int = Field(default=1, ge=1, le=1024)
    model: str
    engine: str
    quant: str = "auto"
    kv_cache: str = "auto"
    input_tokens: int = Field(default=1000, ge=1, le=1_048_576)
    output_tokens: int = Field(default=200, ge=1, le=1_048_576)
    concurrency: tuple[int, ...] = (1, 10, 50, 100)
    max_throughput: bool = False
    request_rates_rps: tuple[float, ...] = ()
    find_max_rate: bool = False
    prefix_cache_hit: float = Field(default=0.0, ge=0.0, lt=1.0, description="share of each prompt already cached")
    speculative_tokens: int = Field(default=0, ge=0, le=16, description="draft tokens per step (0 = off)")
    acceptance_rate: float = Field(default=0.7, ge=0.0, le=1.0)
    draft: Literal["ngram", "model"] = "ngram"
    slo: Slo = Field(default_factory=Slo)

    @field_validator("engine", "quant", "kv_cache", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("concurrency")
    @classmethod
    def _positive_levels(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(c < 1 or c > 65536 for c in value):
            raise ValueError("concurrency levels must be between 1 and 65536")
        return tuple(sorted(set(value)))

    @field_validator("request_rates_rps")
    @classmethod
    def _positive_rates(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if any(not 0 < r <= 1e6 for r in value):
            raise ValueError("request rates must be above 0 and at most 1,000,000 per second")
        return tuple(sorted(set(value)))

    @model_validator(mode="after")
    def _some_load(self) -> "PerfRequest":
        if not (self.concurrency or self.max_throughput or self.request_rates_rps):
            raise ValueError("give at least one concurrency level, max throughput or a request rate")
        return self

    @property
    def context_tokens(self) -> int:
        """Tokens one sequence holds at its end: the prompt and the answer."""
        return self.input_tokens + self.output_tokens
