"""The GPU catalog: memory, bandwidth, tensor rates, architecture gates and hourly prices, each with its source."""

import csv
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from catalog.matching import match_names

GPU_CSV = Path(__file__).parent / "data" / "gpus.csv"

GpuKind = Literal["datacenter", "consumer", "apple"]


class GpuLookupError(ValueError):
    """A GPU name that matches no catalog entry, or several."""

    def __init__(self, query: str, candidates: list[str]) -> None:
        self.query = query
        self.candidates = candidates
        if candidates:
            hint = "did you mean: " + ", ".join(candidates) + "?"
        else:
            hint = "known GPUs: " + ", ".join(g.id for g in load_gpus())
        kind = "is ambiguous" if len(candidates) > 1 and _all_close(query, candidates) else "is not in the catalog"
        super().__init__(f"GPU '{query}' {kind}; {hint}")


def _all_close(query: str, candidates: list[str]) -> bool:
    from catalog.matching import normalize

    return all(normalize(query) in normalize(c) for c in candidates)


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
    native_fp8: bool
    native_fp4: bool
    marlin_kernels: bool
    tdp_w: float | None
    price_low: float | None
    price_high: float | None
    price_currency: Literal["USD", "CNY"] | None
    price_note: str
    price_source: str
    price_date: str
    spec_source: str
    spec_notes: str

    @field_validator(
        "bf16_dense_tflops",
        "fp8_dense_tflops",
        "fp4_dense_tflops",
        "tdp_w",
        "price_low",
        "price_high",
        "price_currency",
        mode="before",
    )
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("aliases", mode="before")
    @classmethod
    def _split_aliases(cls, value: object) -> object:
        return tuple(a.strip() for a in value.split(";") if a.strip()) if isinstance(value, str) else value

    @field_validator("native_fp8", "native_fp4", "marlin_kernels", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        return value == "yes" if isinstance(value, str) else value

    @property
    def sm(self) -> float | None:
        """CUDA compute capability as a number (8.9), or None for non-NVIDIA parts."""
        try:
            return float(self.compute_capability)
        except ValueError:
            return None

    @property
    def has_price(self) -> bool:
        return self.price_low is not None and self.price_currency is not None


@cache
def load_gpus() -> tuple[Gpu, ...]:
    """Every GPU in the catalog, in file order."""
    with GPU_CSV.open(newline="", encoding="utf-8") as handle:
        return tuple(Gpu.model_validate(row) for row in csv.DictReader(handle))


def find_gpu(name: str) -> Gpu:
    """Look a GPU up by id, name or alias, forgivingly ('A800', 'a800-40gb', 'NVIDIA A800 40GB')."""
    gpus = {g.id: g for g in load_gpus()}
    found, candidates = match_names(name, {g.id: (g.id, g.name, *g.aliases) for g in gpus.values()})
    if found is None:
        raise GpuLookupError(name, candidates)
    return gpus[found]
