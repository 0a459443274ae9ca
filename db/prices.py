"""Refreshed GPU prices: one row per (GPU, provider, region, kind), replaced as a whole by each successful refresh."""

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import DateTime, Engine, Float, Integer, String, delete, select
from sqlalchemy.orm import Mapped, mapped_column

from catalog.prices import PriceTier
from db.base import Base
from db.engine import session_factory

MAX_SOURCE_CHARS = 500


class StoredPrice(Base):
    """One refreshed price per GPU-hour, with where it came from and when it was read."""

    __tablename__ = "gpu_prices"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    gpu: Mapped[str] = mapped_column(String(64), index=True)
    provider: Mapped[str] = mapped_column(String(64))
    region: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    price_per_gpu_hour: Mapped[float] = mapped_column(Float)
    currency: Mapped[str] = mapped_column(String(3))
    source: Mapped[str] = mapped_column(String(MAX_SOURCE_CHARS))
    fetched_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


def _when(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _text(moment: datetime) -> str:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def stored_prices(engine: Engine) -> tuple[PriceTier, ...]:
    """Every refreshed tier, by GPU, provider, region and kind (empty before the first refresh)."""
    order = (StoredPrice.gpu, StoredPrice.provider, StoredPrice.region, StoredPrice.kind)
    with session_factory(engine)() as session:
        rows = session.scalars(select(StoredPrice).order_by(*order)).all()
    return tuple(
        PriceTier.model_validate(
            {
                "gpu": r.gpu,
                "provider": r.provider,
                "region": r.region,
                "kind": r.kind,
                "price_per_gpu_hour": r.price_per_gpu_hour,
                "currency": r.currency,
                "source": r.source,
                "fetched_at": _text(r.fetched_at),
            }
        )
        for r in rows
    )


def replace_prices(engine: Engine, tiers: Sequence[PriceTier]) -> None:
    """Store `tiers` in place of every refreshed price, in one transaction (all or nothing)."""
    rows = [
        StoredPrice(
            gpu=t.gpu,
            provider=t.provider,
            region=t.region,
            kind=t.kind,
            price_per_gpu_hour=t.price_per_gpu_hour,
            currency=t.currency,
            source=t.source[:MAX_SOURCE_CHARS],
            fetched_at=_when(t.fetched_at.replace("Z", "+00:00")),
        )
        for t in tiers
    ]
    with session_factory(engine)() as session, session.begin():
        session.execute(delete(StoredPrice))
        session.add_all(rows)
