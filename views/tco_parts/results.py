"""The cost calculator's figures: the headline, capacity and fleet, the other currency, the levers."""

import pandas as pd
import streamlit as st

from i18n.numbers import format_large
from tco import TcoResult, convert, format_money
from tco.lever_basis import measured_or_estimated
from tco.money import Currency
from ui.concepts import concept_note
from ui.lang import _, language


def _money(amount: float | None, currency: str, *, compact: bool = False) -> str:
    return format_money(amount, currency, compact=compact, language=language())


def _exact(amount: float | None, currency: str) -> str:
    """The exact figure for a hover, when the shown one is rounded into 万/亿 or millions."""
    return _("Exactly {amount}").format(amount=format_money(amount, currency))


def headline(result: TcoResult) -> None:
    cur = result.inputs.currency
    cap = result.capacity
    st.subheader(_("One replica at full load"))
    cols = st.columns(4)
    cols[0].metric(_("Cost per request"), _money(cap.cost_per_request, cur), border=True)
    cols[1].metric(_("Per million output tokens"), _money(cap.cost_per_million_output_tokens, cur), border=True)
    cols[2].metric(_("Per million tokens (in + out)"), _money(cap.cost_per_million_total_tokens, cur), border=True)
    cols[3].metric(
        _("Per replica per month"),
        _money(cap.cost_per_replica_month, cur),
        border=True,
        help=_exact(cap.cost_per_replica_month, cur)
        + "; "
        + _("{amount} per year").format(amount=_money(cap.cost_per_replica_year, cur)),
    )
    _other_currency(result)


def capacity_and_fleet(result: TcoResult) -> None:
    """The rest of the figures: one replica's capacity, and the fleet your traffic needs."""
    _capacity_row(result)
    cur = result.inputs.currency
    fleet = result.fleet
    st.subheader(_("Your traffic"))
    cols = st.columns(4)
    cols[0].metric(
        _("Replicas at peak"),
        f"{fleet.replicas:,}",
        border=True,
        help=_("peak {rps} req/s at {util}% target utilization").format(
            rps=f"{fleet.peak_requests_per_s:,.2f}", util=f"{result.inputs.target_utilization_pct:g}"
        ),
    )
    cols[1].metric(_("GPUs needed"), f"{fleet.gpus:,}", border=True)
    cols[2].metric(
        _("Fleet per month"),
        _money(fleet.fleet_cost_per_month, cur, compact=True),
        border=True,
        help=_exact(fleet.fleet_cost_per_month, cur)
        + "; "
        + _("{amount} per year").format(amount=_money(fleet.fleet_cost_per_year, cur)),
    )
    cols[3].metric(
        _("Fleet per year"),
        _money(fleet.fleet_cost_per_year, cur, compact=True),
        border=True,
        help=_exact(fleet.fleet_cost_per_year, cur),
    )
    cols = st.columns(4)
    util = fleet.utilization_at_average
    cols[0].metric(_("Utilization at average traffic"), "—" if util is None else f"{util:.0%}", border=True)
    cols[1].metric(
        _("Effective cost per request"),
        _money(fleet.effective_cost_per_request, cur),
        border=True,
        help=_("Fleet cost divided by the requests actually served: idle capacity is paid for."),
    )
    cols[2].metric(_("Average requests/s"), f"{fleet.average_requests_per_s:,.2f}", border=True)
    cols[3].metric(_("Peak requests/s"), f"{fleet.peak_requests_per_s:,.2f}", border=True)
    concept_note("utilization")


def _capacity_row(result: TcoResult) -> None:
    """One replica's capacity: time per request (not latency), requests per second and per day, cost per year."""
    cur = result.inputs.currency
    cap = result.capacity
    cols = st.columns(4)
    cols[0].metric(
        _("Replica time per request"),
        f"{cap.seconds_of_output_per_request:.2f} s",
        border=True,
        help=_(
            "Output tokens per request / throughput per replica: the share of a replica's output capacity one "
            "request takes at full load. It is not the request's latency: a request streams for about TPOT × its "
            "output tokens, side by side with the others in the batch."
        ),
    )
    cols[1].metric(_("Requests/s per replica"), f"{cap.requests_per_s:,.2f}", border=True)
    cols[2].metric(
        _("Requests/day per replica"),
        format_large(cap.requests_per_day, language()),
        border=True,
        help=f"{cap.requests_per_day:,.0f}",
    )
    cols[3].metric(
        _("Per replica per year"),
        _money(cap.cost_per_replica_year, cur),
        border=True,
        help=_exact(cap.cost_per_replica_year, cur),
    )


def _other_currency(result: TcoResult) -> None:
    """The headline in the other currency too, at the exchange rate the page uses."""
    inputs, cap = result.inputs, result.capacity
    other = Currency.USD if inputs.currency == Currency.CNY else Currency.CNY

    def there(amount: float) -> str:
        return _money(convert(amount, inputs.currency, other, inputs.cny_per_usd), other)

    st.caption(
        _(
            "In {currency} at {fx} CNY per USD: {per_request} per request, {per_month} per replica per month, "
            "{fleet} for the fleet per month."
        ).format(
            currency=other.value,
            fx=f"{inputs.cny_per_usd:g}",
            per_request=there(cap.cost_per_request),
            per_month=there(cap.cost_per_replica_month),
            fleet=there(result.fleet.fleet_cost_per_month),
        )
    )


OFF = "—"  # a lever that is off changes nothing: its figures show a dash, never 'None' or an unexplained blank


def levers_tab(result: TcoResult) -> None:
    cur = result.inputs.currency
    chain = result.levers
    cols = st.columns(3)
    cols[0].metric(_("Optimized cost per request"), _money(chain.optimized.cost_per_request, cur), border=True)
    cols[1].metric(
        _("Optimized fleet per year"),
        _money(chain.optimized_fleet.fleet_cost_per_year, cur, compact=True),
        border=True,
        help=_exact(chain.optimized_fleet.fleet_cost_per_year, cur),
    )
    cols[2].metric(
        _("Saved per year at your traffic (what-if)") if chain.what_if else _("Saved per year at your traffic"),
        _money(chain.saving_per_year, cur, compact=True),
        border=True,
        help=_exact(chain.saving_per_year, cur),
    )
    _what_if_note(result)
    table = pd.DataFrame(
        [
            {
                _("lever"): s.label,
                _("on"): s.enabled,
                _("what-if"): s.assumed,
                _("effect"): s.effect,
                _("cost per request after"): _money(s.cost_per_request_after, cur) if s.enabled else OFF,
                _("saved per request"): _money(s.saving_per_request, cur) if s.enabled else OFF,
                _("replicas after"): f"{s.replicas_after:,}" if s.enabled and s.replicas_after is not None else OFF,
                _("saved per year"): _money(s.saving_per_year, cur) if s.enabled else OFF,
                _("source"): s.source,
            }
            for s in chain.steps
        ]
    )
    st.dataframe(table, hide_index=True)
    for key in ("prefix_caching", "speculative_decoding", "spot"):
        concept_note(key)


def _what_if_note(result: TcoResult) -> None:
    """Say which levers are assumptions, and why they start off when the throughput was estimated or measured."""
    if result.levers.what_if:
        st.caption(
            _(
                "What-if: prompt reuse and spot prices are assumptions about your traffic and your market, not part of "
                "the throughput; the optimized figures hold only if they come true."
            )
        )
    elif measured_or_estimated(result.inputs):
        st.caption(
            _(
                "The throughput came from an estimate or a probe run, so the what-if levers (prompt reuse, spot "
                "prices) start off; turn them on under Optimization levers to try them."
            )
        )
