"""The /probe and /runs pages' inputs: frozen models whose aliases are URL parameters (never the API key)."""

import re
from typing import Annotated
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from catalog.handbook import load_handbook
from probes.config import (
    DEFAULT_CONCURRENCY,
    SECRET_QUERY_KEYS,
    ApiKind,
    RunSettings,
    SloTargets,
    Timeouts,
    WorkloadKind,
    check_run_settings,
    normalize_base_url,
)
from probes.errors import ProbeSettingsError
from probes.models import LevelResult, RunResult
from probes.workloads import build_prompts

DEFAULT_BASE_URL = "http://localhost:8000/v1"
MAX_LEVEL = 1_000_000
MAX_LEVELS = 32
MAX_OPEN_RUNS = 12
RUN_ID = re.compile(r"^[0-9a-f]{6,32}$")

_HB = load_handbook()
_SLO = SloTargets()
_TIMEOUTS = Timeouts()

Level = Annotated[int, Field(ge=1, le=MAX_LEVEL)]


class ProbeForm(BaseModel):
    """Everything the /probe form asks, except the API key (a password field that never reaches the URL)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    base_url: str = Field(default=DEFAULT_BASE_URL, alias="url", title="Endpoint URL", max_length=500)
    model: str = Field(default="", alias="model", title="Model", max_length=300)
    label: str = Field(default="", alias="label", title="Run label", max_length=200)
    api: ApiKind = Field(default=ApiKind.CHAT, alias="api", title="API")
    workload: WorkloadKind = Field(default=WorkloadKind.SEED, alias="workload", title="Workload")
    input_tokens: int = Field(default=512, alias="input_tokens", ge=1, le=200_000, title="Synthetic prompt tokens")
    shared_prefix_tokens: int = Field(
        default=1024, alias="prefix_tokens", ge=1, le=200_000, title="Shared prefix tokens"
    )
    levels: tuple[Level, ...] = Field(default=DEFAULT_CONCURRENCY, alias="levels", title="Concurrency levels")
    requests_per_level: int = Field(default=32, alias="requests", ge=1, le=100_000, title="Requests per level")
    max_tokens: int = Field(
        default=_HB.seed_benchmark.max_tokens, alias="max_tokens", ge=1, le=1_000_000, title="Max tokens"
    )
    warmup_requests: int = Field(default=0, alias="warmup", ge=0, le=10_000, title="Warm-up requests")
    request_rate_rps: float | None = Field(default=None, alias="rate", gt=0, le=100_000, title="Request rate (req/s)")
    duration_s: float | None = Field(default=None, alias="duration", gt=0, le=86_400, title="Level duration (s)")
    temperature: float = Field(
        default=_HB.seed_benchmark.temperature, alias="temperature", ge=0, le=2, title="Temperature"
    )
    ignore_eos: bool = Field(default=False, alias="ignore_eos", title="Ignore EOS")
    slo_ttft_p50_ms: float = Field(
        default=_SLO.ttft_p50_ms, alias="ttft_p50", gt=0, le=3_600_000, title="SLO: TTFT p50 (ms)"
    )
    slo_ttft_p99_ms: float = Field(
        default=_SLO.ttft_p99_ms, alias="ttft_p99", gt=0, le=3_600_000, title="SLO: TTFT p99 (ms)"
    )
    slo_tpot_p50_ms: float = Field(
        default=_SLO.tpot_p50_ms, alias="tpot_p50", gt=0, le=3_600_000, title="SLO: TPOT p50 (ms)"
    )
    connect_timeout_s: float = Field(
        default=_TIMEOUTS.connect_s, alias="connect_timeout", gt=0, le=600, title="Connect timeout (s)"
    )
    ttft_timeout_s: float = Field(
        default=_TIMEOUTS.ttft_s, alias="ttft_timeout", gt=0, le=3600, title="First-token timeout (s)"
    )
    stall_timeout_s: float = Field(
        default=_TIMEOUTS.stall_s, alias="stall_timeout", gt=0, le=3600, title="Stall timeout (s)"
    )

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        value = normalize_base_url(value)
        parts = urlsplit(value)
        if parts.username or parts.password:
            raise ValueError("no user:password in the URL; put the key in the API key field")
        if any(SECRET_QUERY_KEYS.search(k) for k, _ in parse_qsl(parts.query, keep_blank_values=True)):
            raise ValueError("no keys or tokens in the URL; put the key in the API key field")
        return value

    @field_validator("model", "label")
    @classmethod
    def _strip_text(cls, value: str) -> str:
        return value.strip()

    @field_validator("levels", mode="before")
    @classmethod
    def _parse_levels(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part for part in value.replace(" ", "").split(",") if part]
        return value

    @field_validator("levels")
    @classmethod
    def _distinct_levels(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        # Length rules live here, not in Field(): pydantic would report a second error for the same parameter.
        if not value or len(value) > MAX_LEVELS:
            raise ValueError(f"give 1 to {MAX_LEVELS} levels, e.g. 1,2,4,8,16")
        if len(set(value)) != len(value):
            raise ValueError("each level once, e.g. 1,2,4,8,16")
        return value

    @property
    def slo(self) -> SloTargets:
        """The SLO targets of the form (per-request goodput thresholds follow the level targets)."""
        return SloTargets(
            ttft_p50_ms=self.slo_ttft_p50_ms,
            ttft_p99_ms=self.slo_ttft_p99_ms,
            tpot_p50_ms=self.slo_tpot_p50_ms,
            request_ttft_ms=self.slo_ttft_p99_ms,
            request_tpot_ms=self.slo_tpot_p50_ms,
        )

    @property
    def timeouts(self) -> Timeouts:
        """The form's timeouts."""
        return Timeouts(connect_s=self.connect_timeout_s, ttft_s=self.ttft_timeout_s, stall_s=self.stall_timeout_s)

    def run_settings(self, api_key: str | None = None, prompt_file: str | None = None) -> RunSettings:
        """The probe's settings (ProbeSettingsError when they cannot be built, e.g. no model picked)."""
        if not self.model:
            raise ProbeSettingsError("pick a model: type its name, or press 'Test connection' to list the served ones")
        try:
            return RunSettings(
                base_url=self.base_url,
                api_key=SecretStr(api_key) if api_key else None,
                model=self.model,
                label=self.label,
                api=self.api,
                workload=self.workload,
                input_tokens=self.input_tokens,
                shared_prefix_tokens=self.shared_prefix_tokens,
                prompt_file=prompt_file,
                concurrency=self.levels,
                requests_per_level=self.requests_per_level,
                warmup_requests=self.warmup_requests,
                request_rate_rps=self.request_rate_rps,
                duration_s=self.duration_s,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                ignore_eos=self.ignore_eos,
                slo=self.slo,
                timeouts=self.timeouts,
            )
        except ValidationError as exc:
            reasons = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ProbeSettingsError(f"these settings cannot run: {reasons}") from None


def prepare_run(form: ProbeForm, api_key: str | None = None, prompt_file: str | None = None) -> RunSettings:
    """Settings checked as ProbeRun.start() checks them, so nothing is stored for a refused run.

    Raises ProbeSettingsError (absurd or unsafe values, over a cap) or WorkloadError (an unreadable prompt file).
    """
    settings = form.run_settings(api_key, prompt_file)
    check_run_settings(settings)
    build_prompts(settings, settings.requests_per_level)
    return settings


class RunsView(BaseModel):
    """The /runs page's inputs: the filters and the runs opened (one: its details; two or more: compared)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    endpoint: str = Field(default="", alias="endpoint", title="Endpoint filter", max_length=500)
    model: str = Field(default="", alias="model", title="Model filter", max_length=300)
    runs: tuple[str, ...] = Field(default=(), alias="runs", title="Runs opened")

    @field_validator("runs")
    @classmethod
    def _check_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(value) > MAX_OPEN_RUNS:
            raise ValueError(f"open at most {MAX_OPEN_RUNS} runs at once")
        bad = [v for v in value if not RUN_ID.match(v)]
        if bad:
            raise ValueError(f"run ids are hexadecimal (6-32 characters), not {bad[0]!r}")
        return tuple(dict.fromkeys(value))


def default_cost_level(result: RunResult) -> LevelResult | None:
    """The level "Cost this" starts from: the highest concurrency within SLO, else the highest throughput."""
    usable = [lv for lv in result.levels if lv.output_tok_s and lv.completed]
    if not usable:
        return None
    within = [lv for lv in usable if lv.slo.met]
    if within:
        return max(within, key=lambda lv: lv.concurrency)
    return max(usable, key=lambda lv: lv.output_tok_s or 0.0)


def cost_params(level: LevelResult) -> dict[str, str]:
    """Query parameters of the cost page for a measured level: tps, out_tokens and (when measured) in_tokens."""
    params: dict[str, str] = {}
    if level.output_tok_s:
        params["tps"] = f"{level.output_tok_s:.1f}".removesuffix(".0")
    if level.output_tokens_per_request:
        params["out_tokens"] = str(max(1, round(level.output_tokens_per_request)))
    if level.input_tokens_per_request is not None and level.input_tokens:
        params["in_tokens"] = str(round(level.input_tokens_per_request))
    return params
