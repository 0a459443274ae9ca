"""One copy over several nodes (wide expert parallelism): estimated as laid out, and checked against published pools."""

import json

import pytest

from perf.cli import main
from perf.disagg_scale import LARGE_SCALE, scale_points
from tests.support import ROOT

DEEPSEEK_H100 = ("--gpu", "H100", "--model", "deepseek-v3", "--engine", "sglang")
LOAD = ("--input-tokens", "2000", "--output-tokens", "200", "--concurrency", "256")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_copy_over_four_nodes_is_estimated_as_laid_out(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, *DEEPSEEK_H100, *LOAD, "--dp", "32", "--ep", "32", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["layout"] | {"gpus": 0} == data["layout"] | {"tp": 1, "pp": 1, "ep": 32, "dp": 32, "gpus": 0}
    assert data["layout"]["gpus"] == 32
    assert data["quant"] == "fp8"  # the checkpoint's own format: one node's pick (AWQ, to fit 8 GPUs) would not do
    assert any("4 nodes of 8 GPUs" in note for note in data["notes"])
    assert not any("does not fit in one node" in note for note in data["notes"])  # the advisor's one-node layout
    assert data["levels"][0]["output_tok_s"] > 0


def test_a_mixture_of_experts_over_several_nodes_takes_wide_expert_parallelism_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(capsys, *DEEPSEEK_H100, *LOAD, "--gpus", "32", "--json")
    assert code == 0, err
    layout = json.loads(out)["layout"]
    assert (layout["gpus"], layout["tp"], layout["dp"], layout["ep"]) == (32, 1, 32, 32)


def test_the_gpus_the_advisor_spreads_a_model_over_are_estimated_in_its_layout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The advisor serves DeepSeek-R1 on A800 40GB over 3 nodes of 8 (tensor parallel 8, 3 pipeline stages); wide
    # expert parallelism would hold every attention weight on each of the 24 GPUs and not fit.
    r1 = ("--gpu", "A800", "--model", "deepseek-r1", "--engine", "vllm", *LOAD, "--json")
    per_node, total = (_run(capsys, *r1, "--gpus", gpus) for gpus in ("8", "24"))
    assert per_node[0] == 0 and total[0] == 0, total[2]
    by_node, by_total = json.loads(per_node[1]), json.loads(total[1])
    assert by_total["layout"] == by_node["layout"] and by_total["layout"]["gpus"] == 24
    assert (by_total["layout"]["tp"], by_total["layout"]["pp"]) == (8, 3)
    assert by_total["levels"] == by_node["levels"]


def test_a_dense_model_wider_than_a_node_without_its_layout_is_refused_by_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run(capsys, "--gpu", "H100", "--model", "llama-3.1-70b", "--engine", "vllm", *LOAD, "--gpus", "16")
    assert code == 2
    assert "gpus: one copy of 16 GPUs spans nodes of 8" in err and "--tp, --pp and --dp" in err


def test_two_pools_of_several_nodes_each_take_wide_expert_parallelism(capsys: pytest.CaptureFixture[str]) -> None:
    pools = ("--topology", "disagg", "--prefill-gpus", "32", "--decode-gpus", "64", "--total-gpus", "96")
    slo = ("--ttft-p50-ms", "3000", "--ttft-p99-ms", "10000", "--tpot-p50-ms", "100")
    code, out, err = _run(capsys, *DEEPSEEK_H100, *LOAD, *pools, *slo, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["prefill"]["gpus_per_replica"] == 32 and data["decode"]["gpus_per_replica"] == 64
    assert data["output_tok_s_per_gpu"] > 0 and data["kv_transfer_ms"] > 0


def test_a_dense_model_is_not_spread_over_nodes_by_expert_parallelism(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--gpu", "H100", "--model", "llama-3.1-70b", "--engine", "vllm", *LOAD)
    code, _, err = _run(capsys, *args, "--topology", "disagg", "--prefill-gpus", "16", "--decode-gpus", "8")
    assert code == 2 and "spans nodes of 8" in err


def test_every_published_large_scale_pool_is_estimated_within_a_factor_of_two() -> None:
    """LMSYS's SGLang pools on H100 and DeepSeek's production pools on H800: held out, nothing fitted on them."""
    points = scale_points()
    assert {p.row_id for p in points} == {
        "lmsys-prefill-1k",
        "lmsys-prefill-2k",
        "lmsys-prefill-4k",
        "lmsys-decode-2k",
        "deepseek-production-prefill",
        "deepseek-production-decode",
    }
    assert {p.gpus for p in points} == {32, 72, 144}
    assert all(0.5 <= p.ratio <= 2.0 for p in points), [(p.row_id, round(p.ratio, 2)) for p in points]


def test_the_doc_reports_the_large_scale_check_of_the_current_model() -> None:
    """docs/performance-model.md's large-scale table is today's: rerun `make perf-model` when this fails."""
    doc = (ROOT / "docs" / "performance-model.md").read_text(encoding="utf-8")
    for p in scale_points():
        assert f"| {p.row_id} ({p.role}) |" in doc and f"| {p.ratio:.2f}x |" in doc
    assert LARGE_SCALE.with_suffix(".md").exists()


def test_both_topologies_serve_the_one_pool_copys_checkpoint(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-V3 in FP8 needs more than a node of H100s: no pool may shrink to 8 GPUs by switching to AWQ."""
    args = ("--gpus", "32", "--topology", "best", "--total-gpus", "96", "--input-tokens", "4000")
    slo = ("--output-tokens", "500", "--tpot-p50-ms", "50", "--ttft-p50-ms", "2000", "--ttft-p99-ms", "8000")
    code, out, err = _run(capsys, *DEEPSEEK_H100, *args, *slo, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["quant"] == "fp8"
    pools = [data, data["alternative"]]
    disagg = next(p for p in pools if p["topology"] == "disagg")
    assert disagg["prefill"]["gpus_per_replica"] >= 16 and disagg["decode"]["gpus_per_replica"] >= 16
