"""Exports of a run: the JSON file (one schema for the CLI and the pages) and CSV tables of levels and requests."""

import csv
import io
import json
import re
from typing import Any

from i18n import N_, Translate, identity
from probes.models import RunResult

LEVEL_COLUMNS = (
    "concurrency",
    "request_rate_rps",
    "requests",
    "completed",
    "failed",
    "duration_s",
    "req_s",
    "output_tok_s",
    "total_tok_s",
    "input_tokens_per_request",
    "output_tokens_per_request",
    "token_source",
)
STAT_COLUMNS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
STAT_FIELDS = ("mean", "p50", "p90", "p99")
SAMPLE_COLUMNS = (
    "level_index",
    "concurrency",
    "index",
    "start_s",
    "ttft_ms",
    "first_content_ms",
    "reasoning_ms",
    "tpot_ms",
    "e2e_ms",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "token_source",
    "finish_reason",
    "http_status",
    "error_kind",
    "error",
    "retry_after_s",
    "trace_line",
    "session",
    "turn",
)
TURN_COLUMNS = (
    "turn",
    "count",
    "failed",
    "ttft_ms_p50",
    "ttft_ms_p99",
    "tpot_ms_p50",
    "e2e_ms_p50",
    "input_tokens_mean",
)


# A readable label per CSV key, for the optional second header row (the keys stay: scripts read them).
COLUMN_LABELS: dict[str, str] = {
    "concurrency": N_("Concurrency"),
    "request_rate_rps": N_("Request rate (req/s)"),
    "requests": N_("Requests"),
    "completed": N_("Completed"),
    "failed": N_("Failed"),
    "duration_s": N_("Duration (s)"),
    "req_s": N_("Requests per second"),
    "output_tok_s": N_("Output tokens per second"),
    "total_tok_s": N_("Total tokens per second"),
    "input_tokens_per_request": N_("Input tokens per request"),
    "output_tokens_per_request": N_("Output tokens per request"),
    "token_source": N_("Token count source"),
    "slo_met": N_("SLO met"),
    "slo_attainment_ratio": N_("SLO attainment"),
    "goodput_req_s": N_("Goodput (req/s)"),
    "level_index": N_("Level"),
    "index": N_("Request"),
    "start_s": N_("Sent at (s)"),
    "ttft_ms": N_("TTFT (ms)"),
    "first_content_ms": N_("First content (ms)"),
    "reasoning_ms": N_("Reasoning (ms)"),
    "tpot_ms": N_("TPOT (ms)"),
    "e2e_ms": N_("E2E (ms)"),
    "input_tokens": N_("Input tokens"),
    "output_tokens": N_("Output tokens"),
    "reasoning_tokens": N_("Reasoning tokens"),
    "finish_reason": N_("Finish reason"),
    "http_status": N_("HTTP status"),
    "error_kind": N_("Error kind"),
    "error": N_("Error"),
    "retry_after_s": N_("Retry after (s)"),
    "trace_line": N_("Trace line"),
    "session": N_("Session"),
    "turn": N_("Turn"),
    "count": N_("Completed"),
    "input_tokens_mean": N_("Input tokens (mean)"),
    "t_s": N_("Time since the run started (s)"),
    "at": N_("Time (UTC)"),
    "gpu": N_("GPU"),
    "power_w": N_("Power (W)"),
    "energy_mj": N_("Energy counter (mJ)"),
}
POWER_COLUMNS = ("t_s", "at", "gpu", "power_w", "energy_mj", "error")
_STAT = re.compile(r"^(ttft|tpot|itl|e2e)_(?:(mean|p50|p90|p99)_ms|ms_(mean|p50|p90|p99))$")


def column_label(key: str, tr: Translate = identity) -> str:
    """The readable label of a CSV key ('ttft_p50_ms' -> 'TTFT p50 (ms)'), worded by tr."""
    found = _STAT.match(key)
    if found:
        stat = found.group(2) or found.group(3)
        return tr("{metric} {stat} (ms)").format(
            metric=found.group(1).upper(), stat=tr("mean") if stat == "mean" else stat
        )
    return tr(COLUMN_LABELS[key]) if key in COLUMN_LABELS else key


def _header(writer: Any, keys: list[str], tr: Translate | None) -> None:
    """The key row, and a row of labels when asked for."""
    writer.writerow(keys)
    if tr is not None:
        writer.writerow([column_label(key, tr) for key in keys])


def result_json(result: RunResult) -> str:
    """The run as JSON (settings without the key; units in key names)."""
    return json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False)


def levels_csv(result: RunResult, labels: Translate | None = None) -> str:
    """One row per level: counts, throughput, mean and percentiles, SLO; labels: a second header row, worded."""
    out = io.StringIO()
    writer = csv.writer(out)
    stat_headers = [f"{stat.removesuffix('_ms')}_{field}_ms" for stat in STAT_COLUMNS for field in STAT_FIELDS]
    _header(writer, [*LEVEL_COLUMNS, *stat_headers, "slo_met", "slo_attainment_ratio", "goodput_req_s"], labels)
    for level in result.levels:
        row = level.model_dump(mode="json")
        values = [row[c] for c in LEVEL_COLUMNS]
        values += [row[stat][field] for stat in STAT_COLUMNS for field in STAT_FIELDS]
        values += [level.slo.met, level.slo.attainment_ratio, level.slo.goodput_req_s]
        writer.writerow(values)
    return out.getvalue()


def samples_csv(result: RunResult, labels: Translate | None = None) -> str:
    """One row per request (raw chunk timings stay in the JSON export); labels: a second header row, worded."""
    out = io.StringIO()
    writer = csv.writer(out)
    _header(writer, list(SAMPLE_COLUMNS), labels)
    for sample in result.samples:
        row = sample.model_dump(mode="json")
        writer.writerow([row[c] for c in SAMPLE_COLUMNS])
    return out.getvalue()


def turns_csv(result: RunResult, labels: Translate | None = None) -> str:
    """Sessions: one row per level and turn index (only the header without sessions); labels: a second header row."""
    out = io.StringIO()
    writer = csv.writer(out)
    _header(writer, ["level_index", *TURN_COLUMNS], labels)
    for level in result.levels:
        for turn in level.turns or []:
            row = turn.model_dump(mode="json")
            writer.writerow([level.index, *(row[c] for c in TURN_COLUMNS)])
    return out.getvalue()


def power_csv(result: RunResult, labels: Translate | None = None) -> str:
    """One row per GPU per scrape of the DCGM exporter (a failed scrape: its error), on the run's time axis."""
    out = io.StringIO()
    writer = csv.writer(out)
    _header(writer, list(POWER_COLUMNS), labels)
    for sample in result.power:
        t_s = f"{(sample.at - result.started_at).total_seconds():.3f}"
        writer.writerow([t_s, sample.at.isoformat(), sample.gpu, sample.power_w, sample.energy_mj, sample.error])
    return out.getvalue()
