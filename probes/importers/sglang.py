"""SGLang's serving benchmark (sglang.benchmark.serving, once sglang.bench_serving) JSONL: one run per line.

Definitions (sglang/benchmark/serving.py): the aggregates are in ms (mean/median/p90/p95/p99 of ttft, tpot, itl and
e2e_latency), TPOT excludes the first token as vLLM's does; duration in seconds. A line holds no per-request latency
(even --output-details writes no end-to-end time per request), so every run is aggregate-only with SGLang's own
figures. The line counts only completed requests; failed ones are counted from its `errors` list when
--output-details wrote one, else the file does not say (0). Warm-up requests (--warmup-requests) are never written.
The file names neither SGLang's release nor a date (the run is dated by its import).
"""

import math
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from probes.importers.base import ImportedRun, ImportFormatError, ImportProvenance
from probes.importers.common import (
    content_sha256,
    file_deployment,
    imported_run,
    imported_settings,
    json_safe_settings,
    level_of_aggregates,
    load_jsonl,
    mapping,
    need,
    number,
    peek,
    stats_of,
)
from probes.models import LevelResult, Stats

FORMAT_ID = "sglang"
TOOL = "sglang bench_serving"
MARKERS = ('"total_output_tokens_retokenized"', '"server_info"')
SETTING_KEYS = (
    "tag",
    "backend",
    "dataset_name",
    "request_rate",
    "max_concurrency",
    "sharegpt_output_len",
    "random_input_len",
    "random_output_len",
    "random_range_ratio",
)


class SglangImporter:
    """SGLang bench_serving's JSONL output (one run per line)."""

    format_id = FORMAT_ID
    expected = (
        "sglang: the JSONL file of SGLang's bench_serving --output-file, one JSON object per line "
        "(keys backend, dataset_name, duration, completed, mean_ttft_ms, total_output_tokens_retokenized, ...)"
    )

    def detect(self, path: Path) -> bool:
        """A first line that is a JSON object with SGLang's own keys."""
        if not path.is_file():
            return False
        first = peek(path).lstrip().split("\n", 1)[0]
        return first.startswith("{") and any(m in first for m in MARKERS) and '"mean_ttft_ms"' in first

    def parse(self, path: Path, imported_at: datetime) -> list[ImportedRun]:
        """Each line as its own run (part = its position)."""
        lines = load_jsonl(path)
        if not lines:
            raise ImportFormatError(f"{path.name}: holds no line")
        sha = content_sha256([path])
        return [
            _run(
                mapping(line, f"{path.name} line {part + 1}"),
                f"{path.name} line {part + 1}",
                part,
                path,
                sha,
                imported_at,
            )
            for part, line in enumerate(lines)
        ]


def _rate(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return None  # inf (all at once), "trace", or absent


def _given(data: Mapping[str, Any], metric: str, count: int, where: str) -> Stats:
    p50 = number(data, f"p50_{metric}_ms", where)
    return stats_of(
        count,
        mean=number(data, f"mean_{metric}_ms", where),
        p50=p50 if p50 is not None else number(data, f"median_{metric}_ms", where),
        p90=number(data, f"p90_{metric}_ms", where),
        p99=number(data, f"p99_{metric}_ms", where),
        high=number(data, f"max_{metric}_ms", where),
    )


def _level(data: Mapping[str, Any], concurrency: int, rate: float | None, started: datetime, where: str) -> LevelResult:
    completed = int(need(data, "completed", where))
    errors = data.get("errors")
    failed = sum(1 for e in errors if e) if isinstance(errors, list) else 0
    return level_of_aggregates(
        0,
        concurrency,
        started_at=started,
        duration_s=need(data, "duration", where),
        completed=completed,
        failed=failed,
        input_tokens=int(need(data, "total_input_tokens", where)),
        output_tokens=int(need(data, "total_output_tokens", where)),
        ttft_ms=_given(data, "ttft", completed, where),
        tpot_ms=_given(data, "tpot", completed, where),
        itl_ms=_given(data, "itl", completed, where),
        e2e_ms=_given(data, "e2e_latency", completed, where),
        req_s=number(data, "request_throughput", where),
        output_tok_s=number(data, "output_throughput", where),
        total_tok_s=number(data, "total_throughput", where),
        rate_rps=rate,
    )


def _run(data: Mapping[str, Any], where: str, part: int, path: Path, sha: str, imported_at: datetime) -> ImportedRun:
    rate = _rate(data.get("request_rate"))
    completed = int(need(data, "completed", where))
    concurrency = int(number(data, "max_concurrency", where) or number(data, "max_concurrent_requests", where) or 1)
    level = _level(data, concurrency, rate, imported_at, where)  # the line states no date: the import's
    backend = data.get("backend") if isinstance(data.get("backend"), str) else None
    engine = "sglang" if backend and backend.startswith("sglang") else None  # sglang, sglang-native, sglang-oai
    server = data.get("server_info") if isinstance(data.get("server_info"), dict) else {}
    model = server.get("model_path") if isinstance(server, dict) else None
    settings = imported_settings(
        model=str(model or ""),
        base_url=None,
        concurrency=[concurrency],
        requests_per_level=completed + level.failed,
        rates_rps=[rate] if rate else [],
        input_tokens=int(number(data, "random_input_len", where) or 0) or None,
        max_tokens=int(number(data, "random_output_len", where) or 0) or None,
        label=str(data.get("tag") or ""),
        deployment=file_deployment(model=model if isinstance(model, str) else None, engine=engine),
    )
    settings_given = json_safe_settings(data, SETTING_KEYS)
    if isinstance(settings_given.get("request_rate"), float) and not math.isfinite(settings_given["request_rate"]):
        settings_given["request_rate"] = "inf"
    version = server.get("version") if isinstance(server, dict) else None
    provenance = ImportProvenance(
        format=FORMAT_ID,
        tool=TOOL,
        tool_version=str(version) if version else None,
        file_name=path.name,
        file_sha256=sha,
        part=part,
        settings=settings_given,
        imported_at=imported_at,
    )
    return imported_run(
        provenance=provenance,
        settings=settings,
        levels=[level],
        samples=[],
        started_at=imported_at,
        aggregate_only=True,
    )
