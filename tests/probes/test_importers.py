"""Each importer against the file its tool wrote: the figures the tool printed come back, by its own definitions."""

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from probes.importers.base import ImportedRun, ImportFormatError
from probes.importers.registry import IMPORTERS, format_choices, importer_for, read_runs
from tests.support import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "imports"
NOW = datetime(2026, 12, 6, 1, 0, tzinfo=UTC)


def _printed(console: Path, label: str) -> float:
    """A figure as the tool printed it: the number after 'label' on its line."""
    for line in console.read_text(encoding="utf-8").splitlines():
        if label in line:
            return float(re.findall(r"[-\d.,]+", line.split(label, 1)[1])[0].replace(",", ""))
    raise AssertionError(f"{label!r} not in {console.name}")


def _one(path: Path) -> ImportedRun:
    runs = read_runs(path, NOW)
    assert len(runs) == 1
    return runs[0]


def test_vllm_detailed_file_gives_samples_whose_percentiles_are_those_vllm_printed() -> None:
    console = FIXTURES / "vllm" / "vllm_detailed.console.txt"
    run = _one(FIXTURES / "vllm" / "vllm_detailed.json")
    level = run.result.levels[0]
    assert not run.aggregate_only and len(run.result.samples) == 40
    assert run.provenance.format == "vllm" and run.provenance.tool_version is None  # the file names no release
    assert level.concurrency == 4 and level.request_rate_rps is None
    assert level.completed == _printed(console, "Successful requests:")
    assert level.failed == _printed(console, "Failed requests:")
    assert round(level.req_s or 0, 2) == _printed(console, "Request throughput (req/s):")
    assert round(level.output_tok_s or 0, 2) == _printed(console, "Output token throughput (tok/s):")
    assert round(level.ttft_ms.mean or 0, 2) == _printed(console, "Mean TTFT (ms):")
    assert round(level.ttft_ms.p50 or 0, 2) == _printed(console, "Median TTFT (ms):")
    assert round(level.ttft_ms.p99 or 0, 2) == _printed(console, "P99 TTFT (ms):")
    assert round(level.tpot_ms.p99 or 0, 2) == _printed(console, "P99 TPOT (ms):")
    assert round(level.itl_ms.mean or 0, 2) == _printed(console, "Mean ITL (ms):")
    assert round(level.itl_ms.p99 or 0, 2) == _printed(console, "P99 ITL (ms):")
    assert run.result.settings.deployment.model == "qwen2.5-7b"  # the file's model_id, matched to the catalog
    assert run.result.settings.deployment.source == {"model": "file"}


def test_vllm_file_without_details_is_aggregate_only_with_its_figures_as_given() -> None:
    path = FIXTURES / "vllm" / "vllm_aggregate.json"
    data = json.loads(path.read_text())
    run = _one(path)
    level = run.result.levels[0]
    assert run.aggregate_only and run.result.samples == []
    assert level.request_rate_rps == 20.0 and level.concurrency == 8
    assert level.ttft_ms.p90 == data["p90_ttft_ms"] and level.tpot_ms.p50 == data["p50_tpot_ms"]
    assert level.e2e_ms.p99 == data["p99_e2el_ms"]
    assert level.req_s == data["request_throughput"]
    assert level.ttft_ms.min is None  # not in the file: not invented
    assert level.slo.attainment_ratio is None and level.slo.goodput_req_s is None


def test_aiperf_folder_is_one_run_with_samples_and_warmup_dropped() -> None:
    run = _one(FIXTURES / "aiperf" / "run1")
    aggregate = json.loads((FIXTURES / "aiperf" / "run1" / "profile_export_aiperf.json").read_text())
    level = run.result.levels[0]
    assert not run.aggregate_only
    assert len(run.result.samples) == aggregate["request_count"]["avg"] == 40  # the 4 warm-up records left out
    assert run.provenance.tool_version == "0.13.0"
    assert level.concurrency == 4
    # percentiles recomputed from the records equal AIPerf's own
    assert level.ttft_ms.p50 == pytest.approx(aggregate["time_to_first_token"]["p50"])
    assert level.ttft_ms.p99 == pytest.approx(aggregate["time_to_first_token"]["p99"])
    # AIPerf's inter_token_latency is vLLM's TPOT; its inter_chunk_latency is vLLM's ITL
    assert level.tpot_ms.p90 == pytest.approx(aggregate["inter_token_latency"]["p90"])
    assert level.itl_ms.p99 == pytest.approx(aggregate["inter_chunk_latency"]["p99"])
    assert level.e2e_ms.mean == pytest.approx(aggregate["request_latency"]["avg"])
    console = FIXTURES / "aiperf" / "run1" / "console.txt"
    assert round(level.ttft_ms.mean or 0, 2) == _printed(console, "Time to First Token (ms) │")
    assert run.result.settings.endpoint == "http://127.0.0.1:18431"


def test_aiperf_aggregate_alone_is_aggregate_only() -> None:
    run = _one(FIXTURES / "aiperf" / "run1" / "profile_export_aiperf.json")
    level = run.result.levels[0]
    assert run.aggregate_only and level.tpot_ms.p50 == pytest.approx(3.0074782380952376)
    assert level.req_s == pytest.approx(17.520203585922)


def test_guidellm_file_gives_one_run_per_benchmark_with_its_itl_as_tpot() -> None:
    path = FIXTURES / "guidellm" / "benchmarks.json"
    report = json.loads(path.read_text())
    runs = read_runs(path, NOW)
    assert [run.provenance.part for run in runs] == [0, 1]
    assert [run.result.levels[0].concurrency for run in runs] == [1, 4]
    for run, benchmark in zip(runs, report["benchmarks"], strict=True):
        metrics, level = benchmark["metrics"], run.result.levels[0]
        assert not run.aggregate_only and level.completed == metrics["request_totals"]["successful"]
        assert level.ttft_ms.mean == pytest.approx(metrics["time_to_first_token_ms"]["successful"]["mean"])
        # guidellm's TPOT includes the first token: vLLM's TPOT is guidellm's inter-token latency
        assert level.tpot_ms.mean == pytest.approx(metrics["inter_token_latency_ms"]["successful"]["mean"])
        assert level.tpot_ms.mean != pytest.approx(metrics["time_per_output_token_ms"]["successful"]["mean"])
        assert level.e2e_ms.mean == pytest.approx(1000 * metrics["request_latency"]["successful"]["mean"])
    assert runs[0].provenance.tool_version == "0.8.1"


def test_guidellm_yaml_reads_as_its_json() -> None:
    from_json = read_runs(FIXTURES / "guidellm" / "benchmarks.json", NOW)
    from_yaml = read_runs(FIXTURES / "guidellm" / "benchmarks.yaml", NOW)
    assert [r.result.levels for r in from_yaml] == [r.result.levels for r in from_json]


def test_sglang_jsonl_gives_one_aggregate_run_per_line_as_printed() -> None:
    runs = read_runs(FIXTURES / "sglang" / "sglang_runs.jsonl", NOW)
    assert [run.result.levels[0].concurrency for run in runs] == [1, 4]
    for run, console in zip(runs, ("console_c1.txt", "console_c4.txt"), strict=True):
        level, printed = run.result.levels[0], FIXTURES / "sglang" / console
        assert run.aggregate_only
        assert round(level.ttft_ms.p50 or 0, 2) == _printed(printed, "Median TTFT (ms):")
        assert round(level.tpot_ms.p99 or 0, 2) == _printed(printed, "P99 TPOT (ms):")
        assert round(level.e2e_ms.mean or 0, 2) == _printed(printed, "Mean E2E Latency (ms):")
        assert round(level.req_s or 0, 2) == _printed(printed, "Request throughput (req/s):")
        assert run.result.settings.deployment.engine == "sglang"  # backend sglang-oai names the engine


@pytest.mark.parametrize(
    ("path", "format_id"),
    [
        ("vllm/vllm_detailed.json", "vllm"),
        ("vllm/vllm_aggregate.json", "vllm"),
        ("sglang/sglang_runs.jsonl", "sglang"),
        ("aiperf/run1", "aiperf"),
        ("aiperf/run1/profile_export.jsonl", "aiperf"),
        ("guidellm/benchmarks.json", "guidellm"),
        ("guidellm/benchmarks.yaml", "guidellm"),
    ],
)
def test_each_file_is_detected_as_its_format(path: str, format_id: str) -> None:
    assert importer_for(FIXTURES / path).format_id == format_id
    assert [i.format_id for i in IMPORTERS if i.detect(FIXTURES / path)] == [format_id]


def test_a_file_of_no_format_is_refused_saying_what_each_format_expects(tmp_path: Path) -> None:
    other = tmp_path / "notes.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(ImportFormatError) as refused:
        read_runs(other, NOW)
    message = str(refused.value)
    assert "notes.json" in message
    for importer in IMPORTERS:
        assert importer.expected in message
    assert format_choices()[0] == "auto" and set(format_choices()[1:]) == {i.format_id for i in IMPORTERS}


def test_a_named_format_that_does_not_fit_is_refused_not_crashed() -> None:
    with pytest.raises(ImportFormatError, match="vllm"):
        read_runs(FIXTURES / "guidellm" / "benchmarks.json", NOW, "vllm")


def test_truncated_file_is_refused_naming_where() -> None:
    with pytest.raises(ImportFormatError, match="cut short"):
        read_runs(FIXTURES / "edges" / "truncated_vllm.json", NOW)


def test_a_unit_in_seconds_is_converted_to_ms() -> None:
    original = _one(FIXTURES / "aiperf" / "run1" / "profile_export_aiperf.json").result.levels[0]
    seconds = _one(FIXTURES / "edges" / "aiperf_seconds.json").result.levels[0]
    assert seconds.ttft_ms.p99 == pytest.approx(original.ttft_ms.p99)
    assert seconds.e2e_ms.mean == pytest.approx(original.e2e_ms.mean)
    assert seconds.duration_s == pytest.approx(original.duration_s)


def test_an_unknown_unit_is_refused_naming_it() -> None:
    with pytest.raises(ImportFormatError, match="minutes"):
        read_runs(FIXTURES / "edges" / "aiperf_unknown_unit.json", NOW)


def test_an_empty_benchmark_list_is_refused() -> None:
    with pytest.raises(ImportFormatError, match="no benchmarks"):
        read_runs(FIXTURES / "edges" / "guidellm_empty.json", NOW)


def test_vllm_failed_requests_are_counted_as_vllm_counts_them() -> None:
    console = FIXTURES / "vllm" / "vllm_errors.console.txt"
    level = _one(FIXTURES / "vllm" / "vllm_errors.json").result.levels[0]
    assert level.completed == _printed(console, "Successful requests:") == 16
    assert level.failed == _printed(console, "Failed requests:") == 4
    assert round(level.ttft_ms.mean or 0, 2) == _printed(console, "Mean TTFT (ms):")  # over the successful ones


def test_guidellm_errored_requests_are_failed_samples() -> None:
    run = _one(FIXTURES / "guidellm" / "benchmarks_errors.json")
    level = run.result.levels[0]
    assert (level.completed, level.failed) == (16, 4) and not run.aggregate_only
    assert all("500" in (s.error or "") for s in run.result.samples if not s.ok)


def test_aiperf_errors_are_counted_in_the_profiling_phase_only_by_their_status() -> None:
    folder = FIXTURES / "aiperf" / "errors"
    aggregate = json.loads((folder / "profile_export_aiperf.json").read_text())
    run = _one(folder)
    level = run.result.levels[0]
    assert level.completed == aggregate["request_count"]["avg"] == 7
    assert level.failed == aggregate["error_request_count"]["avg"] == 13  # the warm-up's error is not counted
    assert level.errors == {"not_found": 13}
    alone = _one(folder / "profile_export_aiperf.json").result.levels[0]
    assert (alone.completed, alone.failed) == (7, 13)


def test_vllm_appended_results_are_one_run_per_line() -> None:
    runs = read_runs(FIXTURES / "edges" / "vllm_appended.json", NOW)
    assert [(r.provenance.part, r.result.levels[0].concurrency) for r in runs] == [(0, 8), (1, 16)]
    assert runs[1].result.settings.label == "second"


def test_a_run_without_a_label_is_named_by_its_tool_file_and_load() -> None:
    runs = read_runs(FIXTURES / "guidellm" / "benchmarks.json", NOW)
    assert [r.result.settings.label for r in runs] == [
        "guidellm: benchmarks.json · concurrency 1",
        "guidellm: benchmarks.json · concurrency 4",
    ]
    assert _one(FIXTURES / "vllm" / "vllm_aggregate.json").result.settings.label.endswith("· 20 req/s")


def test_guidellm_with_only_a_sample_of_its_requests_is_aggregate_only_with_its_own_percentiles(
    tmp_path: Path,
) -> None:
    report = json.loads((FIXTURES / "guidellm" / "benchmarks.json").read_text())
    benchmark = report["benchmarks"][1]
    benchmark["requests"]["successful"] = benchmark["requests"]["successful"][:5]  # as --sample-size 5 keeps them
    sampled = tmp_path / "sampled.json"
    sampled.write_text(json.dumps(report))
    runs = read_runs(sampled, NOW)
    assert [r.aggregate_only for r in runs] == [False, True]
    level, given = runs[1].result.levels[0], benchmark["metrics"]
    assert level.ttft_ms.p50 == given["time_to_first_token_ms"]["successful"]["percentiles"]["p50"]
    assert level.tpot_ms.p90 == given["inter_token_latency_ms"]["successful"]["percentiles"]["p90"]
    assert level.completed == given["request_totals"]["successful"] == 12
    assert level.itl_ms.p50 is None  # guidellm gives no per-chunk gaps: not invented
