"""Published serving measurements on NPUs (Huawei Ascend), read as they were published: no model is fitted to them."""

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from catalog import find_gpu, find_model
from catalog.quantization import get_quant
from catalog.tables import blank_as, load_table

NPU_MEASUREMENTS_CSV = Path(__file__).parent / "data" / "npu_measurements.csv"


class NpuMeasurement(BaseModel):
    """One published operating point on an NPU: its deployment, load and the figures the benchmark reported."""

    model_config = ConfigDict(frozen=True)

    id: str
    model: str  # catalog model id
    gpu: str  # catalog GPU id
    gpus: int = Field(ge=1)  # NPUs in the whole deployment (an Ascend 910C counts once, though it shows two devices)
    server: str  # the server the source names (Atlas 800I A3, Atlas 800I A2)
    engine: str
    quant: str | None  # catalog quantization id; None for a format the catalog has not (W4A8)
    quant_as_published: str
    deployment: str  # 'aggregated' (prefill and decode on the same NPUs) or 'disaggregated' (separate pools)
    layout: str  # as launched, in devices
    speculative: str  # the speculative decoding the launch turned on, as launched ('none' when off)
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    concurrency: int = Field(ge=1)
    request_rate_rps: float | None  # None: every request sent as soon as a user is free (a closed loop)
    ttft_mean_ms: float = Field(gt=0)
    ttft_p50_ms: float = Field(gt=0)
    ttft_p99_ms: float = Field(gt=0)
    tpot_mean_ms: float = Field(gt=0)
    output_tok_s: float = Field(gt=0)  # the whole deployment's
    req_s: float = Field(gt=0)
    publisher: str
    source: str
    source_revision: str
    licence: str
    method: str
    note: str

    @field_validator("quant", "request_rate_rps", mode="before")
    @classmethod
    def _blank(cls, value: object) -> object:
        return blank_as(value, None)

    @property
    def output_tok_s_per_gpu(self) -> float:
        """Output tokens per second per NPU of the deployment."""
        return self.output_tok_s / self.gpus


@cache
def load_npu_measurements() -> tuple[NpuMeasurement, ...]:
    """Every row of perf/data/npu_measurements.csv, checked against the catalog (GPU, model and format ids)."""
    rows = load_table(NPU_MEASUREMENTS_CSV, NpuMeasurement)
    for row in rows:
        find_gpu(row.gpu)
        find_model(row.model)
        if row.quant is not None:
            get_quant(row.quant)
    return rows


def measured_on(gpu_id: str, model_id: str | None = None) -> tuple[NpuMeasurement, ...]:
    """The published measurements on this NPU, of this model first when one is given (file order otherwise)."""
    found = [m for m in load_npu_measurements() if m.gpu == gpu_id]
    if model_id is not None:
        found.sort(key=lambda m: m.model != model_id)
    return tuple(found)


def measured_lines(gpu: str, model: str) -> list[str]:
    """What the command line prints where it has no estimate on an NPU: this model's published measurements there.

    Empty for a GPU that is not an NPU with published measurements (or a name the catalog does not know).
    """
    try:
        npu, spec = find_gpu(gpu), find_model(model)
    except ValueError:
        return []
    model_id = spec.id
    found = measured_on(npu.id, model_id)
    if not found:
        return []
    own = [m for m in found if m.model == model_id]
    head = f"published measurements on {npu.name} (measurements, not estimates; perf/data/npu_measurements.md):"
    if not own:
        return [head, f"  none of {spec.name}; {len(found)} of other models"]
    return [head, *(f"  {_line(m)}" for m in own)]


def _line(m: NpuMeasurement) -> str:
    return (
        f"{m.engine} {m.deployment}, {m.gpus} NPUs, {m.quant_as_published}, speculative {m.speculative}, "
        f"{m.input_tokens:,}/{m.output_tokens:,} tokens at concurrency {m.concurrency}: TTFT mean "
        f"{m.ttft_mean_ms:,.0f} ms (p99 {m.ttft_p99_ms:,.0f}), TPOT mean {m.tpot_mean_ms:g} ms, "
        f"{m.output_tok_s:,.0f} output tok/s ({m.output_tok_s_per_gpu:,.0f} per NPU) [{m.publisher}: {m.id}]"
    )
