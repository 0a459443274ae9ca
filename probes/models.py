"""Result models of a probe run: per-request samples, per-level summaries, the run; units in every key name."""

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from probes.config import RunSettings
from probes.power import MeasuredEnergy, PowerSample

SCHEMA_VERSION = 1


class ErrorKind(StrEnum):
    """Why a request failed; counted per level."""

    CONNECT = "connect"  # refused, unreachable host, DNS
    CONNECT_TIMEOUT = "connect_timeout"
    TLS = "tls"
    AUTH = "auth"  # 401 / 403
    NOT_FOUND = "not_found"  # 404, e.g. unknown model
    RATE_LIMITED = "rate_limited"  # 429 (Retry-After kept)
    SERVER_ERROR = "server_error"  # 5xx
    HTTP_ERROR = "http_error"  # another 4xx
    TTFT_TIMEOUT = "ttft_timeout"  # no first token in time (headers included)
    STALL_TIMEOUT = "stall_timeout"  # too long between two SSE events
    OVERLENGTH = "overlength"  # the stream ran past max_tokens
    CLOSED_WITHOUT_RESPONSE = "closed_without_response"  # closed or reset after the request, before any response byte
    STREAM_RESET = "stream_reset"  # connection reset or closed mid-body
    STREAM_TRUNCATED = "stream_truncated"  # the body ended cleanly without [DONE] or a finish reason
    MALFORMED_SSE = "malformed_sse"  # a data line that is not JSON
    STREAM_ERROR = "stream_error"  # an error object inside a 200 stream
    NOT_STREAMED = "not_streamed"  # a JSON body where a stream was asked
    CANCELLED = "cancelled"  # the run was cancelled while the request was in flight
    CLIENT_ERROR = "client_error"  # anything else (a bug, an unexpected exception)


CONNECTION_KINDS = frozenset({ErrorKind.CONNECT, ErrorKind.CONNECT_TIMEOUT, ErrorKind.TLS})


class TokenSource(StrEnum):
    """Where a request's output token count came from."""

    USAGE = "usage"  # the server's usage object (stream_options.include_usage)
    CHUNKS = "chunks"  # counted content chunks, one token each (the server gave no usage)


class RunStatus(StrEnum):
    """Lifecycle of a run (stored)."""

    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class RequestSample(BaseModel):
    """One request's raw timings (ms from its send time) and outcome; None for what was not measured."""

    model_config = ConfigDict(frozen=True)

    level_index: int
    concurrency: int
    index: int = Field(description="order of sending within the level")
    start_s: float = Field(description="send time, seconds from the level's start")
    ttft_ms: float | None = Field(default=None, description="first output token (content or reasoning)")
    first_content_ms: float | None = Field(default=None, description="first non-reasoning content token")
    reasoning_ms: float | None = Field(default=None, description="last reasoning chunk (thinking time)")
    tpot_ms: float | None = Field(default=None, description="(e2e - ttft) / (output_tokens - 1)")
    e2e_ms: float | None = None
    itl_ms: list[float] = Field(default_factory=list, description="one gap per output token after the first")
    chunk_ms: list[float] = Field(default_factory=list, description="arrival of each output chunk")
    chunk_tokens: list[int] = Field(default_factory=list, description="tokens carried by each output chunk")
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    token_source: TokenSource | None = None
    finish_reason: str | None = None
    http_status: int | None = None
    error_kind: ErrorKind | None = None
    error: str | None = None
    retry_after_s: float | None = None
    server_request_id: str | None = None
    trace_line: int | None = Field(default=None, description="trace replay: the request's line in the trace file")
    session: int | None = Field(default=None, description="sessions: the session's number in the run, from 0")
    turn: int | None = Field(default=None, description="sessions: the turn within its session, from 1")
    worker: int | None = Field(default=None, description="--workers: the Ray worker that sent it, from 0")
    scheduled_s: float | None = Field(
        default=None, description="--workers: when it was due to be sent, seconds from the level's shared start"
    )

    @property
    def ok(self) -> bool:
        """True when the request completed without error."""
        return self.error_kind is None


class Stats(BaseModel):
    """Mean and percentiles (numpy's linear interpolation, as vLLM reports them); None without data."""

    model_config = ConfigDict(frozen=True)

    count: int = 0
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None


class SloOutcome(BaseModel):
    """A level against the SLO targets."""

    model_config = ConfigDict(frozen=True)

    met: bool
    attainment_ratio: float | None = Field(description="share of sent requests that met the per-request targets")
    goodput_req_s: float | None = Field(description="good requests per second of level wall time")
    violations: list[str] = Field(default_factory=list)


class ServerMetrics(BaseModel):
    """The few Prometheus metrics that explain a level: scraped before and after it, and ratios of the deltas."""

    model_config = ConfigDict(frozen=True)

    source: str = Field(description="engine family the names came from: vllm, sglang or other")
    before: dict[str, float] = Field(default_factory=dict)
    after: dict[str, float] = Field(default_factory=dict)
    prefix_cache_hit_ratio: float | None = None
    spec_decode_acceptance_ratio: float | None = None


class ScheduleLag(BaseModel):
    """Open-loop send lag: actual send time minus scheduled time, in ms (percentiles over the level's requests)."""

    model_config = ConfigDict(frozen=True)

    p50: float | None = None
    p99: float | None = None


class TurnStats(BaseModel):
    """One turn index across a level's sessions: requests, TTFT p50/p99, TPOT and E2E p50, mean input tokens."""

    model_config = ConfigDict(frozen=True)

    turn: int
    count: int = Field(description="completed requests of this turn")
    failed: int = 0
    ttft_ms_p50: float | None = None
    ttft_ms_p99: float | None = None
    tpot_ms_p50: float | None = None
    e2e_ms_p50: float | None = None
    input_tokens_mean: float | None = None


class LevelResult(BaseModel):
    """One concurrency level: counts, throughput over the level's wall time, latency percentiles, SLO."""

    model_config = ConfigDict(frozen=True)

    index: int
    concurrency: int
    request_rate_rps: float | None = None
    started_at: datetime
    finished_at: datetime
    duration_s: float
    requests: int
    completed: int
    failed: int
    errors: dict[str, int] = Field(default_factory=dict, description="failed requests by error kind")
    input_tokens: int
    output_tokens: int
    input_tokens_per_request: float | None = None
    output_tokens_per_request: float | None = None
    token_source: TokenSource | None = Field(default=None, description="chunks if any request lacked usage")
    req_s: float | None = None
    output_tok_s: float | None = None
    total_tok_s: float | None = None
    ttft_ms: Stats
    tpot_ms: Stats
    itl_ms: Stats
    e2e_ms: Stats
    slo: SloOutcome
    server_metrics: ServerMetrics | None = None
    schedule_lag_ms: ScheduleLag | None = Field(default=None, description="trace replay: send lag p50 and p99")
    turns: list[TurnStats] | None = Field(default=None, description="sessions: the figures per turn index")


class StopReason(StrEnum):
    """Why a search stopped."""

    CONVERGED = "converged"  # the best rate is known within the precision
    FIRST_RATE_MISSED = "first_rate_missed"  # the start rate already missed the SLO: no best rate
    MAX_LEVELS = "max_levels"  # the level budget ran out
    MAX_REQUESTS = "max_requests"  # the request budget ran out (or would, with the next level)
    MAX_DURATION = "max_duration"  # the time budget ran out (or would, with the next level)
    RATE_CAP = "rate_cap"  # every rate up to MAX_RATE_RPS met the SLO


class RateOutcome(BaseModel):
    """One level at one rate, as the search needs it."""

    model_config = ConfigDict(frozen=True)

    met_slo: bool
    requests: int = Field(ge=0, description="requests the level sent")
    duration_s: float = Field(ge=0, description="the level's wall time")
    violations: tuple[str, ...] = ()  # why it missed, when it did

    @classmethod
    def of_level(cls, level: "LevelResult") -> "RateOutcome":
        """A probe level's outcome: its SLO verdict, requests sent and wall time."""
        return cls(
            met_slo=level.slo.met,
            requests=level.requests,
            duration_s=level.duration_s,
            violations=tuple(level.slo.violations),
        )


class RateLevel(RateOutcome):
    """One measured level of a search, in order."""

    index: int = Field(ge=0, description="order of measuring, from 0")
    rate_rps: float = Field(gt=0)
    phase: Literal["grow", "bisect"]


class RateSearch(BaseModel):
    """A finished search: its levels, the best rate within SLO, the bracket above it, and why it stopped."""

    model_config = ConfigDict(frozen=True)

    best_rate_rps: float | None = Field(description="highest rate measured that met the SLO; None if none did")
    lowest_missed_rate_rps: float | None = Field(description="lowest rate measured that missed; None if none did")
    stop_reason: StopReason
    stop_detail: str = Field(description="the stop reason in words")
    precision: float
    requests: int = Field(description="requests sent over all levels")
    duration_s: float = Field(description="the search's wall time (by its clock)")
    levels: tuple[RateLevel, ...] = ()


class WorkerStats(BaseModel):
    """One Ray worker of a --workers run: where it ran, what it sent, its client CPU and its clock and send lag."""

    model_config = ConfigDict(frozen=True)

    id: int = Field(description="the worker's number, from 0")
    node: str = Field(description="the Ray node it ran on (its IP address)")
    requests: int = Field(description="requests it finished (failed ones included)")
    errors: int = Field(description="of those, the failed ones")
    cpu_percent: float | None = Field(description="its process's CPU time over its levels' wall time, % of one core")
    clock_offset_ms: float | None = Field(description="its wall clock minus the driver's, measured by round trip")
    schedule_lag_ms: ScheduleLag = Field(description="actual minus scheduled send time over its requests")


class RunResult(BaseModel):
    """A whole run, as the CLI writes it and the pages export it (schema documented in docs/probe.md)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION
    run_id: str | None = Field(default=None, description="the database id when the run was stored")
    endpoint: str
    model: str
    settings: RunSettings
    status: RunStatus
    error: str | None = None
    started_at: datetime
    finished_at: datetime | None = None
    best_concurrency_within_slo: int | None = None
    best_request_rate_within_slo_rps: float | None = Field(
        default=None, description="the highest request rate whose level met the SLO (rate levels only)"
    )
    rate_search: RateSearch | None = Field(default=None, description="a --find-max-rate run: how it searched")
    levels: list[LevelResult] = Field(default_factory=list)
    samples: list[RequestSample] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list, description="what qualifies the figures, e.g. a trace replay's uncalibrated lengths"
    )
    power: list[PowerSample] = Field(default_factory=list, description="the DCGM exporter's readings (--dcgm-url)")
    energy: MeasuredEnergy | None = Field(default=None, description="the energy measured over the levels' window")
    workers: list[WorkerStats] = Field(default_factory=list, description="--workers: one entry per Ray worker")
    partial: bool = Field(default=False, description="a worker was lost: its requests after its last batch are missing")
    partial_reason: str | None = Field(default=None, description="which worker was lost, when, and why")
