"""The public fit set read as the engines ran it: layouts and loads mended where the source's columns disagree."""

from collections.abc import Sequence

from catalog.models import find_model
from perf.fitset import REPEATED, UNKNOWN_RANKS, Point, load_points, published_points


def _by_id() -> dict[str, Point]:
    points, _ = load_points()
    return {p.row_id: p for p in points}


def test_a_squared_expert_parallel_row_reads_as_its_twin_on_eight_gpus_and_counts_once() -> None:
    """The 2026-04-06 export writes tp8/ep8 as tp_size 64; the 2026-03-25 file has the same run on 8 GPUs."""
    points, left_out = load_points()
    twin = "2026_03_25_deepseek_r1_b200_sxm_sglang_fp4_agg_1024x1024_c8_tp8_0_ep8_0_248"
    squared = "2026_04_06_deepseek_r1_b200_sxm_sglang_fp4_agg_1024x1024_c8_tp8_ep8_1012"
    assert not {twin, squared} <= {p.row_id for p in points}, "one measurement, one point"
    kept = [
        p
        for p in points
        if (p.gpu, p.engine, p.quant, p.input_tokens, p.output_tokens, p.concurrency)
        == ("b200", "sglang", "nvfp4", 1024, 1024, 8)
        and p.engine_version == "0.5.9"
        and p.tpot_ms == 9.20466211716624  # the run's TPOT, as all three files print it
        and find_model(p.model).architecture_key == find_model("deepseek-r1").architecture_key
    ]
    assert len(kept) == 1, [p.row_id for p in kept]
    assert kept[0].shape.gpus == 8 and kept[0].shape.expert_parallel
    wide = [p for p in points if p.model == "deepseek-r1" and p.gpu == "b200" and p.shape.gpus > 8]
    assert not wide, "no DeepSeek-R1 run on B200s spans more than a node"
    assert dict(left_out)[REPEATED] > 200


def test_an_attention_dp_row_runs_at_the_benchmark_concurrency_not_the_per_rank_batch() -> None:
    row = _by_id()["2026_03_25_deepseek_r1_h200_sxm_trtllm_fp8_agg_1024x8192_c256_tp8_0_ep8_0_1238"]
    assert row.concurrency == 256  # batch_size 32 on each of 8 ranks
    assert row.shape.gpus == 8 and row.shape.attention_data_parallel and row.shape.expert_parallel


def test_widths_that_cannot_split_attention_run_attention_data_parallel() -> None:
    """DeepSeek's 128 attention heads do not split 36 ways: 36 GB200s ran attention DP with experts over all."""
    row = _by_id()["2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_1024x1024_c16_tp36_ep1_12"]
    assert row.shape.gpus == 36 and row.shape.attention_data_parallel and row.shape.expert_parallel


def test_an_older_row_whose_concurrency_is_tp_times_its_batch_ran_attention_dp_and_others_are_left_out() -> None:
    row = _by_id()["nvidia_deepseek_r1_nvfp4_nvidia_deepseek_r1_nvfp4_b200_sxm_trtllm_agg_4000x1000_c224_tp4_epnone_1"]
    assert row.concurrency == 224 and row.shape.gpus == 4 and row.shape.attention_data_parallel
    _, left_out = load_points()
    assert 0 < dict(left_out)[UNKNOWN_RANKS] < 20


def _repeats(points: Sequence[Point], digits: int) -> list[str]:
    """Rows repeating an earlier one's configuration and figures (to `digits` digits; models by architecture)."""
    seen: dict[tuple[object, ...], str] = {}
    out = []
    for p in points:
        figures = tuple(f"{v:.{digits}g}" if v is not None else "" for v in (p.tpot_ms, p.ttft_ms, p.output_tok_s))
        key = (p.publisher, p.engine, p.engine_version, p.gpu, p.shape, p.quant, p.input_tokens, p.output_tokens)
        key += (p.concurrency, p.load, find_model(p.model).architecture_key, figures)
        if key in seen:
            out.append(f"{p.row_id} repeats {seen[key]}")
        seen.setdefault(key, p.row_id)
    return out


def test_a_measurement_repeated_under_a_twin_model_or_with_another_last_digit_counts_once() -> None:
    """The source prints one DeepSeek-R1 run as DeepSeek-V3 (`dsr1_...cfg81`) and as DeepSeek-R1 (2026-03-25)."""
    points, _ = load_points()
    as_v3 = "dsr1_h200_sglang_fp8_agg_1024x8192_c16_cfg81"
    as_r1 = "2026_03_25_deepseek_r1_h200_sxm_sglang_fp8_agg_1024x8192_c16_tp8_0_ep1_0_296"
    assert len([p for p in points if p.row_id in (as_v3, as_r1)]) == 1, "one run, fitted and validated once"
    assert _repeats(points, 12) == []


def test_a_published_table_read_twice_counts_once() -> None:
    """The reference lines' TensorRT-LLM 0.17 maxima were read again from the release's own page: kept once."""
    assert _repeats(published_points(), 4) == []
