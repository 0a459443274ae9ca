"""The inference-perf and InferenceX importers read the tools' published files by each tool's own definitions."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from probes.importers.base import ImportFormatError
from probes.importers.inference_perf import IMPORTER as INFERENCE_PERF
from probes.importers.inferencex import IMPORTER as INFERENCEX
from probes.importers.llmd_br import IMPORTER as LLMD_BR
from probes.importers.registry import format_choices, importer_for

IMPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
FOLDER = IMPORTS / "inference-perf" / "vllm-batch-size"
AGG = IMPORTS / "inferencex" / "agg_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json"
NOW = datetime(2026, 12, 6, tzinfo=UTC)


def test_an_inference_perf_folder_gives_one_run_a_level_per_stage_in_ms() -> None:
    assert INFERENCE_PERF.detect(FOLDER) and not INFERENCEX.detect(FOLDER) and not LLMD_BR.detect(FOLDER)
    (run,) = INFERENCE_PERF.parse(FOLDER, NOW)
    levels = run.result.levels
    assert len(levels) == 7 and run.aggregate_only and run.provenance.tool == "inference-perf"
    stage = json.loads((FOLDER / "stage_0_lifecycle_metrics.json").read_text())
    latency = stage["successes"]["latency"]
    first = levels[0]
    assert first.ttft_ms.p50 == pytest.approx(latency["time_to_first_token"]["median"] * 1000)
    # time_per_output_token excludes the first token (vLLM's TPOT); the normalized one (with it) is not TPOT.
    assert first.tpot_ms.mean == pytest.approx(latency["time_per_output_token"]["mean"] * 1000)
    assert first.tpot_ms.mean != pytest.approx(latency["normalized_time_per_output_token"]["mean"] * 1000)
    assert first.e2e_ms.p99 == pytest.approx(latency["request_latency"]["p99"] * 1000)
    assert (first.completed, first.failed) == (stage["successes"]["count"], stage["failures"]["count"])
    assert first.request_rate_rps == stage["load_summary"]["requested_rate"]
    assert first.output_tok_s == stage["successes"]["throughput"]["output_tokens_per_sec"]
    assert [level.request_rate_rps for level in levels] == sorted(level.request_rate_rps or 0 for level in levels)


def test_an_inferencex_result_reads_seconds_as_ms_and_per_gpu_throughput_back_to_the_server() -> None:
    assert INFERENCEX.detect(AGG) and not LLMD_BR.detect(AGG)
    given = json.loads(AGG.read_text())
    (run,) = INFERENCEX.parse(AGG, NOW)
    level = run.result.levels[0]
    assert run.aggregate_only and run.provenance.tool_version == given["image"]
    assert level.concurrency == 4
    assert level.ttft_ms.p50 == pytest.approx(given["median_ttft"] * 1000)
    assert level.tpot_ms.p99 == pytest.approx(given["p99_tpot"] * 1000)
    assert level.e2e_ms.mean == pytest.approx(given["mean_e2el"] * 1000)
    assert level.total_tok_s == pytest.approx(given["tput_per_gpu"] * 8)  # tp 8 on one node
    assert level.output_tok_s == pytest.approx(given["output_tput_per_gpu"] * 8)
    deployment = run.result.settings.deployment
    assert (deployment.gpu, deployment.gpu_count, deployment.engine) == ("mi355x-288gb", 8, "vllm")
    assert deployment.model is None  # Kimi-K2.5 is not in the catalog, and not taken for Kimi-K2
    assert run.result.settings.input_tokens == 1024 and run.result.settings.max_tokens == 1024
    # The file counts no requests: its SLO verdict rests on its percentiles, never on "no request completed".
    assert not any("no request completed" in v for v in level.slo.violations)


def test_a_file_missing_inferencex_keys_is_refused_saying_which(tmp_path: Path) -> None:
    given = json.loads(AGG.read_text())
    del given["tput_per_gpu"]
    path = tmp_path / "agg_cut.json"
    path.write_text(json.dumps(given))
    assert not INFERENCEX.detect(path)
    with pytest.raises(ImportFormatError, match="tput_per_gpu"):
        INFERENCEX.parse(path, NOW)


def test_an_empty_folder_is_no_inference_perf_report(tmp_path: Path) -> None:
    assert not INFERENCE_PERF.detect(tmp_path)
    with pytest.raises(ImportFormatError, match="stage_N_lifecycle_metrics"):
        INFERENCE_PERF.parse(tmp_path, NOW)


def test_auto_detection_finds_each_published_file_s_format() -> None:
    """The three formats sit in the registry beside the others, and auto-detection picks each one's own file."""
    schemas = IMPORTS.parent / "schemas" / "llm-d-benchmark"
    files = {
        "inference-perf": IMPORTS / "inference-perf" / "vllm-batch-size",
        "inferencex": next((IMPORTS / "inferencex").glob("agg_*.json")),
        "llmd-br": schemas / "br_v0_2_1_example.yaml",
    }
    assert {"inference-perf", "inferencex", "llmd-br"} <= set(format_choices())
    assert {fmt: importer_for(path).format_id for fmt, path in files.items()} == {fmt: fmt for fmt in files}


def _stage(count: int, rate: float) -> dict[str, object]:
    """A stage file of the tool's shape, its figures unused when the per-request file is read."""
    seconds = {"mean": 0.1, "median": 0.1, "p90": 0.1, "p99": 0.1, "min": 0.1, "max": 0.1}
    latency = dict.fromkeys(("time_to_first_token", "time_per_output_token", "request_latency"), seconds)
    return {
        "load_summary": {"count": count, "requested_rate": rate},
        "successes": {"count": count, "latency": latency, "throughput": {"requests_per_sec": rate}},
        "failures": {"count": 0},
    }


def _record(start: float, token_times: list[float], end: float, error: object = None) -> dict[str, object]:
    """One record of per_request_lifecycle_metrics.json (inference_perf/reportgen/base.py's fields)."""
    response = {"output_tokens": len(token_times), "output_token_times": token_times, "server_usage": None}
    return {
        "start_time": start,
        "end_time": end,
        "request": "{}",
        "response": "",
        "info": {"request_metrics": {"text": {"input_tokens": 100}}, "response_metrics": response},
        "error": error,
    }


def test_edge_per_request_records_are_cut_into_the_stages_by_their_counts_and_summarised_by_the_app(
    tmp_path: Path,
) -> None:
    """Hand-written (no published per-request file): 2 then 3 requests, written out of order, one failed."""
    (tmp_path / "stage_0_lifecycle_metrics.json").write_text(json.dumps(_stage(2, 1.0)))
    (tmp_path / "stage_1_lifecycle_metrics.json").write_text(json.dumps(_stage(3, 2.0)))
    records = [
        _record(10.0, [10.05, 10.06, 10.07], 10.07),  # stage 1
        _record(0.0, [0.02, 0.03, 0.04, 0.05], 0.05),  # stage 0
        _record(11.0, [], 11.5, {"error_type": "http_error", "error_msg": "500"}),  # stage 1, failed
        _record(1.0, [1.04, 1.05], 1.06),  # stage 0
        _record(12.0, [12.03, 12.05], 12.05),  # stage 1
    ]
    (tmp_path / "per_request_lifecycle_metrics.json").write_text(json.dumps(records))
    (run,) = INFERENCE_PERF.parse(tmp_path, NOW)
    assert not run.aggregate_only and run.provenance.settings["per_request"] == "used"
    first, second = run.result.levels
    assert (first.requests, first.completed, first.failed) == (2, 2, 0)
    assert (second.requests, second.completed, second.failed) == (3, 2, 1)
    assert len(run.result.samples) == 5
    assert first.ttft_ms.p50 == pytest.approx((20 + 40) / 2)  # ms: 20 and 40, the app's median
    # TPOT as the probe defines it: (E2E - TTFT) / (output tokens - 1): (50 - 20) / 3 and (60 - 40) / 1.
    assert sorted(s.tpot_ms or 0 for s in run.result.samples if s.level_index == 0) == pytest.approx([10.0, 20.0])
    assert first.request_rate_rps == 1.0 and second.request_rate_rps == 2.0

    records.pop()  # the counts no longer add up: the stage files' aggregates, as given
    (tmp_path / "per_request_lifecycle_metrics.json").write_text(json.dumps(records))
    (run,) = INFERENCE_PERF.parse(tmp_path, NOW)
    assert run.aggregate_only and run.provenance.settings["per_request"] == "counts differ"
    assert run.result.levels[0].ttft_ms.p50 == pytest.approx(100.0)
