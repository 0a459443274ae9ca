"""What owning a GPU costs besides its price: sourced defaults for purchase, power, hosting, money and support."""

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from catalog.tables import blank_as, load_table

OWNING_CSV = Path(__file__).parent / "data" / "owning.csv"

OwningKey = Literal[
    "purchase_price_per_gpu",
    "gpus_per_server",
    "depreciation_years",
    "interest_pct_per_year",
    "hosting_per_kw_month",
    "server_overhead_w_per_gpu",
    "pue",
    "electricity_per_kwh",
    "support_per_gpu_year",
]


class OwningDefault(BaseModel):
    """One row of catalog/data/owning.csv: a default for owned hardware, per GPU where `gpu` is set."""

    model_config = ConfigDict(frozen=True)

    key: OwningKey
    gpu: str | None
    value: float
    unit: str
    currency: Literal["USD", "CNY"] | None
    note: str
    source: str
    checked: str

    @field_validator("gpu", "currency", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return blank_as(value, None)


@cache
def load_owning_defaults() -> tuple[OwningDefault, ...]:
    """Every row of the owning defaults, in file order."""
    return load_table(OWNING_CSV, OwningDefault)


def owning_default(key: OwningKey) -> OwningDefault:
    """The default that holds for every GPU (a row without `gpu`)."""
    return next(row for row in load_owning_defaults() if row.key == key and row.gpu is None)


def purchase_price(gpu_id: str) -> OwningDefault | None:
    """The sourced purchase price of one GPU, or None when no public price was found (the page asks for one)."""
    return next(
        (row for row in load_owning_defaults() if row.key == "purchase_price_per_gpu" and row.gpu == gpu_id), None
    )
