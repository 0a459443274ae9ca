"""The /probe and /runs pages' inputs (URL parameters are the aliases; never the API key) and "Cost this"."""

import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from probes.config import SECRET_QUERY_KEYS, RunSettings
from probes.errors import ProbeSettingsError
from probes.models import LevelResult, RunResult
from probes.options import ProbeOptions
from probes.traces import BUILTIN_TRACES

MAX_OPEN_RUNS = 12
RUN_ID = re.compile(r"^[0-9a-f]{6,32}$")


class ProbeForm(ProbeOptions):
    """Everything the /probe form asks, except the API key (a password field that never reaches the URL)."""

    @field_validator("base_url")
    @classmethod
    def _no_secret_in_the_link(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.username or parts.password:
            raise ValueError("no user:password in the URL; put the key in the API key field")
        if any(SECRET_QUERY_KEYS.search(k) for k, _ in parse_qsl(parts.query, keep_blank_values=True)):
            raise ValueError("no keys or tokens in the URL; put the key in the API key field")
        return value

    @field_validator("trace")
    @classmethod
    def _built_in_trace_only(cls, value: str | None) -> str | None:
        """The page names built-in traces only (a link must not read the server's files); others are uploaded."""
        if value is not None and value.strip() and value.strip() not in BUILTIN_TRACES:
            raise ValueError(f"pick a built-in trace ({', '.join(BUILTIN_TRACES)}) or upload a trace file")
        return value.strip() or None if value else None  # blank, even ' ', is no trace

    def run_settings(self, api_key: str | None = None, files: Mapping[str, str] | None = None) -> RunSettings:
        """The probe's settings (ProbeSettingsError when they cannot be built, e.g. no model picked)."""
        if not self.model:
            raise ProbeSettingsError("pick a model: type its name, or press 'Test connection' to list the served ones")
        return super().run_settings(api_key, files)


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
    """The level "Cost this" starts from: the highest rate (or concurrency) within SLO, else the top throughput."""
    usable = [lv for lv in result.levels if lv.output_tok_s and lv.completed]
    if not usable:
        return None
    within = [lv for lv in usable if lv.slo.met]
    if within:
        return max(within, key=lambda lv: (lv.request_rate_rps or 0.0, lv.concurrency))
    return max(usable, key=lambda lv: lv.output_tok_s or 0.0)


def cost_params(level: LevelResult, run_id: str | None = None) -> dict[str, str]:
    """Query parameters of the cost page for a measured level.

    A rate level that met the SLO gives `rps` (its request rate, naming the run) and the cost page derives the
    throughput from it; any other level gives `tps`, its output tokens/s. Then out_tokens and (when measured)
    in_tokens.
    """
    params: dict[str, str] = {}
    if level.request_rate_rps is not None and level.slo.met:
        rate = f"{level.request_rate_rps:.6g}"
        params["rps"] = f"{rate}@{run_id}" if run_id else rate
    elif level.output_tok_s:
        params["tps"] = f"{level.output_tok_s:.1f}".removesuffix(".0")
    if level.output_tokens_per_request:
        params["out_tokens"] = str(max(1, round(level.output_tokens_per_request)))
    if level.input_tokens_per_request is not None and level.input_tokens:
        params["in_tokens"] = str(round(level.input_tokens_per_request))
    return params
