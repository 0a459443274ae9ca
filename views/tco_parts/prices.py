"""/tco's price record (lowest tier, provider, region, kind, when fetched; every tier) and its Refresh prices button."""

import streamlit as st

from catalog import find_gpu
from catalog.prices import PRICE_KINDS, PriceTier
from settings import get_settings
from tco.money import format_money
from tco.price_refresh import RefreshReport, refresh_prices
from tco.prices import kind_text
from ui.lang import _, language
from ui.resources import get_engine, price_book

_REFRESHED = "_tco.prices_refreshed"  # the last refresh's report, shown once after the rerun it causes


def tier_text(tier: PriceTier) -> str:
    """'5.15 元/GPU-hour, on-demand, 晨涧云 (mainland China), fetched 2026-12-05'."""
    return _("{price}/GPU-hour, {kind}, {provider} ({region}), fetched {date}").format(
        price=format_money(tier.price_per_gpu_hour, tier.currency, language=language()),
        kind=kind_text(tier.kind, _),
        provider=_(tier.provider),  # the data catalog words the snapshot's providers, regions and dates
        region=_(tier.region),
        date=_(tier.fetched_at),
    )


def price_record(gpu_id: str, currency: str, cny_per_usd: float, price_key: str) -> None:
    """The GPU's lowest on-demand tier (the price picking it fills in) and all its tiers, or why it has none.

    A GPU with other tiers only (H800 and the 910C are rented by the month) offers its first one, by kind, as a
    button that fills it into the price (`price_key`).
    """
    gpu = find_gpu(gpu_id)
    book = price_book()
    tier = book.lowest(gpu.id, "on_demand", currency, cny_per_usd)
    tiers = book.for_gpu(gpu.id)
    if not tiers:
        st.caption(
            _("No public hourly price on record for {gpu} ({note}); enter yours.").format(
                gpu=gpu.name, note=_(gpu.price_note) if gpu.price_note else _("no tier on record")
            )
        )
        return
    if tier is None:  # only monthly, committed, spot or owned tiers: picking the GPU fills in no price
        st.caption(
            _("No on-demand price on record for {gpu}; enter yours (its other tiers are below).").format(gpu=gpu.name)
        )
        _use_other_tier(gpu.id, currency, cny_per_usd, price_key)
    else:
        st.caption(
            _("Lowest on-demand price on record: {tier}. Source: {source}").format(
                tier=tier_text(tier), source=tier.source
            )
        )
    with st.expander(_("All price tiers ({count})").format(count=len(tiers)), icon=":material/sell:"):
        st.dataframe(
            [
                {
                    _("Kind"): kind_text(t.kind, _),
                    _("Price per GPU-hour"): format_money(t.price_per_gpu_hour, t.currency, language=language()),
                    _("Provider"): _(t.provider),
                    _("Region"): _(t.region),
                    _("Fetched"): _(t.fetched_at),
                }
                for t in tiers
            ],
            hide_index=True,
        )


def _use_other_tier(gpu_id: str, currency: str, cny_per_usd: float, price_key: str) -> None:
    """A button filling in the GPU's lowest tier of its first kind on record (monthly before spot and reserved)."""
    book = price_book()
    for kind in PRICE_KINDS:
        value = book.price(gpu_id, kind, currency, cny_per_usd)
        tier = book.lowest(gpu_id, kind, currency, cny_per_usd)
        if value is None or tier is None:
            continue
        st.button(
            _("Use the {kind} price: {price}/GPU-hour ({provider})").format(
                kind=kind_text(kind, _),
                price=format_money(value, currency, language=language()),
                provider=_(tier.provider),
            ),
            key="tco.use_tier",
            on_click=_fill_price,
            args=(price_key, value),
            icon=":material/sell:",
        )
        return


def _fill_price(price_key: str, value: float) -> None:
    st.session_state[price_key] = value


def _refresh() -> None:
    st.session_state[_REFRESHED] = refresh_prices(get_engine(), get_settings().prices_source or None)
    price_book.clear()


def refresh_button() -> None:
    """Refresh the stored prices through gpuhunt; say what changed, or what failed (the old prices then stay)."""
    st.button(
        _("Refresh prices"),
        key="tco.refresh_prices",
        on_click=_refresh,
        icon=":material/refresh:",
        help=_("Reads current on-demand and spot prices through gpuhunt; without network the shipped snapshot stays."),
    )
    report: RefreshReport | None = st.session_state.pop(_REFRESHED, None)
    if report is None:
        return
    if report.ok:
        st.success(
            _("Prices refreshed: {tiers} tiers from {providers} providers, {changed} lowest prices changed.").format(
                tiers=report.tiers, providers=len(report.providers), changed=len(report.changed)
            )
        )
    else:
        failed = "; ".join(f"{where}: {why}" for where, why in report.failed.items())
        st.error(_("The refresh failed; the previous prices stay in use. What failed: {failed}").format(failed=failed))
