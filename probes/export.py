"""Exports of a run: the JSON file (one schema for the CLI and the pages) and CSV tables of levels and requests."""

import csv
import io
import json

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


def result_json(result: RunResult) -> str:
    """The run as JSON (settings without the key; units in key names)."""
    return json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False)


def levels_csv(result: RunResult) -> str:
    """One row per level: counts, throughput, mean and percentiles, SLO."""
    out = io.StringIO()
    writer = csv.writer(out)
    stat_headers = [f"{stat.removesuffix('_ms')}_{field}_ms" for stat in STAT_COLUMNS for field in STAT_FIELDS]
    writer.writerow([*LEVEL_COLUMNS, *stat_headers, "slo_met", "slo_attainment_ratio", "goodput_req_s"])
    for level in result.levels:
        row = level.model_dump(mode="json")
        values = [row[c] for c in LEVEL_COLUMNS]
        values += [row[stat][field] for stat in STAT_COLUMNS for field in STAT_FIELDS]
        values += [level.slo.met, level.slo.attainment_ratio, level.slo.goodput_req_s]
        writer.writerow(values)
    return out.getvalue()


def samples_csv(result: RunResult) -> str:
    """One row per request (raw chunk timings stay in the JSON export)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(SAMPLE_COLUMNS)
    for sample in result.samples:
        row = sample.model_dump(mode="json")
        writer.writerow([row[c] for c in SAMPLE_COLUMNS])
    return out.getvalue()


def turns_csv(result: RunResult) -> str:
    """Sessions: one row per level and turn index (empty but for the header when the run held no sessions)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["level_index", *TURN_COLUMNS])
    for level in result.levels:
        for turn in level.turns or []:
            row = turn.model_dump(mode="json")
            writer.writerow([level.index, *(row[c] for c in TURN_COLUMNS)])
    return out.getvalue()
