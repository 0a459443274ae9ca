"""What every importer shares: reading a file safely, its SHA-256, the run's settings and levels built as the probe's.

A level with per-request records is summarised by probes.metrics, as the probe's own levels are; a level known only
by its aggregates keeps the file's figures as given (None where the file gives none) and is judged against the SLO
on those figures alone.
"""

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from probes.config import RunSettings, SloTargets, WorkloadKind, normalize_base_url
from probes.deployment import CATALOG_FIELDS, Deployment, catalog_id
from probes.failures import status_kind
from probes.importers.base import ImportedRun, ImportFormatError, ImportProvenance
from probes.metrics import (
    best_concurrency_within_slo,
    best_request_rate_within_slo,
    failure_violations,
    percentile_violations,
    summarize_level,
)
from probes.models import ErrorKind, LevelResult, RequestSample, RunResult, RunStatus, SloOutcome, Stats
from probes.wording import NO_REQUEST_COMPLETED

# The endpoint of an imported run whose file does not name one (a reserved name that never resolves).
UNKNOWN_ENDPOINT = "http://unknown.invalid"
FILE_SOURCE = "file"  # Deployment.source value: the field was read from the imported file
MS_PER_S = 1000.0


def content_sha256(paths: Iterable[Path]) -> str:
    """SHA-256 over the files' bytes, in the order given (a folder: the files the importer read, sorted by name)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def read_text(path: Path) -> str:
    """The file as UTF-8 text (ImportFormatError when it cannot be read)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFormatError(f"{path.name}: cannot read it as UTF-8 text ({exc})") from None


def load_json(path: Path) -> Any:
    """The file's JSON document (ImportFormatError naming the line when it is not JSON, e.g. cut short)."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(
            f"{path.name}: not valid JSON at line {exc.lineno} ({exc.msg}); is it cut short?"
        ) from None
    except RecursionError:
        raise ImportFormatError(f"{path.name}: JSON nested too deeply") from None


def load_jsonl(path: Path) -> list[Any]:
    """Each non-blank line's JSON value (ImportFormatError naming the first line that is not JSON)."""
    values: list[Any] = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ImportFormatError(
                f"{path.name}: line {number} is not valid JSON ({exc.msg}); is it cut short?"
            ) from None
    return values


def peek(path: Path, limit: int = 65536) -> str:
    """The file's first characters ('' when it cannot be read): what detection looks at."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return ""


def number(record: Mapping[str, Any], key: str, where: str) -> float | None:
    """record[key] as a float; None when absent or null; ImportFormatError naming the field when not a number."""
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ImportFormatError(f"{where}: '{key}' should be a number, got {value!r}")
    return float(value)


def need(record: Mapping[str, Any], key: str, where: str) -> float:
    """record[key] as a float; ImportFormatError naming the field when missing."""
    value = number(record, key, where)
    if value is None:
        raise ImportFormatError(f"{where}: the field '{key}' is missing")
    return value


def mapping(value: object, where: str) -> Mapping[str, Any]:
    """Value when it is a JSON object, else ImportFormatError saying what was found."""
    if not isinstance(value, dict):
        raise ImportFormatError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def file_deployment(*, model: str | None = None, engine: str | None = None) -> Deployment:
    """The deployment fields a file states, kept only when the catalog knows the name (source: file)."""
    values: dict[str, str] = {}
    for field, name in (("model", model), ("engine", engine)):
        if not name:
            continue
        try:
            found = catalog_id(field, name)
        except ValueError:
            continue
        if found is not None:
            values[field] = found
    return Deployment(**values, source=dict.fromkeys(values, FILE_SOURCE))


def merge_deployment(given: Deployment, stated: Deployment) -> Deployment:
    """What the person gave wins; the file fills what they left blank (those fields' source says 'file')."""
    values: dict[str, Any] = {}
    source: dict[str, str] = {}
    for field in (*CATALOG_FIELDS, "gpu_count"):
        mine, file_value = getattr(given, field), getattr(stated, field)
        values[field] = mine if mine is not None else file_value
        if mine is None and file_value is not None and field in stated.source:
            source[field] = stated.source[field]
    return Deployment(**values, source=source)


def imported_settings(
    *,
    model: str,
    base_url: str | None,
    concurrency: Sequence[int],
    requests_per_level: int,
    rates_rps: Sequence[float] = (),
    input_tokens: int | None = None,
    max_tokens: int | None = None,
    label: str = "",
    deployment: Deployment | None = None,
) -> RunSettings:
    """The run's settings as far as the file tells them (the endpoint: the file's, else a reserved unknown one)."""
    values: dict[str, Any] = {
        "base_url": _endpoint(base_url),
        "model": model or "unknown",
        "label": label[:200],
        "workload": WorkloadKind.SYNTHETIC,
        "concurrency": tuple(dict.fromkeys(max(1, c) for c in concurrency)) or (1,),
        "requests_per_level": max(0, requests_per_level),
        "request_rate_rps": tuple(rates_rps),
        "scrape_metrics": False,
        "deployment": deployment or Deployment(),
    }
    if input_tokens is not None and input_tokens >= 1:
        values["input_tokens"] = input_tokens
    if max_tokens is not None and max_tokens >= 1:
        values["max_tokens"] = max_tokens
    return RunSettings(**values)


def _endpoint(base_url: str | None) -> str:
    """The file's base URL when it is an http(s) one, else the reserved unknown endpoint."""
    try:
        return normalize_base_url(base_url) if base_url else UNKNOWN_ENDPOINT
    except ValueError:
        return UNKNOWN_ENDPOINT


def level_of_samples(
    index: int,
    concurrency: int,
    samples: Sequence[RequestSample],
    *,
    started_at: datetime,
    duration_s: float,
    rate_rps: float | None = None,
) -> LevelResult:
    """A level summarised from its requests exactly as the probe summarises its own (vLLM's definitions)."""
    return summarize_level(
        index,
        concurrency,
        samples,
        started_at=started_at,
        finished_at=datetime.fromtimestamp(started_at.timestamp() + duration_s, UTC),
        duration_s=duration_s,
        slo=SloTargets(),
        request_rate_rps=rate_rps,
    )


def aggregate_slo(ttft: Stats, tpot: Stats, completed: int | None, failed: int, slo: SloTargets) -> SloOutcome:
    """The SLO judged on a file's given percentiles and counts (no per-request data: no attainment, no goodput).

    completed: None when the file counts no requests (its percentiles are still judged).
    """
    given = [NO_REQUEST_COMPLETED] if completed == 0 else percentile_violations(ttft, tpot, slo)
    violations = [*given, *failure_violations(failed, (completed or 0) + failed, slo)]
    return SloOutcome(met=not violations, attainment_ratio=None, goodput_req_s=None, violations=violations)


def level_of_aggregates(
    index: int,
    concurrency: int,
    *,
    started_at: datetime,
    duration_s: float,
    completed: int,
    failed: int,
    input_tokens: int,
    output_tokens: int,
    ttft_ms: Stats,
    tpot_ms: Stats,
    itl_ms: Stats,
    e2e_ms: Stats,
    req_s: float | None,
    output_tok_s: float | None,
    total_tok_s: float | None,
    rate_rps: float | None = None,
    errors: Mapping[str, int] | None = None,
    counted: bool = True,
) -> LevelResult:
    """A level from a file's aggregates: its figures as given, never recomputed (None where not given).

    counted: False when the file states no request counts (the zero counts then say nothing about the SLO).
    """
    return LevelResult(
        index=index,
        concurrency=concurrency,
        request_rate_rps=rate_rps,
        started_at=started_at,
        finished_at=datetime.fromtimestamp(started_at.timestamp() + duration_s, UTC),
        duration_s=duration_s,
        requests=completed + failed,
        completed=completed,
        failed=failed,
        errors=dict(errors or ({"imported_failure": failed} if failed else {})),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        input_tokens_per_request=input_tokens / completed if completed else None,
        output_tokens_per_request=output_tokens / completed if completed else None,
        req_s=req_s,
        output_tok_s=output_tok_s,
        total_tok_s=total_tok_s,
        ttft_ms=ttft_ms,
        tpot_ms=tpot_ms,
        itl_ms=itl_ms,
        e2e_ms=e2e_ms,
        slo=aggregate_slo(ttft_ms, tpot_ms, completed if counted else None, failed, SloTargets()),
    )


def utc(moment: datetime) -> datetime:
    """The moment with a time zone (a naive one is taken as UTC)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def from_epoch_s(value: float | None, default: datetime) -> datetime:
    """A Unix time in seconds as a UTC datetime (default when None or out of range)."""
    if value is None:
        return default
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return default


def stats_of(
    count: int,
    *,
    mean: float | None = None,
    p50: float | None = None,
    p90: float | None = None,
    p99: float | None = None,
    low: float | None = None,
    high: float | None = None,
    scale: float = 1.0,
) -> Stats:
    """A file's given mean and percentiles as Stats, times scale (s -> ms: 1000); None stays None."""

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * scale

    if all(v is None for v in (mean, p50, p90, p99, low, high)):
        return Stats()
    return Stats(
        count=count,
        mean=scaled(mean),
        p50=scaled(p50),
        p90=scaled(p90),
        p99=scaled(p99),
        min=scaled(low),
        max=scaled(high),
    )


def imported_run(
    *,
    provenance: ImportProvenance,
    settings: RunSettings,
    levels: Sequence[LevelResult],
    samples: Sequence[RequestSample],
    started_at: datetime,
    aggregate_only: bool,
) -> ImportedRun:
    """One run read from a file, as the probe's RunResult with where it came from."""
    finished = max((level.finished_at for level in levels), default=started_at)
    if not settings.label:  # named in lists and chart legends by where it came from, and its load
        settings = settings.model_copy(update={"label": _default_label(provenance, levels)})
    result = RunResult(
        endpoint=settings.endpoint,
        model=settings.model,
        settings=settings,
        status=RunStatus.COMPLETED,
        started_at=utc(started_at),
        finished_at=finished,
        best_concurrency_within_slo=best_concurrency_within_slo(levels),
        best_request_rate_within_slo_rps=best_request_rate_within_slo(levels),
        levels=list(levels),
        samples=list(samples),
        notes=[f"imported from {provenance.file_name} ({provenance.tool} {provenance.tool_version or ''})".strip()],
    )
    return ImportedRun(result=result, provenance=provenance, aggregate_only=aggregate_only)


def _default_label(provenance: ImportProvenance, levels: Sequence[LevelResult]) -> str:
    """'guidellm: benchmarks.json · concurrency 4' (or '· 20 req/s' for a rate level)."""
    load = ""
    if levels:
        first = levels[0]
        rate = first.request_rate_rps
        load = f" · {rate:g} req/s" if rate is not None else f" · concurrency {first.concurrency}"
    return f"{provenance.tool}: {provenance.file_name}{load}"[:200]


def with_given(run: ImportedRun, given: Deployment, label: str = "") -> ImportedRun:
    """The run with the deployment the person gave (the file fills what they left blank) and their label."""
    settings = run.result.settings
    deployment = merge_deployment(given, settings.deployment)
    update: dict[str, Any] = {"deployment": deployment}
    if label:
        update["label"] = label[:200]
    result = run.result.model_copy(update={"settings": settings.model_copy(update=update)})
    return run.model_copy(update={"result": result})


def json_safe_settings(record: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The file's own settings among keys: scalars kept as the file gives them (lists and objects left out)."""
    return {
        key: record[key]
        for key in keys
        if key in record and (record[key] is None or isinstance(record[key], (str, int, float, bool)))
    }


def error_kind(http_status: int | None) -> ErrorKind:
    """A failed request's kind from the HTTP status the tool recorded (client_error without an error status)."""
    if http_status is None or http_status < 400:
        return ErrorKind.CLIENT_ERROR
    return status_kind(http_status)
