"""The prices in use: the shipped snapshot with any refreshed tiers over it, and the lowest tier of a kind per GPU."""

from collections.abc import Iterable
from functools import cache

from pydantic import BaseModel, ConfigDict

from catalog import load_handbook
from catalog.prices import PRICE_KINDS, PriceKind, PriceTier, load_price_snapshot
from i18n import N_, Translate, identity
from tco.money import convert

SNAPSHOT = "snapshot"


class PriceBook(BaseModel):
    """Every price tier in use. `stamp` names this set (the snapshot, or the newest refresh) for caches and pages."""

    model_config = ConfigDict(frozen=True)

    tiers: tuple[PriceTier, ...]
    stamp: str = SNAPSHOT

    def __hash__(self) -> int:
        return hash((self.stamp, len(self.tiers)))

    def for_gpu(self, gpu_id: str) -> tuple[PriceTier, ...]:
        """A GPU's tiers by kind (on-demand first), then provider and region."""
        order = {kind: i for i, kind in enumerate(PRICE_KINDS)}
        found = [t for t in self.tiers if t.gpu == gpu_id]
        return tuple(sorted(found, key=lambda t: (order[t.kind], t.provider, t.region, t.price_per_gpu_hour)))

    def lowest(self, gpu_id: str, kind: PriceKind, currency: str, cny_per_usd: float) -> PriceTier | None:
        """The cheapest tier of `kind` for a GPU, compared in `currency` (None when the GPU has none of that kind)."""
        found = [t for t in self.tiers if t.gpu == gpu_id and t.kind == kind]
        if not found:
            return None
        return min(found, key=lambda t: convert(t.price_per_gpu_hour, t.currency, currency, cny_per_usd))

    def price(self, gpu_id: str, kind: PriceKind, currency: str, cny_per_usd: float) -> float | None:
        """The lowest price per GPU-hour of `kind` in `currency`, rounded as the pages show it (None: no such tier)."""
        tier = self.lowest(gpu_id, kind, currency, cny_per_usd)
        if tier is None:
            return None
        return round(convert(tier.price_per_gpu_hour, tier.currency, currency, cny_per_usd), 4)

    def public_price(self, gpu_id: str) -> PriceTier | None:
        """The tier a link carries for a GPU: its lowest on-demand price, compared at the handbook's exchange rate."""
        return self.lowest(gpu_id, "on_demand", "USD", load_handbook().fx.cny_per_usd)

    def priced(self, gpu_id: str) -> bool:
        """Whether the GPU has any tier at all."""
        return any(t.gpu == gpu_id for t in self.tiers)


def merged(snapshot: Iterable[PriceTier], refreshed: Iterable[PriceTier], stamp: str = SNAPSHOT) -> PriceBook:
    """The snapshot with refreshed tiers over it: a refreshed (GPU, provider, region, kind) replaces the shipped one."""
    by_key = {t.key: t for t in snapshot}
    by_key.update({t.key: t for t in refreshed})
    return PriceBook(tiers=tuple(by_key.values()), stamp=stamp)


@cache
def snapshot_book() -> PriceBook:
    """The shipped, dated prices alone: what the app uses offline or before any refresh."""
    return PriceBook(tiers=load_price_snapshot())


KIND_WORDS: dict[str, str] = {
    "on_demand": N_("on-demand"),
    "monthly": N_("monthly rental"),
    "spot": N_("spot"),
    "reserved_1y": N_("1-year reserved"),
    "reserved_3y": N_("3-year reserved"),
    "owned": N_("owned"),
}


def kind_text(kind: str, tr: Translate = identity) -> str:
    """A price kind as a page words it ('on_demand' -> 'on-demand')."""
    return tr(KIND_WORDS.get(kind, kind))


MARKET_WORDS: dict[str, str] = {"cn": N_("available in mainland China"), "global": N_("global clouds")}
