"""inference-perf report folders: a level per stage file; with per_request_lifecycle_metrics.json, samples.

Definitions from inference-perf's reportgen (inference_perf/reportgen/base.py, summarize_requests): every figure is
in seconds; time_to_first_token is TTFT; time_per_output_token is (last token - first token) / (output tokens - 1),
vLLM's TPOT (normalized_time_per_output_token, which includes the first token, is not read); inter_token_latency
is the gaps between tokens (ITL); request_latency is E2E. successes.count are completed, failures.count failed; the
preprocessing stage (-1, its warm-up) is already left out of every file by the tool. Without stage files, the
summary file is one level. Throughputs divide by the stage's wall time (first send to last finish).

The per-request file (report request_lifecycle.per_request) holds every request of stages 0.. but not its stage:
the stages run one after another, so the records sorted by send time are cut into the stages by each stage file's
load_summary.count. Each becomes a sample timed as the probe times its own (TTFT to the first output token, TPOT
(E2E - TTFT) / (output tokens - 1), ITL the token gaps) and the levels are summarised by probes.metrics. When the
counts do not add up, the per-request file is not used (aggregate-only, said in the provenance).
"""

import re
from collections.abc import Mapping
from datetime import datetime
from itertools import pairwise
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
    level_of_samples,
    load_json,
    mapping,
    read_text,
    stats_of,
)
from probes.models import ErrorKind, LevelResult, RequestSample, Stats, TokenSource

FORMAT_ID = "inference-perf"
TOOL = "inference-perf"
SUMMARY = "summary_lifecycle_metrics.json"
PER_REQUEST = "per_request_lifecycle_metrics.json"
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


def _sent(path: Path) -> int:
    """The requests a stage file counts (load_summary.count; else successes plus failures)."""
    report = mapping(load_json(path), path.name)
    load = report.get("load_summary") or {}
    if isinstance(load.get("count"), int):
        return int(load["count"])
    successes, failures = report.get("successes") or {}, report.get("failures") or {}
    return int(successes.get("count") or 0) + int(failures.get("count") or 0)


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


def _sample(record: Mapping[str, Any], level: int, concurrency: int, index: int, t0: float) -> RequestSample:
    """One per-request record as the probe's sample (the tool's seconds in ms)."""
    start, end = float(record["start_time"]), float(record["end_time"])
    info = record.get("info") or {}
    response = info.get("response_metrics") or {}
    text = (info.get("request_metrics") or {}).get("text") or {}
    times = [float(t) for t in response.get("output_token_times") or []]
    error = record.get("error")
    e2e_ms = (end - start) * MS_PER_S
    ttft_ms = (times[0] - start) * MS_PER_S if times else None
    output = response.get("output_tokens")
    output_tokens = int(output) if isinstance(output, int) else None
    tpot_ms = None
    if error is None and ttft_ms is not None and output_tokens is not None and output_tokens > 1:
        tpot_ms = (e2e_ms - ttft_ms) / (output_tokens - 1)
    usage = response.get("server_usage")
    return RequestSample(
        level_index=level,
        concurrency=concurrency,
        index=index,
        start_s=start - t0,
        ttft_ms=ttft_ms,
        tpot_ms=tpot_ms,
        e2e_ms=e2e_ms,
        itl_ms=[(b - a) * MS_PER_S for a, b in pairwise(times)],
        input_tokens=text.get("input_tokens") if isinstance(text.get("input_tokens"), int) else None,
        output_tokens=output_tokens,
        token_source=TokenSource.USAGE if usage else TokenSource.CHUNKS,
        error_kind=ErrorKind.CLIENT_ERROR if error is not None else None,
        error=f"{error.get('error_type', '')}: {error.get('error_msg', '')}"[:500] if isinstance(error, dict) else None,
    )


def _with_samples(
    folder: Path, levels: list[LevelResult], counts: list[int]
) -> tuple[list[LevelResult], list[RequestSample]] | None:
    """The levels summarised from the per-request file, cut by the stages' counts; None when it cannot be used."""
    path = folder / PER_REQUEST
    if not path.is_file():
        return None
    records = load_json(path)
    if not isinstance(records, list) or len(records) != sum(counts) or not records:
        return None
    ordered = sorted(records, key=lambda record: float(mapping(record, path.name)["start_time"]))
    summarised: list[LevelResult] = []
    samples: list[RequestSample] = []
    first = 0
    for level, count in zip(levels, counts, strict=True):
        chunk = ordered[first : first + count]
        first += count
        if not chunk:
            return None
        t0 = float(chunk[0]["start_time"])
        mine = [_sample(record, level.index, level.concurrency, n, t0) for n, record in enumerate(chunk)]
        duration_s = max(float(record["end_time"]) for record in chunk) - t0
        summarised.append(
            level_of_samples(
                level.index,
                level.concurrency,
                mine,
                started_at=level.started_at,
                duration_s=duration_s,
                rate_rps=level.request_rate_rps,
            )
        )
        samples += mine
    return summarised, samples


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
        counts = [_sent(file) for _, file in files]
        detailed = _with_samples(path, levels, counts)
        samples: list[RequestSample] = []
        if detailed is not None:
            levels, samples = detailed
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
            file_sha256=content_sha256([file for _, file in files] + ([path / PER_REQUEST] if samples else [])),
            settings={
                "stages": [stage for stage, _ in files],
                "files": [file.name for _, file in files] + ([PER_REQUEST] if samples else []),
                "per_request": "used" if samples else ("counts differ" if (path / PER_REQUEST).is_file() else "absent"),
            },
            imported_at=imported_at,
        )
        return [
            imported_run(
                provenance=provenance,
                settings=settings,
                levels=levels,
                samples=samples,
                started_at=imported_at,
                aggregate_only=not samples,
            )
        ]


IMPORTER = InferencePerfImporter()
