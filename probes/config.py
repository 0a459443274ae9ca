"""The settings of one probe run (endpoint, load, workload, timeouts, SLO targets, deployment) and the safety checks."""

import re
from collections.abc import Iterator
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_serializer, field_validator

from catalog.handbook import load_handbook
from i18n import Translate, identity
from probes.deployment import Deployment
from probes.errors import ProbeSettingsError
from probes.safety import host_refusal, parse_allowed_hosts
from settings import Settings, get_settings

DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16)
SECRET_QUERY_KEYS = re.compile(r"(key|token|secret|pass|auth|sig|credential|session)", re.IGNORECASE)


class ApiKind(StrEnum):
    """Which OpenAI endpoint the probe calls."""

    CHAT = "chat"
    COMPLETIONS = "completions"


class WorkloadKind(StrEnum):
    """The prompts a run sends."""

    SEED = "seed"  # the handbook's eight fixed prompts
    SYNTHETIC = "synthetic"  # generated prompts of a target input length
    SHARED_PREFIX = "shared_prefix"  # one long common system prompt, varied questions
    CODE_JSON = "code_json"  # code and JSON tasks (predictable output: speculative decoding shines)
    FILE = "file"  # a user JSONL file
    TRACE = "trace"  # replay a request trace's arrival times and lengths (probes/replay.py)
    SESSIONS = "sessions"  # multi-turn conversations, each turn sending the whole history (probes/session_level.py)


class SessionVariant(StrEnum):
    """Synthetic sessions: ordinary chat, or an agent (long tool-like context, short outputs)."""

    CHAT = "chat"
    AGENT = "agent"


def redact_url(url: str) -> str:
    """The URL without user:password@ and without query parameters whose names look secret."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    query = urlencode(
        [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not SECRET_QUERY_KEYS.search(k)]
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def normalize_base_url(value: str) -> str:
    """An http(s) base URL without surrounding spaces or trailing slash (ValueError otherwise)."""
    value = value.strip().rstrip("/")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("give the base URL like http://host:8000/v1")
    return value


def _slo_default(name: str) -> float:
    return float(getattr(load_handbook().slo, name))


class SloTargets(BaseModel):
    """Service-level targets; defaults are the handbook's (TTFT p50 < 300 ms, p99 < 1 s; TPOT p50 < 50 ms)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttft_p50_ms: float = Field(default_factory=lambda: _slo_default("ttft_p50_ms"), gt=0)
    ttft_p99_ms: float = Field(default_factory=lambda: _slo_default("ttft_p99_ms"), gt=0)
    tpot_p50_ms: float = Field(default_factory=lambda: _slo_default("tpot_p50_ms"), gt=0)
    # Per-request thresholds for goodput (vLLM's --goodput): a request is good if it meets both.
    request_ttft_ms: float = Field(default_factory=lambda: _slo_default("ttft_p99_ms"), gt=0)
    request_tpot_ms: float = Field(default_factory=lambda: _slo_default("tpot_p50_ms"), gt=0)
    max_failed_ratio: float = Field(default=0.01, ge=0, le=1)


class Timeouts(BaseModel):
    """Separate limits that end one request; without them a broken server hangs a probe."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    connect_s: float = Field(default=10.0, gt=0, description="TCP (and TLS) connect")
    ttft_s: float = Field(default=60.0, gt=0, description="from sending to the first output token (headers included)")
    stall_s: float = Field(default=30.0, gt=0, description="longest gap between two SSE data events")
    overlength_extra_tokens: int = Field(
        default=16, ge=0, description="a stream is ended once it delivers max_tokens plus this many tokens"
    )


class RunSettings(BaseModel):
    """Everything one probe run needs, and the stored record of it. The API key is never serialised.

    People set these through probes/options.py, which holds their URL parameters, flags, help and limits; this
    model refuses only what cannot run, so that every stored run still loads. The deployment's names are checked
    against the catalogs, except when a stored run is read (validation context {probes.deployment.STORED: True}).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field(repr=False)  # serialised without credentials (see endpoint)
    api_key: SecretStr | None = Field(default=None, exclude=True, repr=False)
    model: str = Field(min_length=1)
    label: str = Field(default="", max_length=200)
    api: ApiKind = ApiKind.CHAT
    workload: WorkloadKind = WorkloadKind.SEED
    input_tokens: int = Field(default=512, ge=1)
    shared_prefix_tokens: int = Field(default=1024, ge=1)
    prompt_file: str | None = None
    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY
    requests_per_level: int = Field(default=32, ge=0)
    warmup_requests: int = Field(default=0, ge=0)
    # Empty: closed loop at each concurrency level. Else one open-loop level per rate (runs stored before held one
    # rate or null; both still load), at most max_in_flight requests in flight (None: the highest concurrency).
    request_rate_rps: tuple[Annotated[float, Field(gt=0)], ...] = ()
    burstiness: float = Field(default=1.0, gt=0)  # gamma arrivals: 1 Poisson, above 1 burstier
    max_in_flight: int | None = Field(default=None, ge=1)
    find_max_rate: bool = False  # search the highest rate within the SLO (starting at the first rate, else 1/s)
    search_max_levels: int = Field(default=12, ge=1)
    search_max_duration_s: float = Field(default=600.0, gt=0)
    duration_s: float | None = Field(default=None, gt=0)  # None: no bound
    # Trace replay (workload trace): a built-in trace name or a file path, its format (None: sniffed), the slice
    # (original offsets [start, start + duration), at most limit requests) and the speed (10: ten times faster).
    trace: str | None = None
    trace_format: str | None = None
    trace_speed: float = Field(default=1.0, gt=0)
    trace_start_s: float = Field(default=0.0, ge=0)
    trace_duration_s: float | None = Field(default=None, gt=0)
    trace_limit: int | None = Field(default=None, ge=1)
    # Sessions (workload sessions): N users each holding a conversation of K turns, a think time between an answer
    # and the next turn; synthetic (chat or agent) or read from a conversations file (OpenAI messages, JSONL).
    sessions: int = Field(default=8, ge=1)
    turns: int = Field(default=4, ge=1)
    think_time_s: float = Field(default=0.0, ge=0)
    session_variant: SessionVariant = SessionVariant.CHAT
    conversations_file: str | None = None
    max_tokens: int = Field(default_factory=lambda: load_handbook().seed_benchmark.max_tokens, ge=1)
    temperature: float = Field(default_factory=lambda: load_handbook().seed_benchmark.temperature, ge=0, le=2)
    ignore_eos: bool = False
    include_usage: bool = True
    continuous_usage_stats: bool = False
    scrape_metrics: bool = True
    metrics_url: str | None = None  # None: /metrics beside /v1
    # A DCGM exporter's /metrics, scraped every dcgm_interval_s for GPU power (None: no power measured).
    dcgm_url: str | None = None
    dcgm_interval_s: float = Field(default=1.0, gt=0)
    seed: int = 0
    slo: SloTargets = Field(default_factory=SloTargets)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    deployment: Deployment = Field(default_factory=Deployment)  # what was measured (runs stored before: unknown)
    # Spread over this many Ray workers (probes/ray_driver.py); None: one process, Ray not imported. The cluster's
    # address (None: RAY_ADDRESS, else a local Ray started for the run).
    workers: int | None = Field(default=None, ge=1)
    ray_address: str | None = None

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        return normalize_base_url(value)

    @field_validator("request_rate_rps", mode="before")
    @classmethod
    def _rates(cls, value: object) -> object:
        """A stored run's single rate (or null) as a tuple of rates."""
        if value is None:
            return ()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (value,)
        return value

    @field_serializer("base_url")
    def _serialize_url(self, value: str) -> str:
        return redact_url(value)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """Repr shows the endpoint without credentials instead of the base URL."""
        yield "endpoint", self.endpoint
        yield from super().__repr_args__()

    @property
    def endpoint(self) -> str:
        """The base URL without credentials, safe to show and store."""
        return redact_url(self.base_url)

    @property
    def rate_mode(self) -> bool:
        """True when the levels are request rates (a sweep or a search) rather than concurrency levels."""
        return bool(self.request_rate_rps) or self.find_max_rate

    @property
    def in_flight_cap(self) -> int:
        """Most requests in flight at a rate level: max_in_flight, else the highest concurrency level."""
        return self.max_in_flight or max(self.concurrency, default=1)

    @property
    def search_start_rps(self) -> float:
        """Where a rate search starts: the first rate given, else 1 request/s."""
        return self.request_rate_rps[0] if self.request_rate_rps else 1.0

    @property
    def trace_mode(self) -> bool:
        """True when the run replays a trace (one open-loop level; the levels and rates are not run)."""
        return self.workload == WorkloadKind.TRACE

    @property
    def sessions_mode(self) -> bool:
        """True when the run holds multi-turn sessions (one level: every session at once)."""
        return self.workload == WorkloadKind.SESSIONS

    @property
    def level_count(self) -> int:
        """Levels the run plans (a search: at most this many)."""
        if self.trace_mode or self.sessions_mode:
            return 1
        if self.find_max_rate:
            return self.search_max_levels
        return len(self.request_rate_rps) if self.request_rate_rps else len(self.concurrency)

    @property
    def load_text(self) -> str:
        """The load the run sends, in words (the command line's start line, the run lists)."""
        return self.load_words()

    def load_words(self, tr: Translate = identity) -> str:
        """load_text worded by tr (the pages' language; English by default)."""
        if self.trace_mode:
            start = f"{self.trace_start_s:g}"
            if self.trace_duration_s is not None:
                window = tr("from {start} s for {duration} s").format(
                    start=start, duration=f"{self.trace_duration_s:g}"
                )
            else:
                window = tr("from {start} s").format(start=start)
            limit = (
                tr(", at most {count} requests").format(count=self.trace_limit) if self.trace_limit is not None else ""
            )
            return tr("replaying trace {trace} {window}{limit} at {speed}x speed").format(
                trace=self.trace, window=window, limit=limit, speed=f"{self.trace_speed:g}"
            )
        if self.sessions_mode:
            source = self.conversations_file or tr("synthetic {variant}").format(variant=self.session_variant.value)
            return tr("{sessions} sessions of at most {turns} turns ({source}), {think} s think time").format(
                sessions=self.sessions, turns=self.turns, source=source, think=f"{self.think_time_s:g}"
            )
        if self.find_max_rate:
            load = tr(
                "searching the highest request rate within the SLO from {start} req/s (at most {levels} levels, "
                "{budget} s)"
            ).format(
                start=f"{self.search_start_rps:g}",
                levels=self.search_max_levels,
                budget=f"{self.search_max_duration_s:g}",
            )
        elif self.request_rate_rps:
            load = tr("request rates {rates} req/s").format(rates=[float(r) for r in self.request_rate_rps])
        else:
            load = tr("levels {levels}").format(levels=list(self.concurrency))
        return tr("{load}, {count} requests each").format(load=load, count=self.requests_per_level)

    def rate_of_level(self, index: int) -> float | None:
        """The request rate of a sweep's level (None: closed loop, or a search, whose levels store their own)."""
        if self.find_max_rate or not 0 <= index < len(self.request_rate_rps):
            return None
        return self.request_rate_rps[index]

    @property
    def total_requests(self) -> int:
        """Requests the run may send, warm-up included (a search: its first level; the cap bounds the rest).

        A trace replay's count is the slice's (probes/replay.py checks it against the cap); here its limit, if any.
        """
        if self.trace_mode:
            return self.warmup_requests + (self.trace_limit or 0)
        if self.sessions_mode:  # a conversations file may hold fewer (probes/session_level.py counts them)
            return self.warmup_requests + self.sessions * self.turns
        levels = 1 if self.find_max_rate else self.level_count
        return self.warmup_requests + self.requests_per_level * levels


def check_run_settings(run: RunSettings, limits: Settings | None = None) -> None:
    """Refuse absurd or unsafe settings with a message a person can act on (ProbeSettingsError)."""
    limits = limits or get_settings()
    if not run.concurrency:
        raise ProbeSettingsError("give at least one concurrency level, e.g. 1,2,4,8,16")
    if min(run.concurrency) < 1:
        raise ProbeSettingsError("concurrency levels must be 1 or more")
    if max(run.concurrency) > limits.probe_max_concurrency and not (run.rate_mode and run.max_in_flight):
        raise ProbeSettingsError(
            f"concurrency {max(run.concurrency)} is over the cap of {limits.probe_max_concurrency} "
            "(raise PROBE_MAX_CONCURRENCY to allow it)"
        )
    if run.max_in_flight is not None and run.max_in_flight > limits.probe_max_concurrency:
        raise ProbeSettingsError(
            f"max in flight {run.max_in_flight} is over the cap of {limits.probe_max_concurrency} "
            "(raise PROBE_MAX_CONCURRENCY to allow it)"
        )
    if len(set(run.request_rate_rps)) != len(run.request_rate_rps):
        raise ProbeSettingsError("request rates repeat; give each rate once")
    if len(set(run.concurrency)) != len(run.concurrency):
        raise ProbeSettingsError("concurrency levels repeat; give each level once")
    if run.requests_per_level < 1:
        raise ProbeSettingsError("requests per level must be at least 1")
    if run.sessions_mode:
        _check_sessions(run, limits)
    if run.total_requests > limits.probe_max_requests_per_run:
        raise ProbeSettingsError(
            f"this run would send {run.total_requests} requests, over the cap of {limits.probe_max_requests_per_run} "
            f"({'fewer sessions or turns' if run.sessions_mode else 'fewer levels or requests per level'}, "
            "or raise PROBE_MAX_REQUESTS_PER_RUN)"
        )
    if run.trace_mode and not run.trace:
        raise ProbeSettingsError("the trace workload needs a trace: a file or a built-in name (azure-code, azure-conv)")
    if run.trace_mode and run.rate_mode:
        raise ProbeSettingsError("a trace replay sends at the trace's own times: drop the request rates or the search")
    if run.workload == WorkloadKind.FILE and not run.prompt_file:
        raise ProbeSettingsError("the file workload needs a JSONL prompt file")
    host = (urlsplit(run.base_url).hostname or "").lower()
    refusal = host_refusal(host, parse_allowed_hosts(limits.probe_allowed_hosts))
    if refusal:
        raise ProbeSettingsError(refusal)
    if run.dcgm_url:
        refusal = host_refusal(
            (urlsplit(run.dcgm_url).hostname or "").lower(), parse_allowed_hosts(limits.probe_allowed_hosts)
        )
        if refusal:
            raise ProbeSettingsError(f"DCGM exporter URL: {refusal}")


def _check_sessions(run: RunSettings, limits: Settings) -> None:
    """Sessions hold a conversation: the chat API, closed loop per session, at most the concurrency cap of users."""
    if run.api != ApiKind.CHAT:
        raise ProbeSettingsError("sessions need the chat API (a list of messages); completions cannot hold a history")
    if run.rate_mode:
        raise ProbeSettingsError("sessions pace themselves (one turn after another): drop the request rates or search")
    if run.sessions > limits.probe_max_concurrency:
        raise ProbeSettingsError(
            f"{run.sessions} sessions is over the concurrency cap of {limits.probe_max_concurrency} "
            "(each session is one user in flight; raise PROBE_MAX_CONCURRENCY to allow it)"
        )
