"""A run as llm-d Benchmark Reports v0.2.1: one report per level (a load stage), figures in the schema's units.

The field names and definitions follow llm-d-benchmark's schema (benchmark-report br_v0_2_1_json_schema.json):
TTFT -> time_to_first_token, the probe's TPOT ((e2e - ttft) / (output tokens - 1), vLLM's) ->
time_per_output_token, ITL -> inter_token_latency, E2E -> request_latency. Latencies keep the probe's
milliseconds (units 'ms' and 'ms/token', which the schema allows); nothing the run did not measure is written.
"""

import hashlib
import json
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from probes.config import WorkloadKind
from probes.models import LevelResult, RunResult, Stats

BR_VERSION = "0.2.1"
TOOL = "llm-serving-dashboard"  # the load generator's name in the report (the project's, from pyproject)
_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
# The run's latency statistics -> (the report's latency field, its units).
LATENCIES = {
    "ttft_ms": ("time_to_first_token", "ms"),
    "tpot_ms": ("time_per_output_token", "ms/token"),
    "itl_ms": ("inter_token_latency", "ms/token"),
    "e2e_ms": ("request_latency", "ms"),
}
STAT_FIELDS = ("mean", "min", "p50", "p90", "p99", "max")


@cache
def tool_version() -> str:
    """The project's release (pyproject's version), 'unknown' when it cannot be read."""
    try:
        return str(tomllib.loads(_PYPROJECT.read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def _statistics(stats: Stats, units: str) -> dict[str, Any] | None:
    """The schema's Statistics of the run's Stats (None without a mean: the schema requires one)."""
    if stats.mean is None:
        return None
    values = {name: getattr(stats, name) for name in STAT_FIELDS}
    return {"units": units, **{name: value for name, value in values.items() if value is not None}}


def _rate(value: float | None, units: str) -> dict[str, Any] | None:
    return None if value is None else {"units": units, "mean": value}


def _duration(seconds: float) -> str:
    """ISO-8601 duration (PT12.5S)."""
    return f"PT{max(seconds, 0.0)}S"  # the shortest text that reads back as the same float


def _config_id(config: dict[str, Any]) -> str:
    """A hash of the configuration, as the report's cfg_id asks."""
    return hashlib.md5(json.dumps(config, sort_keys=True).encode(), usedforsecurity=False).hexdigest()


def _stack(result: RunResult) -> list[dict[str, Any]] | None:
    """The inference engine component, when the run's deployment names GPU, count, model and engine."""
    deployment = result.settings.deployment
    if deployment.gpu is None or deployment.gpu_count is None or deployment.model is None or deployment.engine is None:
        return None
    native_args = {"--quantization": deployment.quant} if deployment.quant else None
    standardized = {
        "kind": "inference_engine",
        "tool": deployment.engine,
        "tool_version": "unknown",
        "role": "replica",
        "replicas": 1,
        "model": {"name": deployment.model},
        "accelerator": {"model": deployment.gpu, "count": deployment.gpu_count, "parallelism": {}},
    }
    label = f"{deployment.engine}-0"
    return [
        {
            "metadata": {"schema_version": "0.0.1", "label": label, "cfg_id": _config_id(standardized)},
            "standardized": standardized,
            "native": {"args": native_args},
        }
    ]


def _load(result: RunResult, level: LevelResult) -> dict[str, Any]:
    """The workload of one level: what the probe sent, its stage number and load."""
    settings = result.settings
    native = settings.model_dump(mode="json")
    input_mean = level.input_tokens_per_request
    standardized: dict[str, Any] = {
        "tool": TOOL,
        "tool_version": tool_version(),
        "source": "random" if settings.workload == WorkloadKind.SYNTHETIC else "sampled",
        "stage": level.index,
        "input_seq_len": {
            "distribution": "other" if input_mean is not None else "fixed",
            "value": input_mean if input_mean is not None else settings.input_tokens,
        },
        "concurrency": max(1, level.concurrency),
    }
    if settings.ignore_eos:
        standardized["output_seq_len"] = {"distribution": "fixed", "value": settings.max_tokens}
    if level.request_rate_rps is not None:
        standardized["rate_qps"] = level.request_rate_rps
    return {
        "metadata": {"schema_version": "0.0.1", "cfg_id": _config_id(native)},
        "standardized": standardized,
        "native": {"config": native},
    }


def _aggregate(level: LevelResult) -> dict[str, Any]:
    """The level's counts, lengths, latencies and rates as the report names them."""
    requests: dict[str, Any] = {"total": level.requests, "failures": level.failed}
    lengths = (("input_length", level.input_tokens_per_request), ("output_length", level.output_tokens_per_request))
    for name, mean in lengths:
        if mean is not None:
            requests[name] = {"units": "count", "mean": mean}
    latency = {
        field: value
        for key, (field, units) in LATENCIES.items()
        if (value := _statistics(getattr(level, key), units)) is not None
    }
    input_tok_s = None
    if level.total_tok_s is not None and level.output_tok_s is not None:
        input_tok_s = level.total_tok_s - level.output_tok_s
    rates = {
        "input_token_rate": _rate(input_tok_s, "tokens/s"),
        "output_token_rate": _rate(level.output_tok_s, "tokens/s"),
        "total_token_rate": _rate(level.total_tok_s, "tokens/s"),
        "request_rate": _rate(level.req_s, "queries/s"),
    }
    aggregate: dict[str, Any] = {"requests": requests}
    if latency:
        aggregate["latency"] = latency
    if throughput := {name: value for name, value in rates.items() if value is not None}:
        aggregate["throughput"] = throughput
    return aggregate


def level_report(result: RunResult, level: LevelResult, run_uid: str) -> dict[str, Any]:
    """One level of the run as a Benchmark Report v0.2.1 (uid: run id and stage; eid: the run id)."""
    scenario: dict[str, Any] = {"load": _load(result, level)}
    if (stack := _stack(result)) is not None:
        scenario["stack"] = stack
    run: dict[str, Any] = {
        "uid": f"{run_uid}-stage-{level.index}",
        "eid": run_uid,
        "time": {
            "start": level.started_at.isoformat(),
            "end": level.finished_at.isoformat(),
            "duration": _duration(level.duration_s),
        },
    }
    if result.settings.label:
        run["description"] = result.settings.label
    return {
        "version": BR_VERSION,
        "run": run,
        "scenario": scenario,
        "results": {"request_performance": {"aggregate": _aggregate(level)}},
    }


def run_reports(result: RunResult) -> list[dict[str, Any]]:
    """Every level of the run as its own report, in level order."""
    uid = result.run_id or result.started_at.strftime("run-%Y%m%dT%H%M%S")
    return [level_report(result, level, uid) for level in result.levels]


def reports_json(results: list[RunResult]) -> str:
    """The reports of the runs: one report as a JSON object, several as a JSON array of reports."""
    reports = [report for result in results for report in run_reports(result)]
    document: Any = reports[0] if len(reports) == 1 else reports
    return json.dumps(document, indent=2, ensure_ascii=False)
