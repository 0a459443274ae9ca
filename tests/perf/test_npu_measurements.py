"""Published measurements on Huawei Ascend NPUs: rows that hold together, shown where there is no estimate."""

import pytest

from catalog import find_gpu
from perf.cli import main as perf_main
from perf.npu_measurements import NpuMeasurement, load_npu_measurements, measured_lines, measured_on


def test_every_row_is_a_catalog_npu_model_and_format_with_a_source_that_allows_a_copy() -> None:
    rows = load_npu_measurements()
    assert len(rows) >= 20
    assert {find_gpu(m.gpu).kind for m in rows} == {"npu"}
    assert {m.gpu for m in rows} == {"ascend-910b-64gb", "ascend-910c-128gb"}
    assert all(m.licence == "Apache-2.0" and m.source.startswith("sgl-project/sglang ") for m in rows)
    assert len({m.id for m in rows}) == len(rows)


@pytest.mark.parametrize("row", load_npu_measurements(), ids=lambda m: m.id)
def test_each_rows_figures_agree_with_each_other(row: NpuMeasurement) -> None:
    """Throughput is completed requests x output tokens (a swapped or shifted line of a result block fails here)."""
    from_requests = row.req_s * row.output_tokens
    assert abs(from_requests - row.output_tok_s) <= 0.005 * row.output_tokens + 0.02 * row.output_tok_s
    assert row.ttft_p50_ms <= row.ttft_p99_ms and row.ttft_mean_ms <= row.ttft_p99_ms
    assert row.deployment in ("aggregated", "disaggregated")


def test_the_models_own_rows_come_first() -> None:
    found = measured_on("ascend-910c-128gb", "qwen3-32b")
    models = [m.model for m in found]
    assert models[0] == "qwen3-32b" and "deepseek-r1" in models
    assert models.index("deepseek-r1") > max(i for i, m in enumerate(models) if m == "qwen3-32b")


def test_the_command_line_lists_the_models_measurements_where_it_has_no_estimate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert perf_main(["--gpu", "910C", "--gpus", "2", "--model", "qwen3-32b", "--engine", "vllm"]) == 2
    err = capsys.readouterr().err
    assert "no estimate for Ascend 910C 128GB" in err
    assert "published measurements on Ascend 910C 128GB (measurements, not estimates" in err
    line = next(x for x in err.splitlines() if "a3-q32-ht1" in x)
    assert "2 NPUs" in line and "3,500/1,500 tokens at concurrency 78" in line and "(708 per NPU)" in line
    assert "EAGLE3" in line  # the speculative decoding it ran with is part of the figure


def test_a_model_without_measurements_on_the_npu_says_so_and_a_gpu_says_nothing() -> None:
    assert measured_lines("910B", "qwen2.5-7b")[1] == "  none of Qwen2.5-7B-Instruct; 4 of other models"
    assert measured_lines("h100", "qwen3-32b") == []
