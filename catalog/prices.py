"""GPU price tiers with their provider, region, kind, source and date (catalog/data/gpu_prices.csv), and market presets.

One row is one (GPU, provider, region, kind) price per GPU-hour. The shipped file is a dated snapshot: published
rental prices (Chinese clouds in yuan, global clouds and market surveys in dollars). A market survey's band is kept
as two rows, its low end and its high end, so a GPU's band is the lowest and highest of its on-demand tiers.
"""

from functools import cache
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from catalog.tables import load_table

PRICES_CSV = Path(__file__).parent / "data" / "gpu_prices.csv"
MARKETS_CSV = Path(__file__).parent / "data" / "markets.csv"

PriceKind = Literal["on_demand", "monthly", "spot", "reserved_1y", "reserved_3y", "owned"]
PRICE_KINDS: tuple[PriceKind, ...] = get_args(PriceKind)
PriceCurrency = Literal["USD", "CNY"]
Market = Literal["cn", "global"]
MARKETS: tuple[Market, ...] = get_args(Market)


class PriceTier(BaseModel):
    """One price per GPU-hour: which GPU, from whom, where, on what terms, when read and from what source."""

    model_config = ConfigDict(frozen=True)

    gpu: str
    provider: str
    region: str
    kind: PriceKind
    price_per_gpu_hour: float = Field(gt=0)
    currency: PriceCurrency
    source: str
    fetched_at: str
    licence: str = ""
    note: str = ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What a tier is one price of: (GPU, provider, region, kind)."""
        return self.gpu, self.provider, self.region, self.kind


class MarketMember(BaseModel):
    """A GPU one can buy or rent in a market, and why the catalog says so."""

    model_config = ConfigDict(frozen=True)

    market: Market
    gpu: str
    reason: str
    source: str
    checked: str


@cache
def load_price_snapshot() -> tuple[PriceTier, ...]:
    """The shipped, dated price tiers, in file order."""
    return load_table(PRICES_CSV, PriceTier)


@cache
def load_markets() -> tuple[MarketMember, ...]:
    """Every (market, GPU) membership with its reason and source."""
    return load_table(MARKETS_CSV, MarketMember)


def market_gpus(market: Market) -> frozenset[str]:
    """The catalog GPU ids of a market preset."""
    return frozenset(m.gpu for m in load_markets() if m.market == market)
