"""vLLM's `vllm bench serve --save-result` JSON: aggregates, and with --save-detailed its per-request arrays as samples.

Definitions (vllm/benchmarks/serve.py): times per request in seconds (ttfts, latencies, itls, start_times), the
aggregates in ms (mean_ttft_ms, p99_tpot_ms, ...); TPOT excludes the first token, (latency - ttft) / (output - 1);
a request failed when its `errors` entry is not empty (`failed` counts them); warm-up requests (--num-warmups) are
never written to the file. The file does not name vLLM's release.
"""

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from probes.importers.base import ImportedRun, ImportFormatError, ImportProvenance
from probes.importers.common import (
    MS_PER_S,
    content_sha256,
    file_deployment,
    imported_run,
    imported_settings,
    json_safe_settings,
    level_of_aggregates,
    level_of_samples,
    load_jsonl,
    mapping,
    need,
    number,
    peek,
    read_text,
    stats_of,
)
from probes.models import ErrorKind, LevelResult, RequestSample

FORMAT_ID = "vllm"
TOOL = "vllm bench serve"
DETAIL_KEYS = ("ttfts", "itls", "latencies", "input_lens", "output_lens", "errors")
SETTING_KEYS = (
    "date",
    "backend",
    "endpoint_type",
    "label",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "ramp_up_strategy",
    "ramp_up_start_rps",
    "ramp_up_end_rps",
)
MARKERS = ('"num_prompts"', '"request_throughput"', '"total_input_tokens"')


class VllmImporter:
    """vLLM bench serve's result file (one run, one level)."""

    format_id = FORMAT_ID
    expected = (
        "vllm: the JSON file of `vllm bench serve --save-result` (keys date, num_prompts, duration, completed, "
        "mean_ttft_ms, ...; with --save-detailed also ttfts, itls, latencies per request)"
    )

    def detect(self, path: Path) -> bool:
        """A JSON object (not lines) with vLLM's result keys and without SGLang's."""
        if not path.is_file():
            return False
        head = peek(path).lstrip()
        sglang = '"total_output_tokens_retokenized"' in head
        return head.startswith("{") and all(m in head for m in MARKERS) and not sglang

    def parse(self, path: Path, imported_at: datetime) -> list[ImportedRun]:
        """The file's run (--append-result: one run per line): samples with the per-request arrays, else aggregates."""
        sha = content_sha256([path])
        text = read_text(path)
        try:
            documents = [json.loads(text)]
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise ImportFormatError(
                    f"{path.name}: not valid JSON at line {exc.lineno} ({exc.msg}); is it cut short?"
                ) from None
            documents = load_jsonl(path)  # --append-result: one result per line
        runs = []
        for part, document in enumerate(documents):
            where = path.name if len(documents) == 1 else f"{path.name} line {part + 1}"
            runs.append(_run(mapping(document, where), where, part, path.name, sha, imported_at))
        return runs


def _run(data: Mapping[str, Any], where: str, part: int, name: str, sha: str, imported_at: datetime) -> ImportedRun:
    """One result object as a run of one level."""
    for key in ("duration", "completed", "total_input_tokens", "total_output_tokens"):
        need(data, key, where)
    rate = _rate(data.get("request_rate"), where)
    count = int(need(data, "completed", where) + (number(data, "failed", where) or 0))
    concurrency = int(number(data, "max_concurrency", where) or number(data, "num_prompts", where) or max(count, 1))
    started = _started(data.get("date")) or imported_at
    detailed = all(isinstance(data.get(key), list) for key in DETAIL_KEYS)
    samples = _samples(data, concurrency, where) if detailed else []
    level = (
        level_of_samples(0, concurrency, samples, started_at=started, duration_s=data["duration"], rate_rps=rate)
        if detailed
        else _aggregate_level(data, concurrency, started, rate, where)
    )
    settings = imported_settings(
        model=str(data.get("model_id") or ""),
        base_url=None,
        concurrency=[concurrency],
        requests_per_level=count,
        rates_rps=[rate] if rate is not None else [],
        input_tokens=_mean_int(level.input_tokens_per_request),
        label=str(data.get("label") or ""),
        deployment=file_deployment(model=_text(data.get("model_id")), engine=_text(data.get("backend"))),
    )
    provenance = ImportProvenance(
        format=FORMAT_ID,
        tool=TOOL,
        tool_version=None,
        file_name=name,
        file_sha256=sha,
        part=part,
        settings=json_safe_settings(data, SETTING_KEYS) | _metadata(data),
        imported_at=imported_at,
    )
    return imported_run(
        provenance=provenance,
        settings=settings,
        levels=[level],
        samples=samples,
        started_at=started,
        aggregate_only=not detailed,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _mean_int(value: float | None) -> int | None:
    return round(value) if value is not None else None


def _metadata(data: Mapping[str, Any]) -> dict[str, Any]:
    """--metadata KEY=VALUE pairs: string values the tool merged at the top level."""
    known = set(SETTING_KEYS)
    return {k: v for k, v in data.items() if isinstance(v, str) and k not in known}


def _rate(value: object, where: str) -> float | None:
    """The configured request rate in req/s; None for 'inf' (all at once, bounded by max_concurrency)."""
    if value is None or value == "inf":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ImportFormatError(f"{where}: 'request_rate' should be a number or \"inf\", got {value!r}")
    return float(value) if math.isfinite(value) and value > 0 else None


def _started(value: object) -> datetime | None:
    """The file's 'date' (YYYYmmdd-HHMMSS, the benchmarking machine's clock, taken as UTC); None without one."""
    if isinstance(value, str):
        try:
            return datetime.strptime(value, "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
        except ValueError:
            pass
    return None


def _samples(data: Mapping[str, Any], concurrency: int, where: str) -> list[RequestSample]:
    """One sample per request from the --save-detailed arrays (seconds to ms)."""
    arrays = {key: data[key] for key in DETAIL_KEYS}
    sizes = {len(values) for values in arrays.values()}
    if len(sizes) != 1:
        raise ImportFormatError(f"{where}: the per-request arrays differ in length ({sorted(sizes)})")
    starts: Sequence[Any] = data.get("start_times") or []
    first = min((s for s in starts if isinstance(s, (int, float))), default=0.0)
    samples = []
    for i in range(sizes.pop()):
        error = arrays["errors"][i]
        start_s = float(starts[i]) - first if i < len(starts) and isinstance(starts[i], (int, float)) else 0.0
        if error:
            samples.append(
                RequestSample(
                    level_index=0,
                    concurrency=concurrency,
                    index=i,
                    start_s=start_s,
                    input_tokens=_int(arrays["input_lens"][i]),
                    error_kind=ErrorKind.CLIENT_ERROR,
                    error=str(error)[:2000],
                )
            )
            continue
        samples.append(_ok_sample(arrays, i, concurrency, start_s, where))
    return samples


def _ok_sample(arrays: Mapping[str, Any], i: int, concurrency: int, start_s: float, where: str) -> RequestSample:
    ttft_s, latency_s = arrays["ttfts"][i], arrays["latencies"][i]
    if not isinstance(ttft_s, (int, float)) or not isinstance(latency_s, (int, float)):
        raise ImportFormatError(f"{where}: request {i} has no ttft or latency although it did not fail")
    output = _int(arrays["output_lens"][i])
    ttft_ms, e2e_ms = ttft_s * MS_PER_S, latency_s * MS_PER_S
    gaps = arrays["itls"][i] if isinstance(arrays["itls"][i], list) else []
    return RequestSample(
        level_index=0,
        concurrency=concurrency,
        index=i,
        start_s=start_s,
        ttft_ms=ttft_ms,
        e2e_ms=e2e_ms,
        tpot_ms=(e2e_ms - ttft_ms) / (output - 1) if output is not None and output > 1 else None,
        itl_ms=[float(g) * MS_PER_S for g in gaps if isinstance(g, (int, float))],
        input_tokens=_int(arrays["input_lens"][i]),
        output_tokens=output,
    )


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _given(data: Mapping[str, Any], metric: str, count: int, where: str) -> Any:
    """One metric's mean and percentiles as the file gives them (ms); median stands for p50 when no p50 is given."""
    p50 = number(data, f"p50_{metric}_ms", where)
    return stats_of(
        count,
        mean=number(data, f"mean_{metric}_ms", where),
        p50=p50 if p50 is not None else number(data, f"median_{metric}_ms", where),
        p90=number(data, f"p90_{metric}_ms", where),
        p99=number(data, f"p99_{metric}_ms", where),
    )


def _aggregate_level(
    data: Mapping[str, Any], concurrency: int, started: datetime, rate: float | None, where: str
) -> LevelResult:
    completed, failed = int(data["completed"]), int(number(data, "failed", where) or 0)
    return level_of_aggregates(
        0,
        concurrency,
        started_at=started,
        duration_s=float(data["duration"]),
        completed=completed,
        failed=failed,
        input_tokens=int(data["total_input_tokens"]),
        output_tokens=int(data["total_output_tokens"]),
        ttft_ms=_given(data, "ttft", completed, where),
        tpot_ms=_given(data, "tpot", completed, where),
        itl_ms=_given(data, "itl", completed, where),
        e2e_ms=_given(data, "e2el", completed, where),
        req_s=number(data, "request_throughput", where),
        output_tok_s=number(data, "output_throughput", where),
        total_tok_s=number(data, "total_token_throughput", where),
        rate_rps=rate,
    )
