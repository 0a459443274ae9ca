"""guidellm's benchmarks.json / benchmarks.yaml: one file holds many benchmarks, and each becomes its own run.

Definitions (guidellm/schemas/base/request_stats.py): guidellm's time_per_output_token_ms includes the first token
(latency to the last token / output tokens) and is not vLLM's TPOT; its inter_token_latency_ms, (last token - first
token) / (output tokens - 1), is. request_latency is in seconds, the *_ms metrics in ms. Requests of the warm-up
and cool-down phases stay in the file's request lists but outside its measured window
(scheduler_metrics.measure_start_time .. measure_end_time); guidellm's metrics count only the requests that overlap
the window, and so do the samples here. Errored requests count as failed; incomplete ones (cut off when the
benchmark stopped) are neither, as in guidellm. When the file keeps only a sample of the requests (--sample-size),
the run is aggregate-only with guidellm's own percentiles.
"""

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from probes.importers.base import ImportedRun, ImportFormatError, ImportProvenance
from probes.importers.common import (
    MS_PER_S,
    content_sha256,
    file_deployment,
    from_epoch_s,
    imported_run,
    imported_settings,
    level_of_aggregates,
    level_of_samples,
    load_json,
    mapping,
    peek,
    read_text,
    stats_of,
)
from probes.models import ErrorKind, LevelResult, RequestSample, Stats

FORMAT_ID = "guidellm"
TOOL = "guidellm"
EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")


class GuidellmImporter:
    """guidellm's saved report (JSON or YAML)."""

    format_id = FORMAT_ID
    expected = (
        "guidellm: benchmarks.json or benchmarks.yaml as `guidellm run --output` saves it "
        "(metadata.guidellm_version and a list 'benchmarks', one per strategy)"
    )

    def detect(self, path: Path) -> bool:
        """A file naming guidellm_version or generative benchmarks."""
        if not path.is_file():
            return False
        head = peek(path)
        if "guidellm_version" in head or "generative_benchmark" in head:
            return True
        return path.suffix.lower() in (".yaml", ".yml") and head.startswith("benchmarks:")  # keys sorted: a-z

    def parse(self, path: Path, imported_at: datetime) -> list[ImportedRun]:
        """Each benchmark as its own run, in file order (part = its position)."""
        report = mapping(_load(path), path.name)
        benchmarks = report.get("benchmarks")
        if not isinstance(benchmarks, list):
            raise ImportFormatError(f"{path.name}: the list 'benchmarks' is missing")
        if not benchmarks:
            raise ImportFormatError(f"{path.name}: the report holds no benchmarks (an empty 'benchmarks' list)")
        metadata = report.get("metadata") if isinstance(report.get("metadata"), dict) else {}
        version = metadata.get("guidellm_version") if isinstance(metadata, dict) else None
        sha = content_sha256([path])
        runs = []
        for part, benchmark in enumerate(benchmarks):
            where = f"{path.name} benchmark {part + 1}"
            runs.append(
                _run(mapping(benchmark, where), where, part, path, sha, str(version) if version else None, imported_at)
            )
        return runs


def _load(path: Path) -> Any:
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.load(read_text(path), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise ImportFormatError(f"{path.name}: not valid YAML ({exc}); is it cut short?") from None
    return load_json(path)


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _load_shape(strategy: Mapping[str, Any]) -> tuple[int, float | None]:
    """(concurrency, request rate) of a strategy: streams, the in-flight cap, or 1 for synchronous."""
    kind = str(strategy.get("type_") or "")
    rate = _num(strategy.get("rate")) if kind in ("constant", "poisson", "async") else None
    streams = _num(strategy.get("streams")) or _num(strategy.get("max_concurrency"))
    return (1 if kind == "synchronous" else int(streams or 1)), rate


def _run(
    benchmark: Mapping[str, Any],
    where: str,
    part: int,
    path: Path,
    sha: str,
    version: str | None,
    imported_at: datetime,
) -> ImportedRun:
    config, metrics = _dict(benchmark.get("config")), _dict(benchmark.get("metrics"))
    if not metrics:
        raise ImportFormatError(f"{where}: the object 'metrics' is missing")
    strategy, backend = _dict(config.get("strategy")), _dict(config.get("backend"))
    concurrency, rate = _load_shape(strategy)
    started = from_epoch_s(_num(benchmark.get("start_time")), EPOCH)
    duration_s = _num(benchmark.get("duration"))
    if duration_s is None:
        raise ImportFormatError(f"{where}: the field 'duration' is missing")
    samples = _samples(benchmark, concurrency, where)
    level = (
        level_of_samples(0, concurrency, samples, started_at=started, duration_s=duration_s, rate_rps=rate)
        if samples is not None
        else _aggregate_level(metrics, concurrency, rate, started, duration_s)
    )
    model = backend.get("model") if isinstance(backend.get("model"), str) else None
    settings = imported_settings(
        model=model or "",
        base_url=backend.get("target") if isinstance(backend.get("target"), str) else None,
        concurrency=[concurrency],
        requests_per_level=level.requests,
        rates_rps=[rate] if rate else [],
        input_tokens=round(level.input_tokens_per_request) if level.input_tokens_per_request else None,
        deployment=file_deployment(model=model),
    )
    provenance = ImportProvenance(
        format=FORMAT_ID,
        tool=TOOL,
        tool_version=version,
        file_name=path.name,
        file_sha256=sha,
        part=part,
        settings={
            "strategy": {k: v for k, v in strategy.items() if isinstance(v, (str, int, float, bool))},
            "backend": {k: v for k, v in backend.items() if isinstance(v, (str, int, float, bool))},
            "benchmark_id": config.get("id_"),
        },
        imported_at=imported_at,
    )
    return imported_run(
        provenance=provenance,
        settings=settings,
        levels=[level],
        samples=samples or [],
        started_at=started,
        aggregate_only=samples is None,
    )


def _in_window(request: Mapping[str, Any], start: float | None, end: float | None) -> bool:
    """Guidellm's rule: a request counts when it overlaps the measured window."""
    began, ended = _num(request.get("request_start_time")), _num(request.get("request_end_time"))
    if ended is None:
        return False
    began = began if began is not None else ended
    return (start is None or ended >= start) and (end is None or began <= end)


def _samples(benchmark: Mapping[str, Any], concurrency: int, where: str) -> list[RequestSample] | None:
    """The window's requests as samples; None when the file kept only some of them (guidellm's --sample-size)."""
    requests, totals = _dict(benchmark.get("requests")), _dict(_dict(benchmark.get("metrics")).get("request_totals"))
    window = _dict(benchmark.get("scheduler_metrics"))
    start, end = _num(window.get("measure_start_time")), _num(window.get("measure_end_time"))
    kept: dict[str, list[Mapping[str, Any]]] = {}
    for status in ("successful", "errored"):
        listed = requests.get(status)
        if not isinstance(listed, list):
            return None
        kept[status] = [r for r in listed if isinstance(r, dict) and _in_window(r, start, end)]
        if len(kept[status]) != int(_num(totals.get(status)) or 0):
            return None
    ordered = sorted(
        [(r, True) for r in kept["successful"]] + [(r, False) for r in kept["errored"]],
        key=lambda pair: _num(pair[0].get("request_start_time")) or 0.0,
    )
    first = min((_num(r.get("request_start_time")) or 0.0 for r, _ in ordered), default=0.0)
    return [_sample(r, ok, i, concurrency, first) for i, (r, ok) in enumerate(ordered)]


def _int(value: object) -> int | None:
    number = _num(value)
    return int(number) if number is not None else None


def _sample(request: Mapping[str, Any], ok: bool, index: int, concurrency: int, first: float) -> RequestSample:
    start_s = (_num(request.get("request_start_time")) or first) - first
    common: dict[str, Any] = {
        "level_index": 0,
        "concurrency": concurrency,
        "index": index,
        "start_s": start_s,
        "input_tokens": _int(request.get("prompt_tokens")),
    }
    if not ok:
        error = _dict(request.get("info")).get("error")
        return RequestSample(**common, error_kind=ErrorKind.CLIENT_ERROR, error=str(error or "errored")[:2000])
    latency_s = _num(request.get("request_latency"))
    return RequestSample(
        **common,
        ttft_ms=_num(request.get("time_to_first_token_ms")),
        e2e_ms=latency_s * MS_PER_S if latency_s is not None else None,
        tpot_ms=_num(request.get("inter_token_latency_ms")),  # guidellm's ITL is vLLM's TPOT
        output_tokens=_int(request.get("output_tokens")),
    )


def _given(metrics: Mapping[str, Any], key: str, scale: float = 1.0) -> Stats:
    """The successful requests' distribution of a metric, as guidellm gives it."""
    dist = _dict(_dict(metrics.get(key)).get("successful"))
    if not dist:
        return Stats()
    pct = _dict(dist.get("percentiles"))
    return stats_of(
        int(_num(dist.get("count")) or 0),
        mean=_num(dist.get("mean")),
        p50=_num(pct.get("p50")) if pct else _num(dist.get("median")),
        p90=_num(pct.get("p90")),
        p99=_num(pct.get("p99")),
        low=_num(dist.get("min")),
        high=_num(dist.get("max")),
        scale=scale,
    )


def _total(metrics: Mapping[str, Any], key: str) -> int:
    return int(_num(_dict(_dict(metrics.get(key)).get("successful")).get("total_sum")) or 0)


def _mean(metrics: Mapping[str, Any], key: str) -> float | None:
    return _num(_dict(_dict(metrics.get(key)).get("successful")).get("mean"))


def _aggregate_level(
    metrics: Mapping[str, Any], concurrency: int, rate: float | None, started: datetime, duration_s: float
) -> LevelResult:
    totals = _dict(metrics.get("request_totals"))
    completed = int(_num(totals.get("successful")) or 0)
    failed = int(_num(totals.get("errored")) or 0)
    output_tok_s = _mean(metrics, "output_tokens_per_second")
    return level_of_aggregates(
        0,
        concurrency,
        started_at=started,
        duration_s=duration_s,
        completed=completed,
        failed=failed,
        input_tokens=_total(metrics, "prompt_token_count"),
        output_tokens=_total(metrics, "output_token_count"),
        ttft_ms=_given(metrics, "time_to_first_token_ms"),
        tpot_ms=_given(metrics, "inter_token_latency_ms"),
        itl_ms=Stats(),
        e2e_ms=_given(metrics, "request_latency", MS_PER_S),
        req_s=_mean(metrics, "requests_per_second"),
        output_tok_s=output_tok_s,
        total_tok_s=_mean(metrics, "tokens_per_second"),
        rate_rps=rate,
    )
