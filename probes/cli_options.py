"""`python -m probes`'s own options: the shared settings (probes/options.py) and those only the command line sets."""

from pathlib import Path

from pydantic import ConfigDict, Field, SecretStr

from probes.config import SloTargets, Timeouts
from probes.field_text import FLAG
from probes.options import DEPLOYMENT_OPTIONS, RUN_DEFAULTS, ProbeOptions

API_KEY_ENV = "PROBE_API_KEY"


class CliOptions(ProbeOptions):
    """`python -m probes`: the shared settings, those only the command line sets, and the command's switches."""

    model_config = ConfigDict(extra="forbid")

    api_key: SecretStr | None = Field(
        default=None,
        description=f"Sent to the endpoint only, never stored. Better: the {API_KEY_ENV} environment variable "
        "(other users of the machine can see a flag in the process list).",
        exclude=True,
        repr=False,
    )
    prompt_file: str | None = Field(
        default=RUN_DEFAULTS.prompt_file,
        description='File workload: JSONL prompts, one {"prompt": ...}, {"system": ..., "prompt": ...} or '
        '{"messages": [...]} per line.',
    )
    conversations_file: str | None = Field(
        default=RUN_DEFAULTS.conversations_file,
        description='Sessions workload: JSONL conversations in the OpenAI messages format, one {"messages": [...]} '
        "per line; each user message is a turn (recorded answers are replaced by the server's). Without it, "
        "synthetic sessions.",
        json_schema_extra={FLAG: "--conversations"},
    )
    goodput_ttft_ms: float = Field(
        default=RUN_DEFAULTS.slo.request_ttft_ms,
        description="Goodput: a request counts when its TTFT is at most this many ms (and its TPOT within "
        "--goodput-tpot-ms).",
        gt=0,
        le=3_600_000,
    )
    goodput_tpot_ms: float = Field(
        default=RUN_DEFAULTS.slo.request_tpot_ms,
        description="Goodput: a request counts when its TPOT is at most this many ms (and its TTFT within "
        "--goodput-ttft-ms).",
        gt=0,
        le=3_600_000,
    )
    max_failed_ratio: float = Field(
        default=RUN_DEFAULTS.slo.max_failed_ratio,
        description="The share of failed requests a level may have and still meet the SLO.",
        ge=0,
        le=1,
    )
    overlength_extra_tokens: int = Field(
        default=RUN_DEFAULTS.timeouts.overlength_extra_tokens,
        description="A stream is ended once it delivered max tokens plus this many (a server that never stops).",
        ge=0,
        le=1_000_000,
    )
    include_usage: bool = Field(
        default=RUN_DEFAULTS.include_usage,
        description="Do not ask for stream_options.include_usage: output tokens are then counted one per chunk.",
        json_schema_extra={FLAG: "--no-usage"},
    )
    continuous_usage_stats: bool = Field(
        default=RUN_DEFAULTS.continuous_usage_stats,
        description="vLLM extension: ask for usage on every chunk (exact tokens per chunk).",
        json_schema_extra={FLAG: "--continuous-usage"},
    )
    scrape_metrics: bool = Field(
        default=RUN_DEFAULTS.scrape_metrics,
        description="Do not scrape the server's Prometheus metrics before and after each level.",
        json_schema_extra={FLAG: "--no-metrics"},
    )
    metrics_url: str | None = Field(
        default=RUN_DEFAULTS.metrics_url,
        description="The Prometheus metrics URL; without it, /metrics beside /v1.",
        max_length=500,
    )
    seed: int = Field(
        default=RUN_DEFAULTS.seed,
        description="Random seed of the synthetic and shared-prefix prompts and of the arrivals.",
    )
    # The command's switches: what it does besides running; not run settings.
    list_models: bool = Field(default=False, description="Print the served models and exit.")
    test_connection: bool = Field(
        default=False, description="List the served models, send one 1-token request to --model, and exit."
    )
    output: Path | None = Field(default=None, description="Write the run to this JSON file.")
    store: bool = Field(
        default=True,
        description="Do not store the run in the database of DATABASE_URL.",
        json_schema_extra={FLAG: "--no-db"},
    )
    quiet: bool = Field(default=False, description="No progress on stderr.")

    @property
    def slo(self) -> SloTargets:
        """The SLO targets, with the command line's own goodput thresholds and failure share."""
        return SloTargets(
            ttft_p50_ms=self.slo_ttft_p50_ms,
            ttft_p99_ms=self.slo_ttft_p99_ms,
            tpot_p50_ms=self.slo_tpot_p50_ms,
            request_ttft_ms=self.goodput_ttft_ms,
            request_tpot_ms=self.goodput_tpot_ms,
            max_failed_ratio=self.max_failed_ratio,
        )

    @property
    def timeouts(self) -> Timeouts:
        """The per-request timeouts, with the overlength guard."""
        return super().timeouts.model_copy(update={"overlength_extra_tokens": self.overlength_extra_tokens})


# Fields that reach RunSettings through the slo / timeouts properties rather than by name, and the switches.
SLO_AND_TIMEOUT_FIELDS = frozenset(
    {
        "slo_ttft_p50_ms",
        "slo_ttft_p99_ms",
        "slo_tpot_p50_ms",
        "goodput_ttft_ms",
        "goodput_tpot_ms",
        "max_failed_ratio",
        "connect_timeout_s",
        "ttft_timeout_s",
        "stall_timeout_s",
        "overlength_extra_tokens",
    }
)
SWITCHES = frozenset({"list_models", "test_connection", "output", "store", "quiet"})
# Fields that reach RunSettings as its deployment.
DEPLOYMENT_FIELDS = frozenset(DEPLOYMENT_OPTIONS.values())
