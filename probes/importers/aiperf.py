"""AIPerf's exports: the aggregate JSON and the per-request JSONL; a folder holding both is one run with samples.

Definitions (aiperf/metrics/types): every metric carries its unit (ms, sec, ns), converted here to ms. AIPerf's
inter_token_latency is (request latency - TTFT) / (output tokens - first chunk's tokens): vLLM's TPOT; its
inter_chunk_latency (gaps between chunks) is vLLM's ITL. request_count counts the valid requests, error_request_count
the failed ones; records of the warm-up phase (metadata.benchmark_phase "warmup") are not counted, as AIPerf
excludes them from its results.
"""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from probes.importers.base import ImportedRun, ImportFormatError, ImportProvenance
from probes.importers.common import (
    content_sha256,
    error_kind,
    file_deployment,
    imported_run,
    imported_settings,
    level_of_aggregates,
    level_of_samples,
    load_json,
    load_jsonl,
    mapping,
    peek,
    stats_of,
)
from probes.models import LevelResult, RequestSample, Stats

FORMAT_ID = "aiperf"
TOOL = "aiperf"
AGGREGATE_FILE = "profile_export_aiperf.json"
RECORDS_FILE = "profile_export.jsonl"
WARMUP = "warmup"
TO_MS = {"ms": 1.0, "sec": 1000.0, "s": 1000.0, "ns": 1e-6, "us": 1e-3}


class AiperfImporter:
    """AIPerf's aggregate export, its per-request export, or a folder holding them (one run, one level)."""

    format_id = FORMAT_ID
    expected = (
        f"aiperf: {AGGREGATE_FILE} (keys aiperf_version, time_to_first_token, request_latency, ...), "
        f"{RECORDS_FILE} (one record per request with metadata and metrics), or a folder holding them"
    )

    def detect(self, path: Path) -> bool:
        """The aggregate JSON (names aiperf_version), the records (metadata + metrics lines), or a folder of them."""
        if path.is_dir():
            return (path / AGGREGATE_FILE).is_file() or (path / RECORDS_FILE).is_file()
        head = peek(path).lstrip()
        if head.startswith("{") and '"aiperf_version"' in head:
            return True
        first = head.split("\n", 1)[0]
        return first.startswith('{"metadata"') and '"benchmark_phase"' in first and '"metrics"' in first

    def parse(self, path: Path, imported_at: datetime) -> list[ImportedRun]:
        """One run: the aggregate's figures, or samples from the records (the aggregate's duration when both)."""
        aggregate_path, records_path = _parts(path)
        aggregate = mapping(load_json(aggregate_path), aggregate_path.name) if aggregate_path else None
        records = _records(records_path) if records_path else None
        read = [p for p in (aggregate_path, records_path) if p is not None]
        phase = _profiling_phase(aggregate) if aggregate else {}
        concurrency = int(phase.get("concurrency") or 1)
        rate = _float(phase.get("rate") or phase.get("request_rate"))
        started = _started(aggregate)
        if records is not None:
            duration_s = _value_s(aggregate, "benchmark_duration") if aggregate else None
            level, samples = _sample_level(records, concurrency, rate, started, duration_s, records_path or path)
            if not aggregate:
                started = level.started_at
        else:
            assert aggregate is not None and aggregate_path is not None
            level, samples = _aggregate_level(aggregate, concurrency, rate, started, aggregate_path.name), []
        model, url = _model_and_url(aggregate)
        settings = imported_settings(
            model=model or "",
            base_url=url,
            concurrency=[concurrency],
            requests_per_level=level.requests,
            rates_rps=[rate] if rate else [],
            input_tokens=round(level.input_tokens_per_request) if level.input_tokens_per_request else None,
            deployment=file_deployment(model=model),
        )
        provenance = ImportProvenance(
            format=FORMAT_ID,
            tool=TOOL,
            tool_version=str(aggregate.get("aiperf_version"))
            if aggregate and aggregate.get("aiperf_version")
            else None,
            file_name=path.name,
            file_sha256=content_sha256(read),
            settings=_settings(aggregate, read),
            imported_at=imported_at,
        )
        return [
            imported_run(
                provenance=provenance,
                settings=settings,
                levels=[level],
                samples=samples,
                started_at=started,
                aggregate_only=records is None,
            )
        ]


def _version(aggregate: Mapping[str, Any] | None) -> str | None:
    version = aggregate.get("aiperf_version") if aggregate else None
    return str(version) if version else None


def _parts(path: Path) -> tuple[Path | None, Path | None]:
    """(aggregate file, records file) of a folder or a single file."""
    if path.is_dir():
        aggregate, records = path / AGGREGATE_FILE, path / RECORDS_FILE
        return (aggregate if aggregate.is_file() else None), (records if records.is_file() else None)
    if peek(path).lstrip().startswith('{"metadata"'):
        return None, path
    return path, None


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _scale(unit: object, where: str) -> float:
    """The factor to ms of a time unit as AIPerf writes it (ImportFormatError for a unit it never writes)."""
    if not isinstance(unit, str) or unit not in TO_MS:
        raise ImportFormatError(f"{where}: time unit {unit!r} is not one AIPerf writes (allowed: {', '.join(TO_MS)})")
    return TO_MS[unit]


def _metric(aggregate: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = aggregate.get(key)
    return value if isinstance(value, dict) else None


def _avg(aggregate: Mapping[str, Any], key: str) -> float | None:
    metric = _metric(aggregate, key)
    value = metric.get("avg") if metric else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _value_s(aggregate: Mapping[str, Any], key: str) -> float | None:
    """A duration metric in seconds (its unit converted)."""
    metric, avg = _metric(aggregate, key), _avg(aggregate, key)
    if metric is None or avg is None:
        return None
    return avg * _scale(metric.get("unit"), key) / 1000.0


def _time_stats(aggregate: Mapping[str, Any], key: str, count: int) -> Stats:
    """A time metric's avg and percentiles as given, in ms (None where not given)."""
    metric = _metric(aggregate, key)
    if metric is None:
        return Stats()
    scale = _scale(metric.get("unit"), key)

    def get(name: str) -> float | None:
        value = metric.get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    return stats_of(
        count,
        mean=get("avg"),
        p50=get("p50"),
        p90=get("p90"),
        p99=get("p99"),
        low=get("min"),
        high=get("max"),
        scale=scale,
    )


def _profiling_phase(aggregate: Mapping[str, Any]) -> Mapping[str, Any]:
    config = aggregate.get("input_config")
    phases = config.get("phases") if isinstance(config, dict) else None
    for phase in phases if isinstance(phases, list) else []:
        if isinstance(phase, dict) and not phase.get("exclude_from_results") and phase.get("kind") != WARMUP:
            return phase
    return {}


def _model_and_url(aggregate: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    config = aggregate.get("input_config") if aggregate else None
    if not isinstance(config, dict):
        return None, None
    items = (config.get("models") or {}).get("items") if isinstance(config.get("models"), dict) else None
    model = items[0].get("name") if isinstance(items, list) and items and isinstance(items[0], dict) else None
    urls = (config.get("endpoint") or {}).get("urls") if isinstance(config.get("endpoint"), dict) else None
    url = urls[0] if isinstance(urls, list) and urls and isinstance(urls[0], str) else None
    return (model if isinstance(model, str) else None), url


def _started(aggregate: Mapping[str, Any] | None) -> datetime:
    """The aggregate's start_time (ISO, the benchmarking machine's clock, taken as UTC when it names no zone)."""
    text = aggregate.get("start_time") if aggregate else None
    if isinstance(text, str):
        try:
            moment = datetime.fromisoformat(text)
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        except ValueError:
            pass
    return datetime(1970, 1, 1, tzinfo=UTC)


def _settings(aggregate: Mapping[str, Any] | None, read: Sequence[Path]) -> dict[str, Any]:
    settings: dict[str, Any] = {"files": [p.name for p in read]}
    if aggregate:
        for key in ("schema_version", "benchmark_id"):
            if isinstance(aggregate.get(key), str):
                settings[key] = aggregate[key]
        run_info = aggregate.get("run_info")
        if isinstance(run_info, dict) and isinstance(run_info.get("cli_command"), str):
            settings["cli_command"] = run_info["cli_command"]
        phase = _profiling_phase(aggregate)
        settings.update({f"phase_{k}": v for k, v in phase.items() if isinstance(v, (str, int, float, bool))})
    return settings


def _aggregate_level(
    aggregate: Mapping[str, Any], concurrency: int, rate: float | None, started: datetime, where: str
) -> LevelResult:
    completed = int(_avg(aggregate, "request_count") or 0)
    duration_s = _value_s(aggregate, "benchmark_duration")
    if duration_s is None:
        raise ImportFormatError(f"{where}: the metric 'benchmark_duration' is missing")
    failed = int(_avg(aggregate, "error_request_count") or 0)
    return level_of_aggregates(
        0,
        concurrency,
        started_at=started,
        duration_s=duration_s,
        completed=completed,
        failed=failed,
        input_tokens=int(_avg(aggregate, "total_isl") or 0),
        output_tokens=int(_avg(aggregate, "total_osl") or _avg(aggregate, "total_output_tokens") or 0),
        ttft_ms=_time_stats(aggregate, "time_to_first_token", completed),
        tpot_ms=_time_stats(aggregate, "inter_token_latency", completed),
        itl_ms=_time_stats(aggregate, "inter_chunk_latency", completed),
        e2e_ms=_time_stats(aggregate, "request_latency", completed),
        req_s=_avg(aggregate, "request_throughput"),
        output_tok_s=_avg(aggregate, "output_token_throughput"),
        total_tok_s=_avg(aggregate, "total_token_throughput"),
        rate_rps=rate,
    )


def _records(path: Path) -> list[Mapping[str, Any]]:
    """The per-request records outside the warm-up phase."""
    kept = []
    for number, record in enumerate(load_jsonl(path), start=1):
        record = mapping(record, f"{path.name} line {number}")
        metadata = record.get("metadata")
        if not isinstance(metadata, dict) or not isinstance(record.get("metrics"), dict):
            raise ImportFormatError(f"{path.name} line {number}: a record needs 'metadata' and 'metrics' objects")
        if metadata.get("benchmark_phase") != WARMUP:
            kept.append(record)
    return kept


def _record_ms(metrics: Mapping[str, Any], key: str, where: str) -> float | None:
    entry = metrics.get(key)
    if not isinstance(entry, dict) or not isinstance(entry.get("value"), (int, float)):
        return None
    return float(entry["value"]) * _scale(entry.get("unit"), where)


def _record_count(metrics: Mapping[str, Any], key: str) -> int | None:
    entry = metrics.get(key)
    value = entry.get("value") if isinstance(entry, dict) else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _sample(record: Mapping[str, Any], index: int, concurrency: int, first_ns: int, where: str) -> RequestSample:
    metadata, metrics = record["metadata"], record["metrics"]
    start_ns = metadata.get("request_start_ns")
    start_s = (start_ns - first_ns) / 1e9 if isinstance(start_ns, int) else 0.0
    error = record.get("error")
    common: dict[str, Any] = {
        "level_index": 0,
        "concurrency": concurrency,
        "index": index,
        "start_s": start_s,
        "input_tokens": _record_count(metrics, "input_sequence_length"),
    }
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        code = error.get("code") if isinstance(error, dict) else None
        status = code if isinstance(code, int) and not isinstance(code, bool) else None
        return RequestSample(
            **common,
            error_kind=error_kind(status),
            error=str(message)[:2000],
            http_status=status,
        )
    chunks = metrics.get("inter_chunk_latency")
    gaps = chunks.get("value") if isinstance(chunks, dict) else None
    scale = _scale(chunks.get("unit"), where) if isinstance(chunks, dict) else 1.0
    return RequestSample(
        **common,
        ttft_ms=_record_ms(metrics, "time_to_first_token", where),
        e2e_ms=_record_ms(metrics, "request_latency", where),
        tpot_ms=_record_ms(metrics, "inter_token_latency", where),
        itl_ms=[float(g) * scale for g in gaps] if isinstance(gaps, list) else [],
        output_tokens=_record_count(metrics, "output_sequence_length"),
    )


def _sample_level(
    records: Sequence[Mapping[str, Any]],
    concurrency: int,
    rate: float | None,
    started: datetime,
    duration_s: float | None,
    path: Path,
) -> tuple[LevelResult, list[RequestSample]]:
    """The level summarised from the records; its duration the aggregate's, else first start to last end."""
    starts = [r["metadata"].get("request_start_ns") for r in records]
    ends = [r["metadata"].get("request_end_ns") for r in records]
    first_ns = min((s for s in starts if isinstance(s, int)), default=0)
    last_ns = max((e for e in ends if isinstance(e, int)), default=first_ns)
    if started.year == 1970 and first_ns:
        started = datetime.fromtimestamp(first_ns / 1e9, UTC)
    samples = [_sample(r, i, concurrency, first_ns, path.name) for i, r in enumerate(records)]
    duration = duration_s if duration_s is not None else (last_ns - first_ns) / 1e9
    level = level_of_samples(0, concurrency, samples, started_at=started, duration_s=duration, rate_rps=rate)
    return level, samples
