"""The inference-perf and InferenceX importers read the tools' published files by each tool's own definitions."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from probes.importers.base import ImportFormatError
from probes.importers.inference_perf import IMPORTER as INFERENCE_PERF
from probes.importers.inferencex import IMPORTER as INFERENCEX
from probes.importers.llmd_br import IMPORTER as LLMD_BR
from probes.importers.registry import IMPORTERS

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
    assert (deployment.gpu_count, deployment.engine) == (8, "vllm")
    assert run.result.settings.input_tokens == 1024 and run.result.settings.max_tokens == 1024


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


def test_the_registry_lists_the_three_formats() -> None:
    assert [importer.format_id for importer in IMPORTERS] == ["inference-perf", "inferencex", "llmd-br"]
