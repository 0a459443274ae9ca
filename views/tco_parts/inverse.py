"""The cost page's inverse questions: the traffic a monthly budget serves, what a power budget runs."""

from collections.abc import Callable

import streamlit as st

from catalog import find_gpu
from i18n.numbers import format_large
from tco import CUSTOM_GPU, TcoResult, format_money
from tco.inverse import fleet_for_power, traffic_for_budget
from ui.lang import _, language


def inverse_inputs(key: Callable[[str], str]) -> None:
    """The sidebar's budget and power inputs (blank: not asked)."""
    st.number_input(
        _("Monthly budget (in the currency above)"),
        key=key("budget"),
        step=10_000.0,
        format="%.10g",
        help=_("The page answers the traffic (requests per day) this budget serves at your peak and utilization."),
    )
    st.text_input(
        _("Power budget (kW or MW)"),
        key=key("power"),
        placeholder="800 kW, 2 MW",
        help=_("The page answers the GPUs, tokens/s and concurrent users this power runs (GPU board power only)."),
    )


def inverse_answers(result: TcoResult) -> None:
    """The answers for the budget and the power given, each saying what it rests on."""
    inputs = result.inputs
    if inputs.budget_per_month is None and inputs.power_kw is None:
        return
    st.subheader(_("Working backwards"))
    if inputs.budget_per_month is not None:
        _budget(result, inputs.budget_per_month)
    power_kw = inputs.power_kw
    if power_kw is not None:
        _power(result, power_kw)


def _budget(result: TcoResult, budget: float) -> None:
    inputs, lang = result.inputs, language()
    answer = traffic_for_budget(
        budget, result.capacity, inputs.gpus_per_replica, inputs.peak_to_average, inputs.target_utilization
    )
    cols = st.columns(3)
    cols[0].metric(
        _("Traffic the budget serves"),
        _("{requests}/day").format(requests=format_large(answer.requests_per_day, lang)),
        border=True,
        help=f"{answer.requests_per_day:,.0f}",
    )
    cols[1].metric(_("Replicas it pays for"), f"{answer.replicas:,}", border=True)
    cols[2].metric(
        _("They cost per month"),
        format_money(answer.fleet_cost_per_month, inputs.currency, compact=True, language=lang),
        border=True,
    )
    st.caption(
        _(
            "{budget} a month pays for {replicas} whole replicas ({gpus} GPUs); at {util}% utilization at the peak "
            "and a peak {peak}× the average they serve this many requests a day."
        ).format(
            budget=format_money(budget, inputs.currency, language=lang),
            replicas=f"{answer.replicas:,}",
            gpus=f"{answer.gpus:,}",
            util=f"{inputs.target_utilization_pct:g}",
            peak=f"{inputs.peak_to_average:g}",
        )
    )


def _power(result: TcoResult, power_kw: float) -> None:
    inputs = result.inputs
    gpu = None if inputs.gpu == CUSTOM_GPU else find_gpu(inputs.gpu)
    if gpu is None or gpu.tdp_w is None:
        st.info(_("A power budget needs the GPU's rated power: pick a catalog GPU."), icon=":material/bolt:")
        return
    answer = fleet_for_power(
        power_kw, gpu.tdp_w, inputs.gpus_per_replica, inputs.output_tok_s_per_replica, inputs.tpot_p50_ms
    )
    cols = st.columns(3)
    cols[0].metric(_("GPUs the power runs"), f"{answer.gpus:,}", border=True)
    cols[1].metric(_("Output tokens/s (full load)"), f"{answer.output_tok_s:,.0f}", border=True)
    cols[2].metric(_("Concurrent users"), f"{answer.concurrent_users:,.0f}", border=True)
    st.caption(
        _(
            "{power} kW over {gpu} at {watts} W each (board power only: servers, cooling and network draw more), "
            "in whole replicas of {per} GPUs. Users: the tokens/s shared among streams that each get a token every "
            "{tpot} ms (the TPOT target)."
        ).format(
            power=f"{power_kw:,.6g}",
            gpu=gpu.name,
            watts=f"{gpu.tdp_w:g}",
            per=inputs.gpus_per_replica,
            tpot=f"{inputs.tpot_p50_ms:g}",
        )
    )
