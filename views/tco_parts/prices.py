"""/tco's price record (lowest tier, provider, region, kind, when fetched; every tier) and its Refresh prices button."""

import streamlit as st

from catalog import find_gpu
from catalog.prices import PriceTier
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


def price_record(gpu_id: str, currency: str, cny_per_usd: float) -> None:
    """The GPU's lowest on-demand tier (the price picking it fills in) and all its tiers, or why it has none."""
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
    if tier is None:  # only committed, spot or owned tiers: picking the GPU fills in no price
        st.caption(
            _("No on-demand price on record for {gpu}; enter yours (its other tiers are below).").format(gpu=gpu.name)
        )
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
