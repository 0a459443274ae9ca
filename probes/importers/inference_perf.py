"""inference-perf report folders: stage_N_lifecycle_metrics.json files (a level each), read aggregate-only.

Definitions from inference-perf's reportgen (inference_perf/reportgen/base.py, summarize_requests): every figure is
in seconds; time_to_first_token is TTFT; time_per_output_token is (last token - first token) / (output tokens - 1),
vLLM's TPOT (normalized_time_per_output_token, which includes the first token, is not read); inter_token_latency
is the gaps between tokens (ITL); request_latency is E2E. successes.count are completed, failures.count failed; the
preprocessing stage (-1, its warm-up) is already left out of every file by the tool. Without stage files, the
summary file is one level. Throughputs divide by the stage's wall time (first send to last finish).
"""

import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from probes.importers.base import ImportedRun, ImportFormatError, ImportProvenance
from probes.importers.common import (
    MS_PER_S,
    content_sha256,
    file_deployment,
    imported_run,
    imported_settings,
    level_of_aggregates,
    load_json,
    mapping,
    read_text,
    stats_of,
)
from probes.models import LevelResult, Stats

FORMAT_ID = "inference-perf"
TOOL = "inference-perf"
SUMMARY = "summary_lifecycle_metrics.json"
CONFIG = "config.yaml"  # the tool's own config, written beside the reports
_STAGE = re.compile(r"^stage_(\d+)_lifecycle_metrics\.json$")
LATENCIES = {
    "time_to_first_token": "ttft_ms",
    "time_per_output_token": "tpot_ms",
    "inter_token_latency": "itl_ms",
    "request_latency": "e2e_ms",
}


def _files(folder: Path) -> list[tuple[int, Path]]:
    """The stage files by stage number; the summary alone (stage 0) when there are none."""
    stages = sorted(
        (int(found.group(1)), path) for path in folder.iterdir() if (found := _STAGE.match(path.name)) is not None
    )
    if stages:
        return stages
    summary = folder / SUMMARY
    return [(0, summary)] if summary.is_file() else []


def _stats(raw: Any, count: int) -> Stats:
    """inference-perf's summary (seconds; 'median' is p50) as Stats in ms."""
    if not isinstance(raw, dict):
        return Stats()
    return stats_of(
        count,
        mean=raw.get("mean"),
        p50=raw.get("median"),
        p90=raw.get("p90"),
        p99=raw.get("p99"),
        low=raw.get("min"),
        high=raw.get("max"),
        scale=MS_PER_S,
    )


def _mean_tokens(successes: Mapping[str, Any], *names: str) -> float:
    """The mean tokens per completed request from the first length summary the file has (0 without one)."""
    for name in names:
        mean = (successes.get(name) or {}).get("mean") if isinstance(successes.get(name), dict) else None
        if isinstance(mean, (int, float)):
            return float(mean)
    return 0.0


def _level(index: int, stage: int, path: Path, imported_at: datetime) -> LevelResult:
    where = path.name
    report = mapping(load_json(path), where)
    successes = mapping(report.get("successes"), f"{where} 'successes'")
    failures = report.get("failures") or {}
    load = report.get("load_summary") or {}
    completed = int(successes.get("count") or 0)
    failed = int(failures.get("count") or 0) if isinstance(failures, dict) else 0
    latency = successes.get("latency") or {}
    stats = {key: _stats(latency.get(field), completed) for field, key in LATENCIES.items()}
    throughput = successes.get("throughput") or {}
    req_s = throughput.get("requests_per_sec")
    duration_s = report.get("benchmark_time_seconds")
    if not isinstance(duration_s, (int, float)):
        duration_s = completed / req_s if isinstance(req_s, (int, float)) and req_s > 0 else 0.0
    rate = load.get("requested_rate")
    concurrency = load.get("concurrency")
    return level_of_aggregates(
        index,
        int(concurrency) if isinstance(concurrency, int) and concurrency >= 1 else 1,
        started_at=imported_at,
        duration_s=float(duration_s),
        completed=completed,
        failed=failed,
        input_tokens=round(_mean_tokens(successes, "prompt_len", "prompt_tokens") * completed),
        output_tokens=round(_mean_tokens(successes, "output_len", "output_tokens") * completed),
        ttft_ms=stats["ttft_ms"],
        tpot_ms=stats["tpot_ms"],
        itl_ms=stats["itl_ms"],
        e2e_ms=stats["e2e_ms"],
        req_s=req_s,
        output_tok_s=throughput.get("output_tokens_per_sec"),
        total_tok_s=throughput.get("total_tokens_per_sec"),
        rate_rps=float(rate) if isinstance(rate, (int, float)) and rate > 0 else None,
        errors={"imported_failure": failed} if failed else None,
    )


def _config(folder: Path) -> dict[str, Any]:
    """The run's config.yaml the tool writes beside its reports ({} when absent or unreadable)."""
    path = folder / CONFIG
    if not path.is_file():
        return {}
    try:
        found = yaml.safe_load(read_text(path))
    except yaml.YAMLError:
        return {}
    return found if isinstance(found, dict) else {}


class InferencePerfImporter:
    """An inference-perf report folder (its lifecycle metrics files)."""

    format_id = FORMAT_ID
    expected = (
        "inference-perf: a report folder holding stage_N_lifecycle_metrics.json files "
        "(or summary_lifecycle_metrics.json)"
    )

    def detect(self, path: Path) -> bool:
        try:
            return path.is_dir() and bool(_files(path))
        except OSError:
            return False

    def parse(self, path: Path, imported_at: datetime) -> list[ImportedRun]:
        if not path.is_dir():
            raise ImportFormatError(f"{path.name}: not a folder. Expected {self.expected}")
        files = _files(path)
        if not files:
            raise ImportFormatError(f"{path.name}: no lifecycle metrics file. Expected {self.expected}")
        levels = [_level(index, stage, file, imported_at) for index, (stage, file) in enumerate(files)]
        config = _config(path)
        found = config.get("server")
        server: dict[str, Any] = found if isinstance(found, dict) else {}
        settings = imported_settings(
            model=str(server.get("model_name") or "unknown"),
            base_url=server.get("base_url"),
            concurrency=[level.concurrency for level in levels],
            requests_per_level=max(level.requests for level in levels),
            rates_rps=[level.request_rate_rps for level in levels if level.request_rate_rps is not None],
            deployment=file_deployment(model=server.get("model_name"), engine=server.get("type")),
        )
        provenance = ImportProvenance(
            format=FORMAT_ID,
            tool=TOOL,
            tool_version=None,  # the lifecycle files do not state it
            file_name=path.name,
            file_sha256=content_sha256([file for _, file in files]),
            settings={"stages": [stage for stage, _ in files], "files": [file.name for _, file in files]},
            imported_at=imported_at,
        )
        return [
            imported_run(
                provenance=provenance,
                settings=settings,
                levels=levels,
                samples=[],
                started_at=imported_at,
                aggregate_only=True,
            )
        ]


IMPORTER = InferencePerfImporter()
