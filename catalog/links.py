"""The links a KV cache can cross between a prefill and a decode pool: bandwidth per GPU and a fixed latency."""

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from catalog.gpus import Gpu
from catalog.tables import blank_as, load_table

KV_LINKS_CSV = Path(__file__).parent / "data" / "kv_links.csv"
NVLINK = "nvlink"


class KvLink(BaseModel):
    """One link kind (kv_links.csv). `gb_s_per_gpu` is one direction, per GPU; None for NVLink (the GPU's own)."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    gb_s_per_gpu: float | None = Field(default=None, gt=0)
    latency_ms: float = Field(ge=0)
    source: str
    checked: str = ""

    def gb_s(self, gpu: Gpu) -> float | None:
        """GB/s one GPU sends in one direction over this link (None: this GPU has no NVLink)."""
        if self.gb_s_per_gpu is not None:
            return self.gb_s_per_gpu
        return gpu.interconnect_gb_s / 2 if gpu.interconnect_gb_s else None

    @field_validator("gb_s_per_gpu", mode="before")
    @classmethod
    def _blank(cls, value: object) -> object:
        return blank_as(value, None)


@cache
def load_kv_links() -> dict[str, KvLink]:
    """The link kinds by id, in file order."""
    rows = load_table(KV_LINKS_CSV, KvLink)
    return {row.id: row for row in rows}


def find_kv_link(name: str) -> KvLink:
    """A link kind by id ('nvlink', 'infiniband', 'roce', 'ethernet'); a ValueError names the allowed ones."""
    links = load_kv_links()
    key = name.strip().lower()
    if key not in links:
        raise ValueError(f"'{name}' is not a link between pools; allowed: {', '.join(links)}")
    return links[key]
