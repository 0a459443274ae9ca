"""Hosted-API prices per million tokens (a dated LiteLLM snapshot, MIT) and which API entries serve each model."""

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from catalog.tables import blank_as, load_table

DATA = Path(__file__).parent / "data"
API_PRICES_CSV = DATA / "api_prices.csv"
API_MODELS_CSV = DATA / "api_models.csv"
API_PRICES_LICENSE = DATA / "api_prices.LICENSE"
UPSTREAM_URL = "https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json"
EVERY_MODEL = "*"
API_PRICE_COLUMNS = (
    "api_key",
    "provider",
    "api_model",
    "input_per_million_usd",
    "cached_input_per_million_usd",
    "output_per_million_usd",
    "source",
    "licence",
    "source_snapshot",
)

Relation = Literal["same", "reference"]


class ApiModelLink(BaseModel):
    """One row of api_models.csv: a catalog model (or '*' for every model) and an API entry that prices it."""

    model_config = ConfigDict(frozen=True)

    model: str
    api_key: str
    relation: Relation
    source: str
    checked: str


class ApiPrice(BaseModel):
    """One row of api_prices.csv: a provider's list price for one model, USD per million tokens."""

    model_config = ConfigDict(frozen=True)

    api_key: str
    provider: str
    api_model: str
    input_per_million_usd: float
    cached_input_per_million_usd: float | None
    output_per_million_usd: float
    source: str
    licence: str
    source_snapshot: str

    @field_validator("cached_input_per_million_usd", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return blank_as(value, None)


@cache
def load_api_links() -> tuple[ApiModelLink, ...]:
    """Which API entries price which catalog model, in file order."""
    return load_table(API_MODELS_CSV, ApiModelLink)


def load_api_prices(path: Path = API_PRICES_CSV) -> tuple[ApiPrice, ...]:
    """The stored snapshot of API prices (read afresh: a refresh may have replaced it)."""
    return load_table(path, ApiPrice)


def api_prices_for(model_id: str, path: Path = API_PRICES_CSV) -> list[tuple[ApiModelLink, ApiPrice]]:
    """The API prices of one catalog model: the same model's providers first, then the reference APIs."""
    prices = {row.api_key: row for row in load_api_prices(path)}
    links = [link for link in load_api_links() if link.model in (model_id, EVERY_MODEL)]
    found = [(link, prices[link.api_key]) for link in links if link.api_key in prices]
    return sorted(found, key=lambda pair: pair[0].relation != "same")
