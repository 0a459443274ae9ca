"""Every probe setting a person sets, defined once: URL parameter, CLI flag, label, help, default and limits.

The deployment's fields come from probes/deployment.py, where they are defined.
"""

from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, ValidationInfo, field_validator

from i18n import N_
from probes.config import (
    DEFAULT_CONCURRENCY,
    SECRET_QUERY_KEYS,
    ApiKind,
    RunSettings,
    SessionVariant,
    SloTargets,
    Timeouts,
    WorkloadKind,
    check_run_settings,
    normalize_base_url,
)
from probes.deployment import ALLOWED, Deployment, catalog_id, deployment_fields
from probes.errors import ProbeSettingsError
from probes.field_text import CLI_REQUIRED, FLAG, MAX_LEVELS, MAX_RATE
from probes.ratesearch import parse_rates
from probes.replay import check_replay
from probes.session_level import check_sessions
from probes.traces import TraceFormat
from probes.workloads import build_prompts

DEFAULT_BASE_URL = "http://localhost:8000/v1"

# The run's own defaults (the handbook's benchmark and SLO, the default timeouts): the options start from them.
RUN_DEFAULTS = RunSettings(base_url=DEFAULT_BASE_URL, model="-")

Level = Annotated[int, Field(ge=1)]
Rate = Annotated[float, Field(gt=0, le=MAX_RATE)]
DEPLOYMENT_OPTIONS = deployment_fields()  # Deployment field -> the option (field, URL parameter) that sets it
_DEPLOYMENT_FIELD = {option: name for name, option in DEPLOYMENT_OPTIONS.items()}


def _deployment_option(name: str) -> Any:
    """The option of a Deployment field: its title, help, limits and allowed values; its option name as alias.

    The deployment is defined once, in probes/deployment.py; the option's field name must be that name too.
    """
    field = Deployment.model_fields[name]
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    bounds = {key: getattr(item, key) for item in field.metadata for key in ("ge", "le") if hasattr(item, key)}
    return Field(
        default=None,
        alias=DEPLOYMENT_OPTIONS[name],
        title=field.title,
        description=field.description,
        json_schema_extra={key: value for key, value in extra.items() if key == ALLOWED} or None,
        **bounds,
    )


# long: one declared field per setting (label, help, limits, flag), each defined here once.
class ProbeOptions(BaseModel):
    """The settings the /probe page and `python -m probes` share; each field's alias is its URL parameter.

    The field's title is the page's label, its description the help of the widget and of the flag, its
    constraints the limits of both. Defaults are RunSettings' (run_settings() builds one from the options).
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    base_url: str = Field(
        default=DEFAULT_BASE_URL,
        alias="url",
        title=N_("Endpoint URL"),
        description=N_(
            "The OpenAI-compatible base URL, e.g. http://host:8000/v1 (vLLM, SGLang, LMDeploy, TGI, "
            "llama.cpp server, Ollama). Credentials in it are never stored."
        ),
        max_length=500,
        json_schema_extra={CLI_REQUIRED: True, ALLOWED: N_("http(s)://host[:port]/path, up to 500 characters")},
    )
    model: str = Field(
        default="",
        alias="model",
        title=N_("Model"),
        description=N_("The model name as the server serves it."),
        max_length=300,
    )
    label: str = Field(
        default=RUN_DEFAULTS.label,
        alias="label",
        title=N_("Run label"),
        description=N_("A name for the run, shown in the run lists."),
        max_length=200,
    )
    api: ApiKind = Field(
        default=RUN_DEFAULTS.api,
        alias="api",
        title=N_("API"),
        description=N_("The OpenAI API called: chat completions or (legacy) completions."),
    )
    workload: WorkloadKind = Field(
        default=RUN_DEFAULTS.workload,
        alias="workload",
        title=N_("Workload"),
        description=N_(
            "The prompts sent: seed, the handbook's eight fixed prompts; synthetic, prompts of a set "
            "length; shared_prefix, one long system prompt with varied questions (shows prefix caching); "
            "code_json, code and JSON tasks (predictable output, for speculative decoding); file, your JSONL "
            "prompts; trace, replay a request trace's arrival times and lengths (one open-loop level); sessions, "
            "multi-turn conversations that resend their growing history (one level, figures per turn)."
        ),
    )
    sessions: int = Field(
        default=RUN_DEFAULTS.sessions,
        alias="sessions",
        title=N_("Sessions (users)"),
        description=N_(
            "Sessions workload: this many users, each holding one conversation, all at once (at most "
            "PROBE_MAX_CONCURRENCY)."
        ),
        ge=1,
        le=100_000,
    )
    turns: int = Field(
        default=RUN_DEFAULTS.turns,
        alias="turns",
        title=N_("Turns per session"),
        description=N_(
            "Sessions workload: each conversation's turns; every turn sends the whole history so far (the "
            "server's earlier answers included) plus a new user message. A conversations file's longer ones are cut."
        ),
        ge=1,
        le=1_000,
    )
    think_time_s: float = Field(
        default=RUN_DEFAULTS.think_time_s,
        alias="think_time",
        title=N_("Think time (s)"),
        description=N_("Sessions workload: the wait after an answer before the session's next turn."),
        ge=0,
        le=3_600,
    )
    session_variant: SessionVariant = Field(
        default=RUN_DEFAULTS.session_variant,
        alias="session_variant",
        title=N_("Session kind"),
        description=N_(
            "Sessions workload: chat (short system prompt, user messages of about 64 tokens, max tokens "
            "per answer) or agent (about 2,048 tokens of tool schemas, a tool result of about 512 tokens per turn, "
            "answers of at most 48 tokens)."
        ),
    )
    trace: str | None = Field(
        default=RUN_DEFAULTS.trace,
        alias="trace",
        title=N_("Trace"),
        description=N_(
            "Trace workload: a trace file, or a built-in trace by name: azure-code, azure-conv (Azure LLM "
            "inference 2023 traces, CC-BY 4.0; Patel et al., Splitwise, ISCA 2024)."
        ),
        max_length=1000,
    )
    trace_format: TraceFormat | None = Field(
        default=None,
        alias="trace_format",
        title=N_("Trace format"),
        description=N_(
            "Trace workload: mooncake (JSONL: timestamp ms, input_length, output_length, hash_ids), azure "
            "(TIMESTAMP, ContextTokens, GeneratedTokens) or csv (timestamp_s, input_tokens, output_tokens); "
            "without it, told from the file (built-in traces: azure)."
        ),
        json_schema_extra={ALLOWED: "mooncake, azure, csv"},
    )
    trace_speed: float = Field(
        default=RUN_DEFAULTS.trace_speed,
        alias="trace_speed",
        title=N_("Trace speed"),
        description=N_("Trace workload: time scaling; 10 replays ten times faster (arrival times divided by it)."),
        gt=0,
        le=10_000,
    )
    trace_start_s: float = Field(
        default=RUN_DEFAULTS.trace_start_s,
        alias="trace_start",
        title=N_("Trace start (s)"),
        description=N_("Trace workload: skip the requests before this many seconds of the trace."),
        ge=0,
        le=10_000_000,
        json_schema_extra={FLAG: "--trace-start"},
    )
    trace_duration_s: float | None = Field(
        default=RUN_DEFAULTS.trace_duration_s,
        alias="trace_duration",
        title=N_("Trace duration (s)"),
        description=N_(
            "Trace workload: replay this many seconds of the trace (trace time) from the start; without it, to the end."
        ),
        gt=0,
        le=10_000_000,
        json_schema_extra={FLAG: "--trace-duration"},
    )
    trace_limit: int | None = Field(
        default=RUN_DEFAULTS.trace_limit,
        alias="trace_limit",
        title=N_("Trace limit (requests)"),
        description=N_("Trace workload: replay at most this many requests of the slice."),
        ge=1,
        le=1_000_000,
    )
    input_tokens: int = Field(
        default=RUN_DEFAULTS.input_tokens,
        alias="input_tokens",
        title=N_("Prompt length (tokens)"),
        description=N_("Synthetic workload: the prompt length in tokens (common words)."),
        ge=1,
        le=200_000,
    )
    shared_prefix_tokens: int = Field(
        default=RUN_DEFAULTS.shared_prefix_tokens,
        alias="prefix_tokens",
        title=N_("Shared system prompt (tokens)"),
        description=N_("Shared-prefix workload: the length of the system prompt every request shares, in tokens."),
        ge=1,
        le=200_000,
    )
    concurrency: tuple[Level, ...] = Field(
        default=DEFAULT_CONCURRENCY,
        alias="levels",
        title=N_("Concurrency levels"),
        description=N_("Comma-separated, e.g. 1,2,4,8,16; each at most PROBE_MAX_CONCURRENCY."),
        json_schema_extra={ALLOWED: N_("1–{max_levels} distinct levels ≥ 1")},
    )
    requests_per_level: int = Field(
        default=RUN_DEFAULTS.requests_per_level,
        alias="requests",
        title=N_("Requests per level"),
        description=N_("Requests sent at each level; the whole run at most PROBE_MAX_REQUESTS_PER_RUN."),
        ge=1,
        le=100_000,
        json_schema_extra={FLAG: "--requests"},
    )
    max_tokens: int = Field(
        default=RUN_DEFAULTS.max_tokens,
        alias="max_tokens",
        title=N_("Max tokens"),
        description=N_("Output tokens asked per request."),
        ge=1,
        le=1_000_000,
    )
    warmup_requests: int = Field(
        default=RUN_DEFAULTS.warmup_requests,
        alias="warmup",
        title=N_("Warm-up requests (not counted)"),
        description=N_("Requests sent before the first level and left out of every figure."),
        ge=0,
        le=10_000,
        json_schema_extra={FLAG: "--warmup"},
    )
    request_rate_rps: tuple[Rate, ...] = Field(
        default=RUN_DEFAULTS.request_rate_rps,
        alias="rate",
        title=N_("Request rates (req/s)"),
        description=N_(
            "Comma-separated, e.g. 1,2,4,8: one open-loop level per rate, arrivals at that many requests/s "
            "(Poisson, or gamma with a burstiness), at most max-in-flight at a time; the concurrency levels are then "
            "not run. Without it, a closed loop at each concurrency level (each finished request is replaced at once). "
            "With find-max-rate, the first rate is where the search starts."
        ),
        json_schema_extra={FLAG: "--request-rate", ALLOWED: N_("1–{max_levels} distinct rates > 0, ≤ {max_rate}")},
    )
    burstiness: float = Field(
        default=RUN_DEFAULTS.burstiness,
        alias="burstiness",
        title=N_("Burstiness"),
        description=N_(
            "Rate levels: gamma arrivals with this burstiness (the squared coefficient of variation of "
            "the gaps): 1 is Poisson, below 1 more regular, above 1 burstier."
        ),
        gt=0,
        le=100,
    )
    max_in_flight: int | None = Field(
        default=RUN_DEFAULTS.max_in_flight,
        alias="max_in_flight",
        title=N_("Max requests in flight"),
        description=N_(
            "Rate levels: at most this many requests in flight (arrivals wait for a free slot), to spare a "
            "small server; without it, the highest concurrency level. At most PROBE_MAX_CONCURRENCY."
        ),
        ge=1,
        le=100_000,
    )
    find_max_rate: bool = Field(
        default=RUN_DEFAULTS.find_max_rate,
        alias="find_max_rate",
        title=N_("Find the highest rate within the SLO"),
        description=N_(
            "Search the request rate: from the first rate (else 1 req/s) double until a level misses the "
            "SLO, then bisect to within 10%; one level per rate measured, bounded by the search's levels and time "
            "and by PROBE_MAX_REQUESTS_PER_RUN."
        ),
    )
    search_max_levels: int = Field(
        default=RUN_DEFAULTS.search_max_levels,
        alias="search_max_levels",
        title=N_("Search: most levels"),
        description=N_("Rate search: measure at most this many rates."),
        ge=1,
        le=MAX_LEVELS,
    )
    search_max_duration_s: float = Field(
        default=RUN_DEFAULTS.search_max_duration_s,
        alias="search_max_duration",
        title=N_("Search: time budget (s)"),
        description=N_(
            "Rate search: start no level once this many seconds went by (or the next level would overrun them)."
        ),
        gt=0,
        le=86_400,
    )
    duration_s: float | None = Field(
        default=RUN_DEFAULTS.duration_s,
        alias="duration",
        title=N_("Level duration bound (s)"),
        description=N_("Per level, stop sending new requests after this many seconds; without it, no bound."),
        gt=0,
        le=86_400,
        json_schema_extra={FLAG: "--duration"},
    )
    temperature: float = Field(
        default=RUN_DEFAULTS.temperature,
        alias="temperature",
        title=N_("Temperature"),
        description=N_("Sampling temperature."),
        ge=0,
        le=2,
    )
    ignore_eos: bool = Field(
        default=RUN_DEFAULTS.ignore_eos,
        alias="ignore_eos",
        title=N_("Ignore EOS (always generate max tokens)"),
        description=N_("vLLM / SGLang extension: every request generates max tokens."),
    )
    slo_ttft_p50_ms: float = Field(
        default=RUN_DEFAULTS.slo.ttft_p50_ms,
        alias="ttft_p50",
        title=N_("TTFT p50 target (ms)"),
        description=N_("SLO: a level meets it when its TTFT p50 is at most this many ms."),
        gt=0,
        le=3_600_000,
    )
    slo_ttft_p99_ms: float = Field(
        default=RUN_DEFAULTS.slo.ttft_p99_ms,
        alias="ttft_p99",
        title=N_("TTFT p99 target (ms)"),
        description=N_("SLO: a level meets it when its TTFT p99 is at most this many ms."),
        gt=0,
        le=3_600_000,
    )
    slo_tpot_p50_ms: float = Field(
        default=RUN_DEFAULTS.slo.tpot_p50_ms,
        alias="tpot_p50",
        title=N_("TPOT p50 target (ms)"),
        description=N_("SLO: a level meets it when its TPOT p50 is at most this many ms."),
        gt=0,
        le=3_600_000,
    )
    connect_timeout_s: float = Field(
        default=RUN_DEFAULTS.timeouts.connect_s,
        alias="connect_timeout",
        title=N_("Connect timeout (s)"),
        description=N_("A request fails when its TCP (and TLS) connection is not up within this many seconds."),
        gt=0,
        le=600,
        json_schema_extra={FLAG: "--connect-timeout"},
    )
    ttft_timeout_s: float = Field(
        default=RUN_DEFAULTS.timeouts.ttft_s,
        alias="ttft_timeout",
        title=N_("First-token timeout (s)"),
        description=N_("A request fails when no output token arrived this many seconds after sending it."),
        gt=0,
        le=3600,
        json_schema_extra={FLAG: "--ttft-timeout"},
    )
    stall_timeout_s: float = Field(
        default=RUN_DEFAULTS.timeouts.stall_s,
        alias="stall_timeout",
        title=N_("Stall timeout (s)"),
        description=N_("After the first token, a stream fails when no data arrived for this many seconds."),
        gt=0,
        le=3600,
        json_schema_extra={FLAG: "--stall-timeout"},
    )
    dcgm_url: str | None = Field(
        default=RUN_DEFAULTS.dcgm_url,
        alias="dcgm_url",
        title=N_("DCGM exporter URL"),
        description=N_(
            "A DCGM exporter's metrics URL on the GPU machine, e.g. http://gpu-box:9400/metrics: the probe reads "
            "each GPU's power (DCGM_FI_DEV_POWER_USAGE) and energy counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) "
            "during the run and reports the joules per output token measured. Without it, no power is measured."
        ),
        max_length=500,
        json_schema_extra={ALLOWED: N_("http(s)://host[:port]/path, up to 500 characters")},
    )
    dcgm_interval_s: float = Field(
        default=RUN_DEFAULTS.dcgm_interval_s,
        alias="dcgm_interval",
        title=N_("DCGM scrape interval (s)"),
        description=N_("With a DCGM exporter URL: read the GPUs' power this often."),
        ge=0.1,
        le=60,
        json_schema_extra={FLAG: "--dcgm-interval"},
    )
    workers: int | None = Field(
        default=RUN_DEFAULTS.workers,
        alias="workers",
        title=N_("Ray workers"),
        description=N_(
            "Spread every level over this many Ray workers (actors), each sending its exact share of the load; "
            "percentiles come from all their samples. Without it, one process and no Ray. Needs the ray extra "
            "(pip install -r requirements-ray.txt)."
        ),
        ge=1,
        le=1024,
    )
    ray_address: str | None = Field(
        default=RUN_DEFAULTS.ray_address,
        alias="ray_address",
        title=N_("Ray address"),
        description=N_(
            "With workers: the Ray cluster to join, e.g. ray-head:6379 or ray://ray-head:10001; without it, "
            "RAY_ADDRESS, else a local Ray started for the run."
        ),
        max_length=500,
    )
    # The deployment measured (optional; blank engine, model and quantization are read from the server).
    gpu: str | None = _deployment_option("gpu")
    gpu_count: int | None = _deployment_option("gpu_count")
    deploy_model: str | None = _deployment_option("model")
    engine: str | None = _deployment_option("engine")
    quant: str | None = _deployment_option("quant")

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        return normalize_base_url(value)

    @field_validator("model", "label")
    @classmethod
    def _strip_text(cls, value: str) -> str:
        return value.strip()

    @field_validator("ray_address")
    @classmethod
    def _blank_address(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("dcgm_url")
    @classmethod
    def _check_dcgm_url(cls, value: str | None) -> str | None:
        """Blank is none; else an http(s) URL without user:password (the link and the database keep it)."""
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("give the exporter's URL like http://gpu-box:9400/metrics")
        if parts.username or parts.password:
            raise ValueError("no user:password in the DCGM exporter URL")
        if any(SECRET_QUERY_KEYS.search(key) for key, _ in parse_qsl(parts.query, keep_blank_values=True)):
            raise ValueError("no keys or tokens in the DCGM exporter URL")
        return value.strip()

    @field_validator(*(o for f, o in DEPLOYMENT_OPTIONS.items() if f != "gpu_count"), mode="before")
    @classmethod
    def _catalog_names(cls, value: object, info: ValidationInfo) -> object:
        """A GPU, model, engine or quantization name as its catalog id, matched as the advisor matches names."""
        if not isinstance(value, str):
            return value
        return catalog_id(_DEPLOYMENT_FIELD[info.field_name or ""], value)

    @field_validator("concurrency", mode="before")
    @classmethod
    def _parse_levels(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part for part in value.replace(" ", "").split(",") if part]
        return value

    @field_validator("request_rate_rps", mode="before")
    @classmethod
    def _parse_rates(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and not value.strip()):
            return ()
        if isinstance(value, str):
            return parse_rates(value)
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return parse_rates(",".join(str(v) for v in value)) if value else ()
        return value

    @field_validator("request_rate_rps")
    @classmethod
    def _distinct_rates(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if len(value) > MAX_LEVELS:
            raise ValueError(f"give at most {MAX_LEVELS} rates, e.g. 1,2,4,8")
        if len(set(value)) != len(value):
            raise ValueError("each rate once, e.g. 1,2,4,8")
        return value

    @field_validator("concurrency")
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
        """The SLO targets (per-request goodput thresholds follow the level targets TTFT p99 and TPOT p50)."""
        return SloTargets(
            ttft_p50_ms=self.slo_ttft_p50_ms,
            ttft_p99_ms=self.slo_ttft_p99_ms,
            tpot_p50_ms=self.slo_tpot_p50_ms,
            request_ttft_ms=self.slo_ttft_p99_ms,
            request_tpot_ms=self.slo_tpot_p50_ms,
        )

    @property
    def timeouts(self) -> Timeouts:
        """The per-request timeouts."""
        return Timeouts(connect_s=self.connect_timeout_s, ttft_s=self.ttft_timeout_s, stall_s=self.stall_timeout_s)

    @property
    def deployment(self) -> Deployment:
        """The deployment as given (catalog ids; None where left blank)."""
        return Deployment(**{name: getattr(self, option) for name, option in DEPLOYMENT_OPTIONS.items()})

    def run_settings(self, api_key: str | None = None, files: Mapping[str, str] | None = None) -> RunSettings:
        """The run's settings: every field named as a RunSettings field, the SLO and the timeouts.

        Raises ProbeSettingsError when they cannot be built (e.g. no model).
        """
        values: dict[str, Any] = {n: getattr(self, n) for n in type(self).model_fields if n in RunSettings.model_fields}
        values.update(slo=self.slo, timeouts=self.timeouts, deployment=self.deployment)
        if api_key:
            values["api_key"] = SecretStr(api_key)
        values.update({name: path for name, path in (files or {}).items() if name in UPLOADED_FILES and path})
        if self.trace_format is not None:
            values["trace_format"] = self.trace_format.value
        try:
            return RunSettings(**values)
        except ValidationError as exc:
            reasons = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ProbeSettingsError(f"these settings cannot run: {reasons}") from None


# The files a page uploads (RunSettings fields holding a path), given to run_settings() beside the options.
UPLOADED_FILES = frozenset({"prompt_file", "conversations_file"})


def prepare_run(
    options: ProbeOptions, api_key: str | None = None, files: Mapping[str, str] | None = None
) -> RunSettings:
    """Settings checked as ProbeRun.start() checks them, so nothing is stored for a refused run.

    Raises ProbeSettingsError (absurd or unsafe values, over a cap) or WorkloadError (an unreadable prompt file).
    """
    settings = options.run_settings(api_key, files)
    check_run_settings(settings)
    if settings.trace_mode:
        check_replay(settings)  # malformed lines (with their numbers) or a slice over the request cap
    if settings.sessions_mode:
        check_sessions(settings)  # a conversations file's malformed lines, or sessions over the request cap
    build_prompts(settings, settings.requests_per_level)
    return settings
