"""The GPU catalog: memory, bandwidth, tensor rates, architecture gates and interconnect, with sources.

Conventions of catalog/data/gpus.csv:

- Tensor rates are dense (no 2:4 sparsity) in TFLOPS; blank where the part has no such tensor path (BF16 on
  Volta/Turing, FP8 before Ada/Hopper, FP4 before Blackwell/CDNA4, any tensor rate on a CPU).
  ``fp16_dense_tflops`` is filled only where FP16 differs from BF16 (Volta and Turing, which have no BF16 path);
  blank means the same rate as BF16.
- ``interconnect_gb_s`` is the **bidirectional** GPU-to-GPU bandwidth of one GPU in GB/s, as NVIDIA quotes NVLink
  (H100 900, B200 1800): twice the per-direction figure that aiconfigurator's ``intra_node_bw`` and
  llm-analysis's ``intra_node_bandwidth`` list. A PCIe x16 card counts its slot (Gen3 32, Gen4 64, Gen5 128);
  optional two-card bridges are not counted. Blank when there is no link at all (``interconnect = none``).
- ``nvlink_domain`` is how many GPUs share one NVLink / Infinity Fabric domain: 8 on HGX and 8-GPU OAM boards,
  72 in an NVL72 rack, 1 for PCIe-only cards, SoCs and CPU hosts. Tensor parallelism beyond it crosses PCIe or
  the network.
- A ``kind = cpu`` row is a whole CPU host (sockets, DRAM and its bandwidth), served by CPU builds only.
- A ``kind = npu`` row is a neural processing unit outside CUDA and ROCm (Huawei Ascend, ``vendor = Huawei``): it
  runs only the engines whose ``runs_on`` names its platform (``ascend``), and ``compute_capability`` is ``n/a``.
  ``HCCS`` is Ascend's chip-to-chip link; ``nvlink_domain`` counts the NPUs it joins.
- ``devices_per_card`` is how many devices the engines see on one card: blank (1) but for the Ascend 910C, whose
  two dies are two devices of half its memory each. The advisor counts cards; its commands say how to count devices.
- Every row names its sources: ``spec_source`` (memory, bandwidth, rates, TDP), ``interconnect_source`` (link and
  domain, with the convention spelled out). Prices live in ``gpu_prices.csv`` (``catalog/prices.py``);
  ``price_note`` says why a GPU has none there.
"""

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from catalog.errors import GpuLookupError
from catalog.matching import match_names
from catalog.tables import blank_as, load_table, split_list, yes_no

GPU_CSV = Path(__file__).parent / "data" / "gpus.csv"

GpuKind = Literal["datacenter", "consumer", "apple", "cpu", "npu"]
Interconnect = Literal[
    "NVLink 2",
    "NVLink 3",
    "NVLink 4",
    "NVLink 5",
    "Infinity Fabric",
    "HCCS",
    "PCIe Gen3",
    "PCIe Gen4",
    "PCIe Gen5",
    "none",
]
SCALE_UP_LINKS = ("NVLink", "Infinity Fabric", "HCCS")  # links that join more than one GPU into a domain


class Gpu(BaseModel):
    """One catalog row. Rates are dense (no sparsity); None where no public figure was found."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    aliases: tuple[str, ...]
    vendor: str
    arch: str
    compute_capability: str
    kind: GpuKind
    memory_gb: float
    mem_bw_tb_s: float
    bf16_dense_tflops: float | None
    fp8_dense_tflops: float | None
    fp4_dense_tflops: float | None
    fp16_dense_tflops: float | None = None
    native_fp8: bool
    native_fp4: bool
    marlin_kernels: bool
    tdp_w: float | None
    interconnect: Interconnect
    interconnect_gb_s: float | None = Field(description="bidirectional GPU-to-GPU GB/s per GPU; None without a link")
    nvlink_domain: int = Field(
        ge=1, description="GPUs in one NVLink / Infinity Fabric / HCCS domain (1 = PCIe or none)"
    )
    interconnect_source: str
    price_note: str = Field(description="why no price is on record (blank when gpu_prices.csv prices it)")
    spec_source: str
    spec_notes: str
    checked: str = Field(description="when the row's specifications were last written or checked (YYYY-MM-DD)")
    devices_per_card: int = Field(
        default=1, ge=1, description="devices the engines see on one card (2 for the two-die Ascend 910C); blank: 1"
    )

    @field_validator(
        "bf16_dense_tflops",
        "fp8_dense_tflops",
        "fp4_dense_tflops",
        "fp16_dense_tflops",
        "tdp_w",
        "interconnect_gb_s",
        mode="before",
    )
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return blank_as(value, None)

    @field_validator("devices_per_card", mode="before")
    @classmethod
    def _blank_is_one(cls, value: object) -> object:
        return blank_as(value, 1)

    @field_validator("aliases", mode="before")
    @classmethod
    def _split_aliases(cls, value: object) -> object:
        return split_list(value)

    @field_validator("native_fp8", "native_fp4", "marlin_kernels", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        return yes_no(value)

    @model_validator(mode="after")
    def _link_is_consistent(self) -> "Gpu":
        if (self.interconnect == "none") != (self.interconnect_gb_s is None):
            raise ValueError(f"{self.id}: interconnect_gb_s must be blank exactly when interconnect is none")
        if self.nvlink_domain > 1 and not self.interconnect.startswith(SCALE_UP_LINKS):
            raise ValueError(f"{self.id}: a domain of {self.nvlink_domain} GPUs needs NVLink, Infinity Fabric or HCCS")
        return self

    @property
    def sm(self) -> float | None:
        """CUDA compute capability as a number (8.9), or None for non-NVIDIA parts."""
        try:
            return float(self.compute_capability)
        except ValueError:
            return None

    @property
    def half_precision_tflops(self) -> float | None:
        """The dense 16-bit tensor rate serving runs at: BF16, else FP16 (Volta, Turing)."""
        return self.bf16_dense_tflops or self.fp16_dense_tflops


@cache
def load_gpus() -> tuple[Gpu, ...]:
    """Every GPU in the catalog, in file order."""
    return load_table(GPU_CSV, Gpu)


@cache
def _gpus_by_id() -> dict[str, Gpu]:
    return {g.id: g for g in load_gpus()}


@cache
def _gpu_names() -> dict[str, tuple[str, ...]]:
    return {g.id: (g.id, g.name, *g.aliases) for g in load_gpus()}


def find_gpu(name: str) -> Gpu:
    """Look a GPU up by id, name or alias, forgivingly ('A800', 'a800-40gb', 'NVIDIA A800 40GB')."""
    gpus = _gpus_by_id()
    found, candidates = match_names(name, _gpu_names(), kind="GPU")
    if found is None:
        raise GpuLookupError(name, candidates, list(gpus))
    return gpus[found]
