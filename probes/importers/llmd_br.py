"""llm-d Benchmark Report v0.2 and v0.2.1 (JSON or YAML; one report, or a list): each report a level, aggregate-only.

Definitions from llm-d-benchmark's schema (benchmark_report/schema_v0_2_components.py): time_to_first_token is
TTFT; time_per_output_token excludes the first token (vLLM's TPOT, the probe's); inter_token_latency is ITL;
request_latency is E2E. normalized_time_per_output_token includes the first token: it is not TPOT and is not
read. Latency units s, ms, s/token, ms/token are normalized to ms.
requests.total counts every request sent; failures (errors) and incomplete are both counted as failed.
Reports sharing run.eid (one experiment's stages) become one run, a level per stage.
"""

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from probes.deployment import Deployment
from probes.importers.base import ImportedRun, ImportFormatError, ImportProvenance
from probes.importers.common import (
    FILE_SOURCE,
    content_sha256,
    imported_run,
    imported_settings,
    level_of_aggregates,
    mapping,
    peek,
    read_text,
    stats_of,
)
from probes.importers.names import catalog_match
from probes.models import LevelResult, Stats

FORMAT_ID = "llmd-br"
VERSIONS = ("0.2", "0.2.1")
SUFFIXES = (".json", ".yaml", ".yml")
# The schema's latency field -> the level's statistic.
LATENCIES = {
    "time_to_first_token": "ttft_ms",
    "time_per_output_token": "tpot_ms",
    "inter_token_latency": "itl_ms",
    "request_latency": "e2e_ms",
}
MS_PER_UNIT = {"s": 1000.0, "ms": 1.0, "s/token": 1000.0, "ms/token": 1.0}
_DURATION = re.compile(r"^P(?:(?P<d>[\d.]+)D)?(?:T(?:(?P<h>[\d.]+)H)?(?:(?P<m>[\d.]+)M)?(?:(?P<s>[\d.]+)S)?)?$")


def _document(path: Path) -> Any:
    """The file's JSON or YAML document (ImportFormatError when it is neither)."""
    text = read_text(path)
    try:
        return json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ImportFormatError(f"{path.name}: not valid JSON or YAML ({exc}); is it cut short?") from None


def _reports(document: Any, where: str) -> list[dict[str, Any]]:
    """The reports the document holds (one object, or a list of them), each checked for the version and results."""
    reports = document if isinstance(document, list) else [document]
    if not reports:
        raise ImportFormatError(f"{where}: an empty list, no benchmark report")
    for number, report in enumerate(reports):
        at = f"{where} report {number}"
        found = mapping(report, at)
        if str(found.get("version")) not in VERSIONS:
            raise ImportFormatError(f"{at}: 'version' is {found.get('version')!r}; expected one of {VERSIONS}")
        mapping(found.get("results"), f"{at} 'results'")
        mapping(found.get("run"), f"{at} 'run'")
    return reports


def _get(record: Any, *keys: str) -> Any:
    """record[k1][k2]... or None when any step is missing or not an object."""
    for key in keys:
        if not isinstance(record, dict):
            return None
        record = record.get(key)
    return record


def _ms_stats(raw: Any, field: str, count: int, where: str) -> Stats:
    """A latency Statistics as the level's Stats in ms (ImportFormatError naming the field on an unknown unit)."""
    if raw is None:
        return Stats()
    found = mapping(raw, f"{where} '{field}'")
    units = found.get("units")
    if units not in MS_PER_UNIT:
        raise ImportFormatError(
            f"{where} '{field}': units {units!r} is not a time; expected one of {', '.join(MS_PER_UNIT)}"
        )
    return stats_of(
        count,
        mean=found.get("mean"),
        p50=found.get("p50"),
        p90=found.get("p90"),
        p99=found.get("p99"),
        low=found.get("min"),
        high=found.get("max"),
        scale=MS_PER_UNIT[units],
    )


def _seconds(duration: Any) -> float | None:
    """An ISO-8601 duration (PT49.97S) in seconds, None when absent or not one."""
    found = _DURATION.match(duration) if isinstance(duration, str) else None
    if found is None:
        return None
    parts = {key: float(value) for key, value in found.groupdict().items() if value}
    return parts.get("d", 0) * 86400 + parts.get("h", 0) * 3600 + parts.get("m", 0) * 60 + parts.get("s", 0)


def _moment(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _level(report: dict[str, Any], index: int, imported_at: datetime, where: str) -> LevelResult:
    """One report as a level: its figures as given, in ms and tokens."""
    aggregate = _get(report, "results", "request_performance", "aggregate") or {}
    requests = mapping(aggregate.get("requests"), f"{where} results.request_performance.aggregate.requests")
    total = requests.get("total")
    if not isinstance(total, int) or total < 0:
        raise ImportFormatError(f"{where}: requests.total should be a whole number of requests, got {total!r}")
    failed = int(requests.get("failures") or 0) + int(requests.get("incomplete") or 0)
    completed = max(0, total - failed)
    latency = aggregate.get("latency") or {}
    stats = {key: _ms_stats(latency.get(field), field, completed, where) for field, key in LATENCIES.items()}
    throughput = aggregate.get("throughput") or {}
    rate = {name: _get(throughput, name, "mean") for name in ("output_token_rate", "total_token_rate", "request_rate")}
    lengths = {name: _get(requests, name, "mean") for name in ("input_length", "output_length")}
    load = _get(report, "scenario", "load", "standardized") or {}
    time = _get(report, "run", "time") or {}
    start, end = _moment(time.get("start")), _moment(time.get("end"))
    duration_s = _seconds(time.get("duration"))
    if duration_s is None and start is not None and end is not None:
        duration_s = (end - start).total_seconds()
    if duration_s is None and rate["request_rate"]:
        duration_s = completed / float(rate["request_rate"])
    concurrency = load.get("concurrency")
    rate_qps = load.get("rate_qps")
    return level_of_aggregates(
        index,
        int(concurrency) if isinstance(concurrency, (int, float)) and 1 <= concurrency < float("inf") else 1,
        started_at=start or imported_at,
        duration_s=duration_s or 0.0,
        completed=completed,
        failed=failed,
        input_tokens=round(float(lengths["input_length"] or 0) * completed),
        output_tokens=round(float(lengths["output_length"] or 0) * completed),
        ttft_ms=stats["ttft_ms"],
        tpot_ms=stats["tpot_ms"],
        itl_ms=stats["itl_ms"],
        e2e_ms=stats["e2e_ms"],
        req_s=rate["request_rate"],
        output_tok_s=rate["output_token_rate"],
        total_tok_s=rate["total_token_rate"],
        rate_rps=float(rate_qps) if isinstance(rate_qps, (int, float)) and rate_qps > 0 else None,
        errors={"imported_failure": failed} if failed else None,
    )


def _deployment(report: dict[str, Any]) -> tuple[Deployment, str | None]:
    """The deployment the report's inference engines state (catalog ids only), and the served model's name."""
    engines = [
        component
        for component in _get(report, "scenario", "stack") or []
        if _get(component, "standardized", "kind") == "inference_engine"
    ]
    if not engines:
        return Deployment(), None
    first = engines[0]
    standardized = first["standardized"]
    model_name = _get(standardized, "model", "name")
    accelerator = standardized.get("accelerator") or {}
    count = sum(
        int(_get(c, "standardized", "accelerator", "count") or 0) * int(_get(c, "standardized", "replicas") or 1)
        for c in engines
    )
    args = _get(first, "native", "args") or {}
    values: dict[str, Any] = {
        "gpu": catalog_match("gpu", accelerator.get("model")),
        "model": catalog_match("model", model_name),
        "engine": catalog_match("engine", standardized.get("tool")),
        "quant": catalog_match("quant", args.get("--quantization")),
        "gpu_count": count if count >= 1 else None,
    }
    known = {field: value for field, value in values.items() if value is not None}
    return Deployment(**known, source=dict.fromkeys(known, FILE_SOURCE)), model_name


def _group(reports: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Reports of one experiment (same run.eid) together, in stage order; a report without eid alone."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for number, report in enumerate(reports):
        eid = _get(report, "run", "eid")
        groups.setdefault(str(eid) if eid else f"#{number}", []).append(report)
    return [
        sorted(group, key=lambda r: int(_get(r, "scenario", "load", "standardized", "stage") or 0))
        for group in groups.values()
    ]


class LlmdBenchmarkReportImporter:
    """llm-d Benchmark Report v0.2 / v0.2.1 files."""

    format_id = FORMAT_ID
    expected = (
        "llmd-br: an llm-d Benchmark Report v0.2 or v0.2.1 (JSON or YAML) with 'version', 'run' and "
        "'results.request_performance', or a list of them"
    )

    def detect(self, path: Path) -> bool:
        if not path.is_file() or path.suffix.lower() not in SUFFIXES:
            return False
        head = peek(path)
        if "request_performance" not in head and "results" not in head:
            return False
        try:
            return bool(_reports(_document(path), path.name))
        except (ImportFormatError, RecursionError):
            return False

    def parse(self, path: Path, imported_at: datetime) -> list[ImportedRun]:
        reports = _reports(_document(path), path.name)
        sha256 = content_sha256([path])
        runs: list[ImportedRun] = []
        for part, group in enumerate(_group(reports)):
            first = group[0]
            where = f"{path.name} run {_get(first, 'run', 'uid')!r}"
            levels = [_level(report, index, imported_at, where) for index, report in enumerate(group)]
            deployment, model_name = _deployment(first)
            load = _get(first, "scenario", "load", "standardized") or {}
            native = _get(first, "scenario", "load", "native", "config") or {}
            served = _get(native, "server", "model_name") or _get(native, "model") or model_name or "unknown"
            settings = imported_settings(
                model=str(served),
                base_url=_get(native, "server", "base_url") or _get(native, "base_url"),
                concurrency=[level.concurrency for level in levels],
                requests_per_level=max((level.requests for level in levels), default=0),
                rates_rps=[level.request_rate_rps for level in levels if level.request_rate_rps is not None],
                label=str(_get(first, "run", "description") or ""),
                deployment=deployment,
            )
            provenance = ImportProvenance(
                format=FORMAT_ID,
                tool=str(load.get("tool") or "llm-d-benchmark"),
                tool_version=str(load["tool_version"]) if load.get("tool_version") else None,
                file_name=path.name,
                file_sha256=sha256,
                part=part,
                settings={
                    "version": str(first.get("version")),
                    "uid": [_get(report, "run", "uid") for report in group],
                    "eid": _get(first, "run", "eid"),
                    "load": json.loads(json.dumps(load, default=str)),
                },
                imported_at=imported_at,
            )
            runs.append(
                imported_run(
                    provenance=provenance,
                    settings=settings,
                    levels=levels,
                    samples=[],
                    started_at=levels[0].started_at,
                    aggregate_only=True,
                )
            )
        return runs


IMPORTER = LlmdBenchmarkReportImporter()
