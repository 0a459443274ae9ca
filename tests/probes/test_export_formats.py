"""python -m probes export: a stored run as llm-d Benchmark Report v0.2.1 (schema-valid), vLLM result JSON and CSV."""

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
import yaml

from db import get_run, make_engine
from fakeserver import Behaviour, serve_in_thread
from probes.__main__ import main
from probes.export_cli import EXIT_OK, EXIT_USAGE
from probes.importers.base import ImportFormatError
from probes.importers.llmd_br import IMPORTER
from probes.models import RunResult

SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "schemas" / "llm-d-benchmark"
SCHEMA = json.loads((SCHEMAS / "br_v0_2_1_json_schema.json").read_text())
NOW = datetime(2026, 12, 6, tzinfo=UTC)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def stored_run(database_url: str, tmp_path: Path) -> RunResult:
    """A probe run of two levels against the test server, every third request failing, stored in the database."""
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=6)) as server:
        code, _, err = cli(
            *("--base-url", server.base_url, "--model", "fake:fault=500,fault_every=3"),
            *("--concurrency", "1,2", "--requests", "6", "--max-tokens", "16"),
            *("--gpu", "H100", "--gpu-count", "2", "--deploy-model", "qwen2.5-7b", "--engine", "vllm"),
            *("--quant", "fp8", "--output", str(tmp_path / "run.json")),
        )
    assert code == EXIT_OK, err
    run_id = json.loads((tmp_path / "run.json").read_text())["run_id"]
    result = get_run(make_engine(database_url), run_id)
    assert result is not None and len(result.levels) == 2 and sum(level.failed for level in result.levels) > 0
    return result


def test_benchmark_report_validates_against_the_published_schema_and_imports_back(
    stored_run: RunResult, tmp_path: Path
) -> None:
    path = tmp_path / "report.json"
    code, _, err = cli("export", str(stored_run.run_id), "--format", "llmd-br-0.2.1", "-o", str(path))
    assert code == EXIT_OK, err
    reports = json.loads(path.read_text())
    assert len(reports) == 2  # one report per level (a load stage)
    for report in reports:
        jsonschema.validate(report, SCHEMA)
    first = reports[0]
    engine = first["scenario"]["stack"][0]["standardized"]
    assert engine["accelerator"] == {"model": "h100-80gb-sxm", "count": 2, "parallelism": {}}
    latency = first["results"]["request_performance"]["aggregate"]["latency"]
    assert latency["time_to_first_token"]["units"] == "ms"
    assert latency["time_to_first_token"]["p99"] == stored_run.levels[0].ttft_ms.p99

    (run,) = IMPORTER.parse(path, NOW)
    assert run.aggregate_only and run.provenance.format == "llmd-br" and run.provenance.tool == "llm-serving-dashboard"
    back = run.result
    assert back.settings.deployment.model_dump(exclude={"source"}) == stored_run.settings.deployment.model_dump(
        exclude={"source"}
    )
    assert back.endpoint == stored_run.endpoint
    for mine, theirs in zip(stored_run.levels, back.levels, strict=True):
        assert (theirs.concurrency, theirs.requests, theirs.completed, theirs.failed) == (
            mine.concurrency,
            mine.requests,
            mine.completed,
            mine.failed,
        )
        for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
            given, read = getattr(mine, key), getattr(theirs, key)
            assert (read.mean, read.p50, read.p90, read.p99, read.min, read.max) == pytest.approx(
                (given.mean, given.p50, given.p90, given.p99, given.min, given.max)
            ), key
        assert (theirs.req_s, theirs.output_tok_s, theirs.total_tok_s) == pytest.approx(
            (mine.req_s, mine.output_tok_s, mine.total_tok_s)
        )
        assert (theirs.input_tokens, theirs.output_tokens) == (mine.input_tokens, mine.output_tokens)
        assert theirs.duration_s == pytest.approx(mine.duration_s)


def test_vllm_export_has_vllms_keys_units_and_per_request_arrays(stored_run: RunResult, tmp_path: Path) -> None:
    path = tmp_path / "vllm.jsonl"
    code, _, err = cli("export", str(stored_run.run_id), "--format", "vllm", "-o", str(path))
    assert code == EXIT_OK, err
    results = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(results) == 2  # several levels: one result per line, as --append-result writes them
    level = stored_run.levels[0]
    first = results[0]
    counts = (first["num_prompts"], first["completed"], first["failed"])
    assert counts == (level.requests, level.completed, level.failed)
    assert first["max_concurrency"] == 1 and first["request_rate"] == "inf"
    assert first["median_ttft_ms"] == level.ttft_ms.p50 and first["p99_e2el_ms"] == level.e2e_ms.p99
    samples = sorted((s for s in stored_run.samples if s.level_index == 0), key=lambda s: s.index)
    assert len(first["ttfts"]) == level.requests
    ok = [(t, s) for t, s in zip(first["ttfts"], samples, strict=True) if s.error_kind is None]
    assert ok and all(t == pytest.approx((s.ttft_ms or 0) / 1000) for t, s in ok)  # vLLM keeps ttfts in seconds
    latencies = [(t, s) for t, s in zip(first["latencies"], samples, strict=True) if s.error_kind is None]
    assert all(t == pytest.approx((s.e2e_ms or 0) / 1000) for t, s in latencies)
    assert sum(1 for error in first["errors"] if error) == level.failed


def test_csv_export_writes_levels_and_requests(stored_run: RunResult, tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    code, _, err = cli("export", str(stored_run.run_id), "--format", "csv", "-o", str(path))
    assert code == EXIT_OK, err
    levels = list(csv.DictReader(path.open()))
    assert [row["concurrency"] for row in levels] == ["1", "2"] and levels[0]["run_id"] == stored_run.run_id
    requests = list(csv.DictReader((tmp_path / "run-requests.csv").open()))
    assert len(requests) == sum(level.requests for level in stored_run.levels)


def test_a_run_that_does_not_exist_is_named_and_nothing_is_written(stored_run: RunResult, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    code, _, err = cli("export", str(stored_run.run_id), "no-such-run", "--format", "vllm", "-o", str(path))
    assert code == EXIT_USAGE and "RUN_ID 'no-such-run'" in err and not path.exists()
    code, _, err = cli("export", str(stored_run.run_id), "--format", "parquet", "-o", str(path))
    assert code == EXIT_USAGE and "llmd-br-0.2.1" in err


@pytest.mark.parametrize("name", ["br_v0_2_1_example.yaml", "br_v0_2_example.yaml"])
def test_the_published_example_reports_import_as_given(name: str) -> None:
    path = SCHEMAS / name
    document = yaml.safe_load(path.read_text())
    assert IMPORTER.detect(path)
    (run,) = IMPORTER.parse(path, NOW)
    level = run.result.levels[0]
    given = document["results"]["request_performance"]["aggregate"]
    ttft = given["latency"]["time_to_first_token"]
    assert level.ttft_ms.p99 == pytest.approx(ttft["p99"] * 1000)  # seconds in the file, ms in the run
    assert level.tpot_ms.mean == pytest.approx(given["latency"]["time_per_output_token"]["mean"] * 1000)
    assert level.requests == given["requests"]["total"] and run.aggregate_only
    deployment = run.result.settings.deployment
    assert deployment.model == "qwen3-0.6b" and deployment.gpu_count == 16  # 8 accelerators x 2 replicas
    assert deployment.gpu == "h100-80gb-sxm"  # 'NVIDIA-H100-80GB-HBM3'
    assert deployment.engine is None  # its tool 'llm-d' is no engine of the catalog: left unknown, never guessed
    assert run.provenance.tool == document["scenario"]["load"]["standardized"]["tool"]


def test_a_wrong_time_unit_is_refused_naming_the_field(tmp_path: Path) -> None:
    report = yaml.safe_load((SCHEMAS / "br_v0_2_1_example.yaml").read_text())
    report["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"]["units"] = "tokens/s"
    path = tmp_path / "wrong-unit.json"
    path.write_text(json.dumps(report, default=str))
    with pytest.raises(ImportFormatError, match="time_to_first_token"):
        IMPORTER.parse(path, NOW)
