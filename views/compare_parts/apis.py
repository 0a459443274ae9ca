"""The comparison's hosted-API line: the top option's fleet beside the model's APIs at the traffic, and its energy."""

import streamlit as st

from catalog.api_prices import UPSTREAM_URL
from tco import format_money
from tco.api_compare import ApiOption, compare_apis
from tco.cost import capacity_of, fleet_of
from tco.energy import energy_of
from tco.ranking import Ranking
from tco.tokens import TokensByKind
from ui.break_even import break_even_help, break_even_label, break_even_value
from ui.lang import _, language
from ui.token_table import split_basis_text

REFRESH_COMMAND = "python -m tco api-prices refresh"


def api_line(ranking: Ranking) -> None:
    """Self-hosting the top option against the cheapest hosted API of the model, at the page's traffic."""
    top = ranking.top
    if top is None:
        return
    inputs = top.tco_inputs
    cap = capacity_of(inputs)
    fleet = fleet_of(inputs, cap)
    cmp = compare_apis(inputs, cap, fleet)
    st.subheader(_("Hosted APIs beside the top option"))
    if not cmp.options:
        st.caption(_("No hosted-API price on record for this model."))
        return
    best = cmp.cheapest_same or min(cmp.options, key=lambda o: o.cost_per_month)
    cur = inputs.currency
    cols = st.columns(3)  # three to a row: the break-even volume in Chinese (每月 22亿 token) needs a third
    cols[0].metric(
        _("Top option's fleet per month"),
        format_money(fleet.fleet_cost_per_month, cur, language=language()),
        border=True,
    )
    cols[1].metric(
        _("Cheapest API per month"),
        format_money(best.cost_per_month, cur, language=language()),
        border=True,
        help=f"{best.provider}, {best.api_model}",
    )
    cols[2].metric(
        break_even_label(),
        break_even_value(best.break_even_requests_per_month, inputs.total_tokens_per_request),
        border=True,
        help=break_even_help(),
    )
    est = energy_of(inputs, fleet.replicas)
    if est is not None:
        st.columns(2)[0].metric(  # its label, in words, needs half the row
            _("Energy per million output tokens (estimated)"),
            _("{kwh} kWh").format(kwh=f"{est.kwh_per_million_output_tokens:,.3g}"),
            border=True,
            help=_("From rated power x PUE over the option's output tokens/s; the cost page shows the basis."),
        )
    if top.tokens is not None:
        _token_prices(top.tokens, best, cur)
    st.caption(
        _(
            "List prices from [LiteLLM's model price table]({url}) (MIT), snapshot of {date}. Refresh: `{command}`. "
            "Every API of the model, owning and energy: the top option's cost page."
        ).format(url=UPSTREAM_URL, date=best.snapshot_date, command=REFRESH_COMMAND)
    )


def _token_prices(tokens: TokensByKind, best: ApiOption, cur: str) -> None:
    """The top option's input / cached / output price per million tokens at the traffic, beside the cheapest API's."""
    mine = tokens.at_traffic or tokens.full_load

    def money(amount: float | None) -> str:
        return "—" if amount is None else format_money(amount, cur, language=language())

    st.caption(
        _(
            "Per million tokens at your traffic, input / cached input / output: the top option {mine} "
            "({basis}); {provider} {model} {api}."
        ).format(
            mine=" / ".join(
                money(v) for v in (mine.input_per_million, mine.cached_input_per_million, mine.output_per_million)
            ),
            basis=split_basis_text(tokens.split),
            provider=best.provider,
            model=best.api_model,
            api=" / ".join(
                money(v) for v in (best.input_per_million, best.cached_input_per_million, best.output_per_million)
            ),
        )
    )
