"""Refreshing the stored GPU prices from gpuhunt's catalogs: all or nothing, with what changed and what failed."""

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from functools import lru_cache

from gpuhunt import CatalogItem
from pydantic import BaseModel, ConfigDict

from catalog import GpuLookupError, find_gpu, load_handbook
from catalog.prices import PriceTier
from db import Engine
from db.prices import replace_prices, stored_prices
from tco.owned_tiers import owned_tiers
from tco.price_sources import Fetch, fetch_url, read_catalogs
from tco.prices import PriceBook, merged, snapshot_book

GPUHUNT_SOURCE = "gpuhunt catalog ({where}, provider {provider}, instance {instance})"
MEMORY_TOLERANCE = 0.15  # a catalog GPU matches an offer whose memory is within 15% of its own (GiB vs GB)
Clock = Callable[[], datetime]
_FX = load_handbook().fx.cny_per_usd  # only to find each kind's lowest tier when a GPU has yuan and dollar tiers


class PriceChange(BaseModel):
    """A GPU's lowest price of one kind, before and after a refresh (None: no tier of that kind)."""

    model_config = ConfigDict(frozen=True)

    gpu: str
    kind: str
    before: float | None
    after: float | None
    currency: str
    provider_after: str


class RefreshReport(BaseModel):
    """What a refresh read, stored and changed, or why it stored nothing (`ok` False: the old prices stay)."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    source: str
    fetched_at: str
    providers: dict[str, int]  # tiers read per provider
    failed: dict[str, str]  # provider (or the source) -> what went wrong
    unmatched_gpus: tuple[str, ...]  # gpuhunt GPU names with no catalog GPU
    tiers: int
    added: int
    removed: int
    changed: tuple[PriceChange, ...]


@lru_cache(maxsize=1024)
def catalog_gpu(name: str, memory_gb: float | None) -> str | None:
    """The catalog GPU a gpuhunt offer names ('A100' with 80 GB -> 'a100-80gb-sxm'), or None."""
    queries = [f"{name} {memory_gb:g}GB", name] if memory_gb else [name]
    for query in queries:
        try:
            gpu = find_gpu(query)
        except GpuLookupError:
            continue
        if memory_gb is None or abs(gpu.memory_gb - memory_gb) <= MEMORY_TOLERANCE * gpu.memory_gb:
            return gpu.id
    return None


def tiers_from_items(
    items: Mapping[str, Iterable[CatalogItem]], fetched_at: str, where: str
) -> tuple[list[PriceTier], set[str]]:
    """The lowest price per GPU-hour of each (GPU, provider, region, on-demand or spot), and the unmatched names."""
    best: dict[tuple[str, str, str, str], PriceTier] = {}
    unmatched: set[str] = set()
    for provider, offers in items.items():
        for item in offers:
            if not item.gpu_count or not item.gpu_name or item.price <= 0:
                continue
            gpu = catalog_gpu(item.gpu_name, item.gpu_memory)
            if gpu is None:
                unmatched.add(item.gpu_name)
                continue
            tier = PriceTier(
                gpu=gpu,
                provider=provider,
                region=item.location,
                kind="spot" if item.spot else "on_demand",
                price_per_gpu_hour=round(item.price / item.gpu_count, 6),
                currency="USD",
                source=GPUHUNT_SOURCE.format(where=where, provider=provider, instance=item.instance_name),
                fetched_at=fetched_at,
                licence="gpuhunt catalog (MPL-2.0 tool; prices as the providers publish them)",
            )
            kept = best.get(tier.key)
            if kept is None or tier.price_per_gpu_hour < kept.price_per_gpu_hour:
                best[tier.key] = tier
    return sorted(best.values(), key=lambda t: t.key), unmatched


def _changes(before: PriceBook, after: PriceBook) -> tuple[PriceChange, ...]:
    """Every GPU x kind whose lowest price (in USD, as gpuhunt prices) moved, appeared or went away."""
    found: list[PriceChange] = []
    keys = sorted({(t.gpu, t.kind) for t in (*before.tiers, *after.tiers)})
    for gpu, kind in keys:
        old = before.lowest(gpu, kind, "USD", _FX)
        new = after.lowest(gpu, kind, "USD", _FX)
        if (old and (old.price_per_gpu_hour, old.currency)) != (new and (new.price_per_gpu_hour, new.currency)):
            found.append(
                PriceChange(
                    gpu=gpu,
                    kind=kind,
                    before=old.price_per_gpu_hour if old else None,
                    after=new.price_per_gpu_hour if new else None,
                    currency=(new or old or after.tiers[0]).currency,
                    provider_after=new.provider if new else "",
                )
            )
    return tuple(found)


def current_book(engine: Engine) -> PriceBook:
    """The prices in use: the shipped snapshot and the owned tiers (defaults), with the last refresh over them."""
    stored = stored_prices(engine)
    stamp = max((t.fetched_at for t in stored), default="snapshot")
    return merged((*snapshot_book().tiers, *owned_tiers()), stored, stamp=stamp)


def refresh_prices(
    engine: Engine, source: str | None = None, *, fetch: Fetch = fetch_url, now: Clock = lambda: datetime.now(UTC)
) -> RefreshReport:
    """Read gpuhunt's catalogs and store their prices in place of the last refresh, or store nothing.

    Stored only when every provider was read and some offer is of a catalog GPU; otherwise the previous prices stay
    and the report says what failed.
    """
    fetched_at = now().astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    where = source or "gpuhunt default catalog"
    items, failed = read_catalogs(source, fetch)
    tiers, unmatched = tiers_from_items(items, fetched_at, where)
    if not items and not failed:
        failed = {where: "no provider catalog (<provider>.csv) found"}
    elif not tiers and not failed:
        failed = {where: "no offer of a catalog GPU"}
    before = current_book(engine)
    old_keys = {t.key for t in stored_prices(engine)}
    new_keys = {t.key for t in tiers}
    ok = not failed
    if ok:
        replace_prices(engine, tiers)
    after = merged(snapshot_book().tiers, tiers) if ok else before
    return RefreshReport(
        ok=ok,
        source=where,
        fetched_at=fetched_at,
        providers={p: sum(1 for t in tiers if t.provider == p) for p in sorted(items)},
        failed=failed,
        unmatched_gpus=tuple(sorted(unmatched)),
        tiers=len(tiers),
        added=len(new_keys - old_keys) if ok else 0,
        removed=len(old_keys - new_keys) if ok else 0,
        changed=_changes(before, after) if ok else (),
    )
