"""The GPU catalog: every row sourced and complete, new parts findable, interconnect and gates as a user meets them."""

import csv
import json

import pytest

from catalog import Gpu, find_gpu, load_gpus
from catalog.engines import gpu_platform, load_engines
from catalog.gpus import GPU_CSV
from catalog.quantization import load_quant_methods
from selector.cli import main
from selector.gates import gate
from selector.rules import load_rules
from tco.prices import snapshot_book

GPUS = load_gpus()
PCIE_LANES = 16
PCIE_GT_S = {"PCIe Gen3": 8, "PCIe Gen4": 16, "PCIe Gen5": 32}  # transfer rate per lane (PCI-SIG)
PCIE_ENCODING = 128 / 130  # Gen3 and later


def test_the_data_file_and_the_model_have_the_same_columns() -> None:
    with GPU_CSV.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert set(header) == set(Gpu.model_fields)


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.id)
def test_every_row_names_its_sources(gpu: Gpu) -> None:
    assert gpu.spec_source.strip(), "memory, bandwidth and rates need a source"
    assert gpu.interconnect_source.strip(), "the link and its domain need a source"
    if snapshot_book().priced(gpu.id):
        assert not gpu.price_note.strip(), "a priced GPU's notes live with its tiers in gpu_prices.csv"
    else:
        assert gpu.price_note.strip(), "a row without a price says why"


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.id)
def test_every_row_fills_the_interconnect_columns(gpu: Gpu) -> None:
    if gpu.interconnect == "none":
        assert gpu.interconnect_gb_s is None and gpu.nvlink_domain == 1
    else:
        assert gpu.interconnect_gb_s is not None and gpu.interconnect_gb_s > 0
    if gpu.interconnect.startswith("PCIe"):
        assert gpu.nvlink_domain == 1, "a PCIe card shares no NVLink domain"
    if gpu.interconnect.startswith(("NVLink", "Infinity Fabric")):
        assert gpu.nvlink_domain >= 2
    if gpu.kind in {"apple", "cpu"}:
        assert gpu.interconnect == "none"


@pytest.mark.parametrize("gpu", [g for g in GPUS if g.interconnect in PCIE_GT_S], ids=lambda g: g.id)
def test_pcie_slots_are_counted_in_both_directions(gpu: Gpu) -> None:
    one_way_gb_s = PCIE_LANES * PCIE_GT_S[gpu.interconnect] * PCIE_ENCODING / 8
    assert gpu.interconnect_gb_s == pytest.approx(2 * one_way_gb_s, rel=0.05)
    assert "bidirectional" in gpu.interconnect_source


def test_links_rank_as_the_hardware_does() -> None:
    """Faster generations move more; NVLink beats any PCIe slot; an NVL72 rack is one domain, an HGX board eight."""
    fastest_pcie = max(g.interconnect_gb_s or 0 for g in GPUS if g.interconnect.startswith("PCIe"))
    assert all((g.interconnect_gb_s or 0) > fastest_pcie for g in GPUS if g.interconnect.startswith("NVLink"))
    v100, a100, h100, b300 = (find_gpu(name) for name in ("V100", "A100", "H100", "B300"))
    assert [g.interconnect for g in (v100, a100, h100, b300)] == ["NVLink 2", "NVLink 3", "NVLink 4", "NVLink 5"]
    speeds = [g.interconnect_gb_s or 0 for g in (v100, a100, h100, b300)]
    assert speeds == sorted(speeds) and len(set(speeds)) == len(speeds)
    assert find_gpu("GB200").nvlink_domain > find_gpu("B300").nvlink_domain == find_gpu("H100").nvlink_domain
    assert (find_gpu("MI355X").interconnect_gb_s or 0) > (find_gpu("MI325X").interconnect_gb_s or 0)
    assert (find_gpu("H800").interconnect_gb_s or 0) < (find_gpu("H100").interconnect_gb_s or 0), "export cap"


NEW_GPUS = [
    ("B300", "b300"),
    ("HGX B300", "b300"),
    ("GB200", "gb200"),
    ("GB200 NVL72", "gb200"),
    ("RTX PRO 6000", "rtx-pro-6000-96gb"),
    ("NVIDIA RTX PRO 6000 Blackwell", "rtx-pro-6000-96gb"),
    ("L20", "l20-48gb"),
    ("MI325X", "mi325x-256gb"),
    ("AMD Instinct MI355X", "mi355x-288gb"),
    ("T4", "t4-16gb"),
    ("Tesla T4", "t4-16gb"),
    ("V100", "v100-32gb-sxm"),
    ("cpu", "cpu-2x-epyc-genoa-768gb"),
    ("CPU only", "cpu-2x-epyc-genoa-768gb"),
    ("RTX 4090D", "rtx-4090d-24gb"),
    ("NVIDIA GeForce RTX 4090 D", "rtx-4090d-24gb"),
    ("4090D", "rtx-4090d-24gb"),
    ("910B", "ascend-910b-64gb"),
    ("Huawei Ascend 910B", "ascend-910b-64gb"),
    ("Ascend 910C", "ascend-910c-128gb"),
]


@pytest.mark.parametrize(("query", "expected"), NEW_GPUS)
def test_new_parts_are_found_by_their_common_names(query: str, expected: str) -> None:
    assert find_gpu(query).id == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("B200", "b200"),
        ("H100", "h100-80gb-sxm"),
        ("L4", "l4-24gb"),
        ("H20", "h20-96gb"),
        ("MI300X", "mi300x-192gb"),
        ("RTX 4090", "rtx-4090-24gb"),
        ("4090", "rtx-4090-24gb"),
    ],
)
def test_the_older_names_still_reach_the_same_rows(query: str, expected: str) -> None:
    """Shared links carry GPU ids; the new rows must not steal a name that already meant another part."""
    assert find_gpu(query).id == expected


def test_blackwell_parts_run_fp4_and_older_parts_do_not() -> None:
    for name in ("B300", "GB200", "RTX PRO 6000"):
        assert gate("nvfp4", find_gpu(name)).allowed, name
    for name in ("L20", "T4", "V100"):
        assert not gate("nvfp4", find_gpu(name)).allowed, name
    assert find_gpu("MI355X").fp4_dense_tflops and not find_gpu("MI325X").fp4_dense_tflops
    assert gate("fp8", find_gpu("L20")).rule_id == "gate.fp8_native"


def test_pre_ampere_cards_have_no_bf16_or_fp8_tensor_rate() -> None:
    for name in ("T4", "V100"):
        gpu = find_gpu(name)
        assert (gpu.bf16_dense_tflops, gpu.fp8_dense_tflops, gpu.fp4_dense_tflops) == (None, None, None)
        assert "FP16" in gpu.spec_notes, "the 16-bit rate these cards do have is named"
        assert not (gpu.native_fp8 or gpu.native_fp4 or gpu.marlin_kernels)
        assert (gpu.sm or 0) < load_rules().gates.marlin_min_sm


@pytest.mark.parametrize("name", ["V100", "T4"])
def test_fp8_is_refused_on_pre_ampere_cards_with_the_fp8_gate(name: str) -> None:
    checked = gate("fp8", find_gpu(name))
    assert not checked.allowed
    assert checked.rule_id == "gate.fp8_missing"
    assert "sm89" in checked.reason and "sm80" in checked.reason and find_gpu(name).name in checked.reason


def test_awq_on_a_t4_runs_without_marlin_and_says_so() -> None:
    checked = gate("awq", find_gpu("T4"))
    assert (checked.allowed, checked.degraded, checked.rule_id) == (True, True, "gate.marlin_missing")
    assert "Marlin" in checked.reason and "sm80" in checked.reason


def test_awq_on_a_v100_is_refused_because_volta_has_no_awq_kernels() -> None:
    """vLLM's hardware table: AWQ needs Turing (sm75); Volta gets neither AWQ nor Marlin."""
    checked = gate("awq", find_gpu("V100"))
    assert not checked.allowed
    assert "sm70" in checked.reason


def test_the_cpu_host_is_its_own_platform_and_runs_only_cpu_engines() -> None:
    host = find_gpu("cpu")
    assert host.kind == "cpu" and host.vendor == "AMD"
    assert gpu_platform(host) == "cpu", "an EPYC host is not a ROCm GPU"
    running = {e.id for e in load_engines() if e.runs_on_gpu(host)}
    assert running == {e.id for e in load_engines() if "cpu" in e.runs_on}
    assert "llama.cpp" in running and "ollama" in running
    assert "tensorrt-llm" not in running


def test_the_cpu_host_serves_gguf_and_16_bit_weights_only() -> None:
    host = find_gpu("cpu")
    allowed = {m.id for m in load_quant_methods() if gate(m.id, host).allowed}
    assert "gguf-q4_k_m" in allowed
    assert allowed <= {"gguf-q4_k_m", "bf16"}
    assert gate("awq", host).rule_id == "gate.no_kernels"


def test_the_cpu_host_is_described_by_its_memory_not_by_tensor_rates() -> None:
    host = find_gpu("cpu")
    assert host.bf16_dense_tflops is None and host.fp8_dense_tflops is None
    assert host.memory_gb > max(g.memory_gb for g in GPUS if g.kind in {"datacenter", "consumer"})
    assert host.mem_bw_tb_s < find_gpu("H100").mem_bw_tb_s, "DDR5 is slower than HBM"
    assert snapshot_book().priced(host.id), "a rentable host with a public hourly price"


NEW_IDS = sorted({expected for _, expected in NEW_GPUS})


@pytest.mark.parametrize("gpu_id", NEW_IDS)
def test_every_new_part_gets_advice_on_the_command_line(gpu_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--gpu", gpu_id, "--model", "qwen2.5-7b", "--json"]) == 0
    advice = json.loads(capsys.readouterr().out)
    assert advice["gpu"] == gpu_id
    engine = next(e for e in load_engines() if e.id == advice["engine"])
    assert engine.runs_on_gpu(find_gpu(gpu_id)), "the advice never names an engine the part cannot run"
    assert gate(advice["quantization"], find_gpu(gpu_id)).allowed
    assert main(["--gpu", gpu_id, "--model", "qwen2.5-7b"]) == 0
    assert find_gpu(gpu_id).name in capsys.readouterr().out


def test_an_edge_deployment_on_the_cpu_host_is_llama_cpp_with_gguf(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--gpu", "cpu", "--deploy", "edge", "--model", "qwen2.5-7b", "--json"]) == 0
    advice = json.loads(capsys.readouterr().out)
    assert (advice["engine"], advice["quantization"]) == ("llama.cpp", "gguf-q4_k_m")
