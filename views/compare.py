"""Compare options: model, traffic and SLO in; every GPU x count x engine x quantization ranked by estimated cost."""

from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from perf import ENGINE_FAMILIES
from selector import get_engine, load_models
from tco import format_money
from tco.compare_figures import cost_latency_figure
from tco.ranking import (
    GPU_COUNTS,
    PRICE_SEPARATOR,
    CompareInputs,
    LatencyAxis,
    RankBy,
    RankedOption,
    Ranking,
    rank,
    reordered,
)
from ui.calibration import stored_calibrations
from ui.errors import guarded, show_errors
from ui.params import LIST_SEPARATOR, to_params
from ui.state import PageState, plain_widget_value

PAGE = "compare"
_RANKING = "_compare.ranking"  # the last ranking: a change of ordering or chart axis reuses it
_DETAIL = "compare.detail"
_RANK_LABELS = {RankBy.PER_MILLION.value: "Cost per 1M tokens", RankBy.FLEET.value: "Fleet per month"}
_RANKED_BY = {RankBy.PER_MILLION: "cost per million output tokens", RankBy.FLEET: "monthly fleet cost"}
_AXIS_LABELS = {LatencyAxis.TPOT.value: "TPOT p50", LatencyAxis.TTFT.value: "TTFT p50"}


def _to_widget(alias: str, value: object) -> object:
    if alias == "prices" and isinstance(value, tuple):
        return LIST_SEPARATOR.join(value)
    return plain_widget_value(alias, value)


state = PageState(PAGE, CompareInputs, to_widget=_to_widget)
K = state.key


def tco_link(option: RankedOption) -> str:
    """The /tco page with this option filled in (from the cost page's own input model)."""
    return "/tco?" + urlencode(to_params(option.tco_inputs))


def selector_link(option: RankedOption) -> str:
    """The /selector page with this option pinned (from the advisor's own input model)."""
    return "/selector?" + urlencode(to_params(option.advice_request))


def _model_label(model_id: str) -> str:
    model = next(m for m in load_models() if m.id == model_id)
    return f"{model.name} · {model.params_b:g}B"


def _inputs_form() -> None:
    st.subheader("Model and traffic")
    st.selectbox("Model", [m.id for m in load_models()], key=K("model"), format_func=_model_label)
    st.number_input("Traffic (requests per day)", key=K("traffic"), step=10_000.0, format="%.10g")
    left, right = st.columns(2)
    left.number_input("Peak-to-average ratio (×)", key=K("peak"), step=0.1, format="%.4g")
    right.number_input("Target utilization (%)", key=K("util"), step=5.0, format="%.4g")
    left, right = st.columns(2)
    left.number_input("Input tokens per request", key=K("in_tokens"), step=50)
    right.number_input("Output tokens per request", key=K("out_tokens"), step=10)
    st.subheader("SLO")
    cols = st.columns(3)
    cols[0].number_input("TTFT p50 (ms)", key=K("ttft_p50"), step=50.0, format="%.6g")
    cols[1].number_input("TTFT p99 (ms)", key=K("ttft_p99"), step=100.0, format="%.6g")
    cols[2].number_input("TPOT p50 (ms)", key=K("tpot_p50"), step=5.0, format="%.6g")
    st.subheader("Prices")
    left, right = st.columns(2)
    left.segmented_control("Currency", ["CNY", "USD"], key=K("currency"), required=True)
    right.number_input("Exchange rate (CNY per USD)", key=K("fx"), step=0.01, format="%.4g")
    st.text_input(
        "Price overrides",
        key=K("prices"),
        placeholder="h100:2.5, a800:12",
        help=f"<gpu>{PRICE_SEPARATOR}<price per GPU-hour in the currency above>, comma-separated. Other GPUs use "
        "their lowest public price from the catalog; a GPU without one is left out unless priced here.",
    )
    with st.expander("Options to consider", icon=":material/filter_list:"):
        st.multiselect("Engines", list(ENGINE_FAMILIES), key=K("engines"), format_func=lambda e: get_engine(e).name)
        st.pills("GPU counts", list(GPU_COUNTS), key=K("counts"), selection_mode="multi")


def _view_controls() -> None:
    left, right = st.columns(2)
    left.segmented_control(
        "Rank by", list(_RANK_LABELS), key=K("rank_by"), format_func=_RANK_LABELS.__getitem__, required=True
    )
    right.segmented_control(
        "Chart latency", list(_AXIS_LABELS), key=K("latency"), format_func=_AXIS_LABELS.__getitem__, required=True
    )


def _ranking(inputs: CompareInputs) -> Ranking:
    """Rank (with a progress bar), or reorder the last ranking when only the ordering or the axis changed."""
    last: Ranking | None = st.session_state.get(_RANKING)
    if last is not None and last.inputs.priced_inputs == inputs.priced_inputs:
        return reordered(last, inputs)
    bar = st.progress(0.0, text="Estimating each option…")
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = done * 100 // max(total, 1)
        if percent != shown[0]:
            shown[0] = percent
            bar.progress(percent / 100, text=f"Estimating option {done:,} of {total:,}…")

    ranking = rank(inputs, calibrations=stored_calibrations(), progress=progress)
    bar.empty()
    st.session_state[_RANKING] = ranking
    return ranking


def _headline(ranking: Ranking) -> None:
    top = ranking.top
    assert top is not None
    cur = ranking.inputs.currency
    verdict = "meets the SLO" if top.meets_slo else "no option meets the SLO; this one misses it least expensively"
    st.subheader(f":material/trophy: {top.label}")
    st.caption(
        f"Rank 1 of {len(ranking.options):,} by {_RANKED_BY[ranking.inputs.rank_by]}: {verdict}. Every figure is an "
        "estimate."
    )
    cols = st.columns(4)
    cols[0].metric(
        "Per million output tokens",
        format_money(top.cost_per_million_output_tokens, cur),
        border=True,
        help=f"at {top.price_per_gpu_hour:g} {cur.value}/GPU-hour"
        + (" (your price)" if top.price_overridden else " (lowest public price)"),
    )
    cols[1].metric("Fleet per month", format_money(top.fleet_cost_per_month, cur, compact=True), border=True)
    cols[2].metric(
        "GPUs needed",
        f"{top.total_gpus:,}",
        border=True,
        help=f"{top.replicas:,} replicas × {top.gpus_per_replica} GPUs at the peak",
    )
    cols[3].metric(
        "Tok/s per replica (estimate)",
        f"{top.output_tok_s:,.0f} tok/s",
        border=True,
        help=f"at concurrency {top.concurrency}, the highest within the SLO",
    )
    cols = st.columns(4)
    cols[0].metric("TTFT p50 (estimate)", f"{top.ttft_p50_ms:,.0f} ms", border=True)
    cols[1].metric("TTFT p99 (estimate)", "—" if top.ttft_p99_ms is None else f"{top.ttft_p99_ms:,.0f} ms", border=True)
    cols[2].metric("TPOT p50 (estimate)", f"{top.tpot_p50_ms:,.1f} ms", border=True)
    cols[3].metric("Concurrency per replica", f"{top.concurrency:,}", border=True)
    _band_and_basis(top)
    _links(top)


def _band_and_basis(option: RankedOption) -> None:
    st.caption(
        f"Estimate: 8 in 10 held-out measurements fell within {option.band_low:.2f}–{option.band_high:.2f}× of "
        f"the estimate ({option.band_group}). Basis ({option.basis_kind}): {option.basis_text}."
    )


def _links(option: RankedOption) -> None:
    left, right = st.columns(2)
    left.page_link(
        "views/tco.py",
        label="Price this in the cost calculator",
        icon=":material/payments:",
        query_params=to_params(option.tco_inputs),
    )
    right.page_link(
        "views/selector.py",
        label="Open in the engine advisor",
        icon=":material/tune:",
        query_params=to_params(option.advice_request),
    )


def _table(ranking: Ranking) -> None:
    cur = ranking.inputs.currency.value
    rows = [
        {
            "rank": o.rank,
            "GPU": o.gpu_name,
            "GPUs per replica": o.gpus_per_replica,
            "replicas": o.replicas,
            "GPUs in all": o.total_gpus,
            "engine": o.engine_name,
            "quantization": o.quant_name,
            f"per 1M output tokens ({cur})": o.cost_per_million_output_tokens,
            f"fleet per month ({cur})": o.fleet_cost_per_month,
            "SLO": "meets" if o.meets_slo else "misses SLO",
            "concurrency": o.concurrency,
            "TTFT p50 ms": o.ttft_p50_ms,
            "TTFT p99 ms": o.ttft_p99_ms,
            "TPOT p50 ms": o.tpot_p50_ms,
            "tok/s per replica": o.output_tok_s,
            "band": f"{o.band_low:.2f}–{o.band_high:.2f}×",
            "basis": o.basis_kind,
            f"price per GPU-hour ({cur})": o.price_per_gpu_hour,
            "cost calculator": tco_link(o),
            "engine advisor": selector_link(o),
            "basis detail": o.basis_text,
        }
        for o in ranking.options
    ]
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        key="compare.table",
        column_config={
            f"per 1M output tokens ({cur})": st.column_config.NumberColumn(format="%.4g"),
            f"fleet per month ({cur})": st.column_config.NumberColumn(format="localized"),
            "TTFT p50 ms": st.column_config.NumberColumn(format="%.0f"),
            "TTFT p99 ms": st.column_config.NumberColumn(format="%.0f"),
            "TPOT p50 ms": st.column_config.NumberColumn(format="%.1f"),
            "tok/s per replica": st.column_config.NumberColumn(format="%.0f"),
            "cost calculator": st.column_config.LinkColumn(display_text="open /tco"),
            "engine advisor": st.column_config.LinkColumn(display_text="open /selector"),
        },
    )


def _details(ranking: Ranking) -> None:
    options = {o.rank: o for o in ranking.options}
    if st.session_state.get(_DETAIL) not in options:
        st.session_state[_DETAIL] = 1
    chosen = st.selectbox("Option", list(options), key=_DETAIL, format_func=lambda r: f"#{r} {options[r].label}")
    option = options[chosen]
    cur = ranking.inputs.currency
    cols = st.columns(4)
    cols[0].metric("Per million output tokens", format_money(option.cost_per_million_output_tokens, cur), border=True)
    cols[1].metric("Fleet per month", format_money(option.fleet_cost_per_month, cur, compact=True), border=True)
    cols[2].metric("Band (estimate)", f"{option.band_low:.2f}–{option.band_high:.2f}×", border=True)
    cols[3].metric("Basis", option.basis_kind, border=True)
    _band_and_basis(option)
    _links(option)


def _left_out(ranking: Ranking) -> None:
    with st.expander(f"Considered {ranking.considered:,} combinations; ranked {len(ranking.options):,}"):
        for reason, count in sorted(ranking.skipped.items(), key=lambda item: -item[1]):
            st.markdown(f"- {reason}: {count:,}")
        st.caption(
            "Every catalog GPU with a price × GPU count × engine with a step-time model × quantization the advisor "
            "allows on it; each kept option is estimated at the SLO operating point (the highest concurrency "
            "within the SLO) and priced with the cost calculator's arithmetic."
        )


def body() -> None:
    """Draw the page."""
    st.title("Which option is cheapest?")
    st.caption(
        "Every GPU in the catalog × 1, 2, 4, 8 GPUs × engine × quantization the advisor allows, estimated at the "
        "highest load within your SLO and priced for your traffic at its peak. Every figure here is an estimate, "
        "with its band and basis. The URL keeps every input."
    )
    state.load()
    state.show_notes()
    with st.sidebar:
        _inputs_form()
    _view_controls()
    inputs, errors = state.read()
    if inputs is None:
        show_errors("Check these inputs; the ranking updates once they are valid.", errors)
        return
    ranking = _ranking(inputs)
    if not ranking.options:
        st.warning(
            "No option fits this model on 1–8 GPUs of a priced catalog GPU with these engines; see what was left "
            "out below.",
            icon="⚠️",
        )
        _left_out(ranking)
        return
    _headline(ranking)
    table, chart, detail = st.tabs(["Ranking", "Cost vs latency", "Option details"])
    with table:
        _table(ranking)
    with chart:
        st.plotly_chart(cost_latency_figure(ranking, inputs.latency), key="compare.fig.cost_latency")
    with detail:
        _details(ranking)
    _left_out(ranking)


guarded(body)
