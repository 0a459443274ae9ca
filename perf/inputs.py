"""What a performance estimate asks: deployment, request lengths, load levels and the SLO, as one frozen model."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from catalog import engine_release, load_handbook
from catalog.engines import find_engine
from catalog.kvcache import find_kv_dtype, load_kv_dtypes
from catalog.models import CUSTOM_MODEL
from selector.errors import SelectorError
from selector.inputs import AdviceRequest

AUTO_KV = "auto"  # --kv-cache-dtype auto: the advisor's choice
MODEL_KV = "model"  # the model's own 16-bit dtype (the catalog's `auto` KV dtype)

ENGINE_FAMILIES = ("vllm", "sglang", "tensorrt-llm", "lmdeploy")
AUTO_ENGINE = "auto"  # the advisor picks the engine, as it does on /selector
"""Engines with a step-time model; any other engine gets no estimate."""

_SLO = load_handbook().slo


class Slo(BaseModel):
    """The service-level objective an operating point must meet (the handbook's Q3 by default)."""

    model_config = ConfigDict(frozen=True)

    ttft_p50_ms: float = Field(default=_SLO.ttft_p50_ms, gt=0, description="SLO: median time to first token, ms")
    ttft_p99_ms: float = Field(default=_SLO.ttft_p99_ms, gt=0, description="SLO: p99 time to first token, ms")
    tpot_p50_ms: float = Field(default=_SLO.tpot_p50_ms, gt=0, description="SLO: median time per output token, ms")


def _kv_allowed() -> str:
    """The --kv-cache-dtype values, as the catalog lists them: auto is the advisor's, the model's own dtype by name."""
    words = ["auto (the advisor's)"]
    for row in load_kv_dtypes().values():
        if row.id == "auto":  # the catalog's auto is the model's own dtype; here auto is the advisor's choice
            words.append(f"{', '.join(row.aliases)} (the model's own)")
        else:
            words.append(f"{row.id} ({', '.join(row.aliases)})" if row.aliases else row.id)
    return ", ".join(words)


class PerfRequest(BaseModel):
    """One configuration to estimate: GPU x count, model, engine, quantization, request lengths and load levels.

    `quant` and `kv_cache` take the advisor's values ('auto' lets the advisor choose). Load is closed-loop
    `concurrency` levels, `max_throughput` (offline batch, no SLO) and/or Poisson `request_rates_rps`.
    """

    model_config = ConfigDict(frozen=True)

    gpu: str = Field(description="a catalog GPU by id, name or alias (H100, A800, 'RTX 4090')")
    gpus: int = Field(default=1, ge=1, le=1024, description="GPUs for one model copy")
    model: str = Field(description="a catalog model (llama-3.1-8b, qwen2.5-7b, ...)")
    engine: str = Field(
        default=AUTO_ENGINE,
        description="vllm, sglang, tensorrt-llm (trtllm), lmdeploy, or auto (the advisor's engine for this GPU)",
    )
    engine_version: str = Field(
        default="", description="the engine release (default: the newest release with measured data)"
    )
    quant: str = Field(default="auto", description="bf16, fp8, awq, gptq, w8a8-int8, nvfp4, mxfp4 or auto")
    kv_cache: str = Field(
        default="auto",
        description="KV cache dtype: auto (the advisor's), bf16 (the model's own), fp8 (or fp8_e4m3, fp8_e5m2), int8",
    )
    tp: int | None = Field(default=None, ge=1, le=64, description="tensor-parallel GPUs (default: the advisor's)")
    pp: int | None = Field(default=None, ge=1, le=64, description="pipeline stages (default: the advisor's)")
    ep: int | None = Field(default=None, ge=1, le=1024, description="expert-parallel GPUs (default: the advisor's)")
    dp: int | None = Field(
        default=None, ge=1, le=1024, description="attention data-parallel ranks (default: the advisor's)"
    )
    custom: AdviceRequest | None = Field(
        default=None,
        description="a model outside the catalog, described by the advisor's custom-model fields (model='custom')",
    )
    max_num_seqs: int | None = Field(
        default=None, ge=1, le=65536, description="sequences in flight at most (default: the engine's own default)"
    )
    input_tokens: int = Field(default=1000, ge=1, le=1_048_576, description="prompt tokens per request")
    output_tokens: int = Field(default=200, ge=1, le=1_048_576, description="generated tokens per request")
    concurrency: tuple[int, ...] = Field(
        default=(1, 10, 50, 100),
        description="closed-loop levels, comma-separated; 'max' = the highest-throughput point the engine's sequence "
        "limit and the KV cache allow",
    )
    max_throughput: bool = Field(
        default=False, description="also the highest-throughput point (offline batch, no SLO): 'max' in concurrency"
    )
    request_rates_rps: tuple[float, ...] = Field(
        default=(), description="Poisson arrival rates in requests/s, comma-separated"
    )
    find_max_rate: bool = Field(default=False, description="also search the highest request rate within the SLO")
    prefix_cache_hit: float = Field(default=0.0, ge=0.0, lt=1.0, description="share of each prompt already cached")
    speculative_tokens: int = Field(default=0, ge=0, le=16, description="draft tokens per step (0 = off)")
    acceptance_rate: float = Field(default=0.7, ge=0.0, le=1.0, description="speculative acceptance rate")
    draft: Literal["ngram", "model"] = Field(default="ngram", description="speculation's drafter: ngram or model")
    slo: Slo = Field(default_factory=Slo)

    @field_validator("engine", "quant", "kv_cache", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("kv_cache")
    @classmethod
    def _kv_dtype(cls, value: str) -> str:
        """fp8_e5m2, bfloat16 ... as the catalog's KV dtypes; an unknown one names those allowed.

        `auto` is the advisor's choice; the model's own 16-bit dtype (bf16, bfloat16, fp16, float16) is `model`.
        """
        if value == AUTO_KV:
            return value
        found = find_kv_dtype(value)
        if found is None:
            raise ValueError(f"KV cache dtype {value!r} is not known; allowed: {_kv_allowed()}")
        return MODEL_KV if found == "auto" else found

    @property
    def kv_dtype_given(self) -> str | None:
        """The KV dtype asked for, as the catalog names it (`auto`: the model's own), or None for the advisor's."""
        if self.kv_cache == AUTO_KV:
            return None
        return "auto" if self.kv_cache == MODEL_KV else self.kv_cache

    @field_validator("engine_version", mode="before")
    @classmethod
    def _release(cls, value: object) -> object:
        return engine_release(value)

    @field_validator("engine")
    @classmethod
    def _engine_alias(cls, value: str) -> str:
        """trtllm, trt-llm, TensorRT-LLM, 'vllm serve' ... as the engine catalog knows them."""
        if value == AUTO_ENGINE:
            return value
        try:
            return find_engine(value).id
        except SelectorError:
            return value  # the estimate says which engines it covers

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
    def layout_given(self) -> bool:
        """Whether the layout was set (--tp, --pp, --ep, --dp) rather than left to the advisor."""
        return any(v is not None for v in (self.tp, self.pp, self.ep, self.dp))

    @property
    def layout_gpus(self) -> int:
        """GPUs of one copy under the given layout: tp x pp x dp (expert parallelism reuses those GPUs)."""
        return (self.tp or 1) * (self.pp or 1) * (self.dp or 1)

    @property
    def context_tokens(self) -> int:
        """Tokens one sequence holds at its end: the prompt and the answer."""
        return self.input_tokens + self.output_tokens


def request_from_advice(
    asked: AdviceRequest, engine: str, quant: str, *, engine_version: str | None = None, slo: Slo | None = None
) -> PerfRequest:
    """The estimate of what the advisor was asked, for one engine and quantization (the advised ones or others).

    The asked GPU x count, model (a custom one as its fields describe it), input and output tokens (at least one
    input token) and target concurrency; the asked engine release unless `engine_version` names another ('' for
    an engine other than the asked one: its newest release with measured data); the handbook's SLO unless given.
    """
    return PerfRequest(
        gpu=asked.gpu,
        gpus=asked.gpus,
        model=asked.model,
        custom=asked if asked.model == CUSTOM_MODEL else None,
        engine=engine,
        engine_version=asked.engine_version if engine_version is None else engine_version,
        quant=quant,
        input_tokens=max(asked.in_tokens_per_request, 1),
        output_tokens=asked.out_tokens_per_request,
        concurrency=(asked.concurrency,),
        slo=slo or Slo(),
    )
