"""Each engine's default limit on sequences in flight per GPU kind, with the source line that sets it."""

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from catalog.gpus import Gpu
from catalog.tables import load_table

ENGINE_LIMITS_CSV = Path(__file__).parent / "data" / "engine_limits.csv"


class EngineLimit(BaseModel):
    """One row: the engine's default `max_num_seqs` (or `max_batch_size`) on the GPUs it matches."""

    model_config = ConfigDict(frozen=True)

    engine: str
    gpu_names: tuple[str, ...] = ()  # lower-case parts of the device name; empty matches every GPU
    min_memory_gb: float = Field(ge=0)
    except_names: tuple[str, ...] = ()
    max_num_seqs: int = Field(ge=1)
    source: str
    checked: str

    @field_validator("gpu_names", "except_names", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return tuple(p.strip().lower() for p in value.split(";") if p.strip()) if isinstance(value, str) else value

    def matches(self, gpu: Gpu) -> bool:
        """Whether this row decides the limit on `gpu` (rows are tried in file order)."""
        names = " ".join((gpu.id, gpu.name.lower(), *(a.lower() for a in gpu.aliases)))
        if self.gpu_names and not any(n in names for n in self.gpu_names):
            return False
        if any(n in names for n in self.except_names):
            return False
        return gpu.memory_gb >= self.min_memory_gb


@cache
def load_engine_limits() -> tuple[EngineLimit, ...]:
    """Every row of catalog/data/engine_limits.csv, in file order."""
    return load_table(ENGINE_LIMITS_CSV, EngineLimit)


def default_max_num_seqs(engine: str, gpu: Gpu) -> EngineLimit | None:
    """The first row for `engine` that matches `gpu` (None for an engine the file does not list)."""
    return next((row for row in load_engine_limits() if row.engine == engine and row.matches(gpu)), None)
