"""What one GPU offers a step: memory bandwidth, the tensor rate of the precision a format computes in, and links."""

import tomllib
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from catalog import Gpu
from perf.errors import NoEstimateError

MODEL_TOML = Path(__file__).parent / "data" / "model.toml"
UNMODELLED_KINDS = ("npu",)  # GPU kinds the step model is fitted on none of (npu_measurements.csv lists, not fits)

ComputeDtype = Literal["fp4", "fp8", "int8", "half"]


@cache
def model_facts() -> dict[str, dict[str, object]]:
    """perf/data/model.toml, as read."""
    with MODEL_TOML.open("rb") as handle:
        return tomllib.load(handle)


def _fact(section: str, key: str) -> float:
    value = model_facts()[section][key]
    assert isinstance(value, int | float)
    return float(value)


class Rates(BaseModel):
    """One GPU's figures for one format: bytes/s, FLOP/s of its GEMMs and of attention, link bytes/s per direction."""

    model_config = ConfigDict(frozen=True)

    mem_bytes_s: float
    gemm_flop_s: float
    attn_flop_s: float
    compute_dtype: ComputeDtype
    link_bytes_s: float  # inside the NVLink / Infinity Fabric domain (or the PCIe slot)
    nvlink_domain: int


def compute_dtype(quant: str, gpu: Gpu) -> ComputeDtype:
    """The precision a format's matrix multiplies run in on this GPU.

    FP8 computes in FP8 only where the GPU has FP8 tensor cores (sm89+, MI300); NVFP4 and MXFP4 in FP4 only on
    Blackwell-class parts; INT8 W8A8 on Turing and later. Elsewhere, and for every weight-only format (AWQ, GPTQ,
    GGUF, NF4), the weights are read at their own width and multiplied in 16-bit.
    """
    if quant == "fp8" and gpu.native_fp8 and gpu.fp8_dense_tflops:
        return "fp8"
    if quant in {"nvfp4", "mxfp4"} and gpu.native_fp4 and gpu.fp4_dense_tflops:
        return "fp4"
    if (quant == "w8a8-int8" and (gpu.sm or 0) >= _fact("compute", "int8_min_sm")) or (
        quant == "w8a8-int8" and gpu.vendor == "AMD"
    ):
        return "int8"
    return "half"


def modelled(gpu: Gpu) -> bool:
    """Whether the step-time model may speak for this part (never for an NPU such as Huawei Ascend).

    None of the published measurements it was fitted on ran on an NPU's kernels, runtime or engine builds
    (vllm-ascend, LMDeploy's dlinfer), so an estimate there would rest on nothing.
    """
    return gpu.kind not in UNMODELLED_KINDS


def rates(gpu: Gpu, quant: str) -> Rates:
    """The figures a step of `quant` weights sees on `gpu` (raises NoEstimateError without a tensor rate or model)."""
    if not modelled(gpu):
        raise NoEstimateError(
            f"gpu: no estimate for {gpu.name}: the step-time model was fitted on no {gpu.vendor} NPU (the few "
            "measurements published on one are listed as published, never fitted)"
        )
    half = gpu.half_precision_tflops
    if not half:
        raise NoEstimateError(
            f"gpu: no estimate for {gpu.name}: the catalog has no 16-bit tensor rate for it (CPU hosts have none)"
        )
    dtype = compute_dtype(quant, gpu)
    tflops = {
        "fp8": gpu.fp8_dense_tflops,
        "fp4": gpu.fp4_dense_tflops,
        "int8": half * _fact("compute", "int8_vs_half"),
        "half": half,
    }[dtype] or half
    link_gb_s = (gpu.interconnect_gb_s or 0.0) / 2  # the catalog quotes bidirectional bandwidth
    return Rates(
        mem_bytes_s=gpu.mem_bw_tb_s * 1e12,
        gemm_flop_s=tflops * 1e12,
        attn_flop_s=half * 1e12,
        compute_dtype=dtype,
        link_bytes_s=link_gb_s * 1e9,
        nvlink_domain=gpu.nvlink_domain,
    )


def inter_node_bytes_s() -> float:
    """Per-GPU, per-direction bandwidth between nodes."""
    return _fact("network", "inter_node_gb_s") * 1e9
