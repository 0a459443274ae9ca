"""The cost page's owning, energy and hosted-API sections: their sidebar inputs and their figures."""

from collections.abc import Callable

import pandas as pd
import streamlit as st

from catalog.api_prices import UPSTREAM_URL
from catalog.models import find_model
from catalog.owning import OwningKey, owning_default
from i18n.numbers import format_large
from tco import TcoResult, convert, format_money
from tco.api_compare import ApiComparison, compare_apis
from tco.energy import EnergyEstimate, energy_of
from tco.inputs import TcoInputs
from tco.owning import catalog_purchase_price, gpu_power_w, owned_cost, owned_hardware
from tco.tokens import TokensByKind
from ui.break_even import break_even_column, break_even_help, break_even_label, break_even_value
from ui.lang import _, language
from ui.token_table import split_basis_text

REFRESH_COMMAND = "python -m tco api-prices refresh"


def _money(amount: float | None, currency: str) -> str:
    return format_money(amount, currency, language=language())


def _catalog_hint(key: OwningKey, currency: str, fx: float) -> str:
    """A blank money field's placeholder: the catalog's default in the page's currency."""
    row = owning_default(key)
    value = convert(row.value, row.currency or currency, currency, fx)
    return _("empty: {amount} (catalog)").format(amount=_money(value, currency))


# long: one widget per input of owned hardware, energy and the API comparison, in the form's order
def owning_inputs(key: Callable[[str], str]) -> None:
    """The sidebar's inputs for owned hardware, energy and the API comparison (blanks take the catalog's values)."""
    currency = str(st.session_state.get(key("currency")) or "CNY")
    fx = float(st.session_state.get(key("fx")) or 1)
    left, right = st.columns(2)
    left.number_input(
        _("Purchase price per GPU"),
        key=key("own_price"),
        value=None,
        step=1000.0,
        format="%.10g",
        placeholder=_("empty: the catalog's, if any"),
        help=_("In the currency above. Empty: the sourced price on record for this GPU; none: enter yours."),
    )
    right.number_input(
        _("or per server"), key=key("own_server_price"), value=None, step=10000.0, format="%.10g", placeholder="—"
    )
    left, right = st.columns(2)
    left.number_input(_("GPUs per server"), key=key("own_server_gpus"), step=1)
    right.number_input(_("Depreciation (years)"), key=key("own_years"), step=1.0, format="%.4g")
    left, right = st.columns(2)
    left.number_input(_("Cost of capital (% per year)"), key=key("own_interest"), step=0.5, format="%.4g")
    right.number_input(
        _("Hosting per kW-month"),
        key=key("own_hosting"),
        value=None,
        step=10.0,
        format="%.6g",
        placeholder=_catalog_hint("hosting_per_kw_month", currency, fx),
    )
    left, right = st.columns(2)
    left.number_input(
        _("GPU power (W)"), key=key("gpu_w"), value=None, step=50.0, format="%.6g", placeholder=_("empty: TDP")
    )
    right.number_input(_("Server overhead per GPU (W)"), key=key("overhead_w"), step=10.0, format="%.6g")
    left, right = st.columns(2)
    left.number_input(_("Average draw (% of rated power)"), key=key("draw"), step=5.0, format="%.4g")
    right.number_input(_("PUE"), key=key("pue"), step=0.05, format="%.3g")
    left, right = st.columns(2)
    left.number_input(
        _("Electricity per kWh"),
        key=key("kwh_price"),
        value=None,
        step=0.05,
        format="%.4g",
        placeholder=_catalog_hint("electricity_per_kwh", currency, fx),
    )
    right.number_input(
        _("Support per GPU-year"),
        key=key("own_support"),
        value=None,
        step=100.0,
        format="%.8g",
        placeholder=_catalog_hint("support_per_gpu_year", currency, fx),
    )
    left, right = st.columns(2)
    left.number_input(_("Fleet utilization (%)"), key=key("own_util"), step=5.0, format="%.4g")
    right.number_input(
        _("Grid carbon (g CO2e/kWh)"), key=key("carbon"), value=None, step=50.0, format="%.6g", placeholder="—"
    )
    st.number_input(
        _("Cached share of input at the API (%)"),
        key=key("api_cached"),
        value=None,
        step=10.0,
        format="%.4g",
        placeholder=_("as your traffic's cached share"),
    )
    st.caption(_("Sources of the defaults: docs/owning-energy-apis.md and catalog/data/owning.csv."))


def owning_section(result: TcoResult) -> None:
    """Rent or own, the energy estimate and the hosted APIs, below the fleet."""
    _own_or_rent(result.inputs)
    _energy(result.inputs, energy_of(result.inputs, result.fleet.replicas))
    _apis(result.inputs, compare_apis(result.inputs, result.capacity, result.fleet), result.tokens)


def _own_or_rent(inputs: TcoInputs) -> None:
    st.subheader(_("Rent or own"))
    hw, missing = owned_hardware(inputs)
    if hw is None:
        st.info(
            _(
                "No purchase price or GPU power on record for this GPU: enter a purchase price per GPU or per server "
                "(and the GPU's power for a custom GPU) under Owning, energy and hosted APIs to see what an owned "
                "GPU-hour costs. Missing: {missing}."
            ).format(missing=", ".join(f"`{alias}`" for alias in missing)),
            icon=":material/shopping_cart:",
        )
        return
    cur = inputs.currency
    cost = owned_cost(hw, inputs.price_per_gpu_hour, inputs.hours_per_month)
    cols = st.columns(4)
    cols[0].metric(
        _("Owned cost per GPU-hour"),
        _money(cost.per_used_gpu_hour, cur),
        border=True,
        help=_(
            "Per hour of use at {util}% fleet utilization; a year: capital {capital}, hosting {hosting}, power "
            "{power}, support {support}."
        ).format(
            util=f"{hw.utilization_pct:g}",
            capital=_money(cost.capital_per_gpu_year, cur),
            hosting=_money(cost.hosting_per_gpu_year, cur),
            power=_money(cost.electricity_per_gpu_year, cur),
            support=_money(cost.support_per_gpu_year, cur),
        ),
    )
    cols[1].metric(_("Rental price per GPU-hour"), _money(inputs.price_per_gpu_hour, cur), border=True)
    even = cost.break_even_utilization
    cols[2].metric(
        _("Owning beats renting from"),
        f"{even:.0%}" if even <= 1 else _("never"),
        border=True,
        help=_("The utilization above which an owned GPU costs less per hour of use than renting one."),
    )
    months = cost.payback_months
    cols[3].metric(
        _("Payback vs renting"),
        _("never") if months is None else _("{months} months").format(months=f"{months:,.1f}"),
        border=True,
        help=_("Purchase price / (rent saved per month at the fleet utilization - hosting, power and support)."),
    )
    row = catalog_purchase_price(inputs)
    if inputs.own_price_per_gpu is None and inputs.own_price_per_server is None and row is not None:
        st.caption(
            _("Purchase price {amount} per GPU ({note}; checked {date}). Source: {source}").format(
                amount=_money(hw.price_per_gpu, cur), note=_(row.note), date=row.checked, source=row.source
            )
        )


def _energy(inputs: TcoInputs, est: EnergyEstimate | None) -> None:
    st.subheader(_("Energy (estimated)"))
    if est is None:
        st.info(_("Enter the GPU's power (`gpu_w`) to estimate the energy of a custom GPU."), icon="💡")
        return
    cur = inputs.currency
    # three to a row: a value in Chinese with its unit (万 千瓦时) does not fit a quarter of the page
    cols = st.columns(3)
    cols[0].metric(_("Joules per output token"), f"{est.joules_per_output_token:,.3g} J", border=True)
    cols[1].metric(
        _("Energy per million output tokens"),
        _("{kwh} kWh").format(kwh=f"{est.kwh_per_million_output_tokens:,.3g}"),
        border=True,
    )
    cols[2].metric(
        _("Energy cost per million output tokens"),
        _money(est.energy_cost_per_million_output_tokens, cur),
        border=True,
        help=_("Included in a rental price; paid separately when you own the GPUs."),
    )
    cols = st.columns(3)
    cols[0].metric(
        _("Fleet energy per month"),
        _("{kwh} kWh").format(kwh=format_large(est.fleet_kwh_per_month, language())),
        border=True,
    )
    cols[1].metric(_("Fleet electricity per month"), _money(est.fleet_energy_cost_per_month, cur), border=True)
    carbon = est.kg_co2e_per_million_output_tokens
    cols[2].metric(
        _("kg CO2e per million output tokens"),
        "—" if carbon is None else f"{carbon:,.3g}",
        border=True,
        help=_("Enter the grid's carbon intensity (g CO2e per kWh) to see it."),
    )
    if est.fleet_kg_co2e_per_month is not None:
        st.columns(3)[0].metric(
            _("Fleet kg CO2e per month"), format_large(est.fleet_kg_co2e_per_month, language()), border=True
        )
    st.caption(
        _(
            "Estimate, not a meter reading: {gpus} x ({gpu_w} W x {draw}% + {overhead} W) x PUE {pue} = {wall} W at "
            "the wall per replica, divided by {tps} output tokens/s at full load; the fleet draws it every hour."
        ).format(
            gpus=inputs.gpus_per_replica,
            gpu_w=f"{gpu_power_w(inputs) or 0:g}",
            draw=f"{inputs.power_draw_pct:g}",
            overhead=f"{inputs.own_overhead_w_per_gpu:g}",
            pue=f"{inputs.pue:g}",
            wall=f"{est.wall_w_per_replica:,.0f}",
            tps=f"{inputs.output_tok_s_per_replica:,.6g}",
        )
    )


def _apis(inputs: TcoInputs, cmp: ApiComparison, tokens: TokensByKind) -> None:
    st.subheader(_("Hosted APIs at your traffic"))
    st.caption(
        _("APIs of {model}, the model of the throughput estimate (change it under Estimate throughput).").format(
            model=find_model(inputs.model).name
        )
    )
    if not cmp.options:
        st.info(_("No hosted-API price on record for this model."), icon="💡")
        return
    cur = inputs.currency
    best = cmp.cheapest_same or min(cmp.options, key=lambda o: o.cost_per_month)
    cols = st.columns(3)
    cols[0].metric(_("Self-hosted fleet per month"), _money(cmp.self_hosted_per_month, cur), border=True)
    cols[1].metric(
        _("Cheapest API per month"),
        _money(best.cost_per_month, cur),
        border=True,
        help=_("{provider}, {model}, at your traffic: {requests} requests a month.").format(
            provider=best.provider, model=best.api_model, requests=format_large(cmp.requests_per_month, language())
        ),
    )
    cols[2].metric(
        break_even_label(),
        break_even_value(best.break_even_requests_per_month, cmp.tokens_per_request),
        border=True,
        help=break_even_help(),
    )
    _api_table(cmp, cur, tokens)
    st.caption(
        _(
            "List prices from [LiteLLM's model price table]({url}) (MIT), snapshot of {date}. Refresh: `{command}`."
        ).format(date=best.snapshot_date, url=UPSTREAM_URL, command=REFRESH_COMMAND)
    )


def _self_hosted_row(cmp: ApiComparison, cur: str, tokens: TokensByKind) -> dict[str, str]:
    """The page's own cost per million tokens of each kind at your traffic, as a row beside the APIs'."""
    costs = tokens.at_traffic or tokens.full_load
    return {
        _("provider"): _("self-hosted (this page)"),
        _("API model"): "—",
        _("kind"): split_basis_text(tokens.split),
        _("input per million"): _money(costs.input_per_million, cur),
        _("cached input per million"): _money(costs.cached_input_per_million, cur),
        _("output per million"): _money(costs.output_per_million, cur),
        _("per month at your traffic"): _money(cmp.self_hosted_per_month, cur),
        break_even_column(): "—",
    }


def _api_table(cmp: ApiComparison, cur: str, tokens: TokensByKind) -> None:
    relation = {"same": _("same model"), "reference": _("reference")}
    table = pd.DataFrame(
        [
            _self_hosted_row(cmp, cur, tokens),
            *(
                {
                    _("provider"): o.provider,
                    _("API model"): o.api_model,
                    _("kind"): relation.get(o.relation, o.relation),
                    _("input per million"): _money(o.input_per_million, cur),
                    _("cached input per million"): _money(o.cached_input_per_million, cur),
                    _("output per million"): _money(o.output_per_million, cur),
                    _("per month at your traffic"): _money(o.cost_per_month, cur),
                    break_even_column(): break_even_value(o.break_even_requests_per_month, cmp.tokens_per_request),
                }
                for o in cmp.options
            ),
        ]
    )
    st.dataframe(table, hide_index=True)
    st.caption(
        _(
            "The first row is this page's own cost per million tokens of each kind at your traffic (at full load when "
            "there is no traffic): GPU time split by the basis it names, not a list price. An API's cached-input price "
            "is a business decision; the self-hosted one is the GPU time a cached token takes."
        )
    )
