"""Cost calculator: GPU price and traffic in; cost per request, per million tokens, per month and year out."""

import pandas as pd
import streamlit as st

from catalog import find_gpu, load_gpus, load_handbook
from perf import ENGINE_FAMILIES, PerfError
from selector import AUTO, get_engine, load_models, load_quant_methods
from selector.quantization import get_quant
from tco import CUSTOM_GPU, TcoInputs, TcoResult, convert, estimate, format_money
from tco.figures import cost_vs_throughput, lever_waterfall, sensitivity_tornado
from tco.inputs import TpsSource, catalog_price
from tco.throughput import OperatingPoint, estimate_tps
from ui.calibration import stored_calibrations
from ui.errors import guarded, show_errors
from ui.params import aliases, validate_params
from ui.scenarios import load_scenario_params, scenario_panel
from ui.state import PageState

PAGE = "tco"
state = PageState(PAGE, TcoInputs, load_base=load_scenario_params(PAGE))
K = state.key
_PREV_CURRENCY = "_tco.prev_currency"
_SEED = load_handbook().seed_benchmark
_APPLIED = "_tco.estimate_applied"  # what the last "Apply the estimate" said: ("success" | "error", text)


def _on_gpu_change() -> None:
    price = catalog_price(st.session_state[K("gpu")], st.session_state[K("currency")], st.session_state[K("fx")])
    if price is not None:
        st.session_state[K("price")] = price


def _on_currency_change() -> None:
    previous = st.session_state.get(_PREV_CURRENCY, st.session_state[K("currency")])
    price = st.session_state.get(K("price"))
    if isinstance(price, (int, float)) and previous != st.session_state[K("currency")]:
        st.session_state[K("price")] = round(
            convert(price, previous, st.session_state[K("currency")], st.session_state[K("fx")]), 4
        )


def _gpu_label(gpu_id: str) -> str:
    if gpu_id == CUSTOM_GPU:
        return "Custom GPU (enter its price)"
    gpu = find_gpu(gpu_id)
    return f"{gpu.name} · {gpu.memory_gb:g} GB"


def _inputs_form() -> None:
    st.subheader("Scenario")
    gpu_ids = [g.id for g in load_gpus()] + [CUSTOM_GPU]
    st.selectbox(
        "GPU",
        gpu_ids,
        key=K("gpu"),
        format_func=_gpu_label,
        on_change=_on_gpu_change,
        help="Picking a GPU fills in its lowest public on-demand price; edit it freely.",
    )
    gpu_id = st.session_state.get(K("gpu"))
    if gpu_id and gpu_id != CUSTOM_GPU:
        gpu = find_gpu(gpu_id)
        if gpu.has_price:
            st.caption(
                f"Public price: {gpu.price_low:g}–{gpu.price_high:g} {gpu.price_currency}/GPU-hour "
                f"({gpu.price_date}). Source: {gpu.price_source}"
            )
        else:
            st.caption(f"No public hourly price on record for {gpu.name} ({gpu.price_note}); enter yours.")
    left, right = st.columns(2)
    left.segmented_control("Currency", ["CNY", "USD"], key=K("currency"), on_change=_on_currency_change, required=True)
    right.number_input(
        "Exchange rate (CNY per USD)", key=K("fx"), step=0.01, format="%.4g", help=f"{load_handbook().fx.source}"
    )
    left, right = st.columns(2)
    left.number_input("Price per GPU-hour (in the currency above)", key=K("price"), step=0.1, format="%.4g")
    right.number_input(
        "GPUs per replica", key=K("gpus"), step=1, help="GPUs serving one model copy (tensor parallel size)."
    )
    measured_rps = st.session_state.get(K("rps"))
    st.number_input(
        "Throughput per replica (output tokens/s)",
        key=K("tps"),
        step=10.0,
        format="%.6g",
        on_change=_on_tps_change,
        disabled=bool(measured_rps),
        help="Measured at your serving concurrency; the handbook's A800 reached 588 tok/s at 16. "
        "Or fill it from an estimate (below).",
    )
    if measured_rps:
        rate, _, run_id = str(measured_rps).partition("@")
        st.caption(
            f":material/speed: Capacity: **measured** {rate} requests/s per replica within the SLO"
            + (f" (probe run `{run_id}`)" if run_id else "")
            + "; the throughput is that rate x output tokens per request."
        )
        st.button("Enter throughput instead", key="tco.drop_rps", on_click=_drop_rps, icon=":material/edit:")
    elif st.session_state.get(K("tps_source")) == TpsSource.ESTIMATE.value:
        st.caption(":material/query_stats: Throughput source: **estimate** (band and basis on the page).")
    elif st.session_state.get(K("tps")) == _SEED.output_tok_s and st.session_state.get(K("gpu")) == _SEED.gpu:
        st.caption(
            f"Throughput source: the handbook's **measured** run ({_SEED.model}, {_SEED.engine}, concurrency "
            f"{_SEED.concurrency}). For another model or engine, estimate it below or cost a probe run."
        )
    with st.expander("Estimate throughput", icon=":material/query_stats:"):
        _estimate_inputs()
    left, right = st.columns(2)
    left.number_input("Output tokens per request", key=K("out_tokens"), step=10)
    right.number_input("Input tokens per request", key=K("in_tokens"), step=50)
    st.number_input(
        "Hours per month (h)",
        key=K("hours"),
        step=10.0,
        format="%.6g",
        help="730 = 8,760 h / 12 (most cloud bills); the handbook uses 720 (30 days).",
    )
    st.subheader("Traffic")
    st.number_input("Traffic (requests per day)", key=K("traffic"), step=10_000.0, format="%.10g")
    left, right = st.columns(2)
    left.number_input(
        "Peak-to-average ratio (×)",
        key=K("peak"),
        step=0.1,
        format="%.4g",
        help="Peak requests/s divided by the daily average; at least 1.",
    )
    right.number_input(
        "Target utilization (%)",
        key=K("util"),
        step=5.0,
        format="%.4g",
        help="How busy a replica may run at peak; above 0 and at most 100.",
    )
    with st.expander("Optimization levers (handbook Q5)", icon=":material/tune:"):
        _lever_inputs()


def _drop_rps() -> None:
    """Button callback: forget the measured request rate; the throughput is typed again."""
    st.session_state[K("rps")] = None


def _on_tps_change() -> None:
    """A throughput typed by hand is the user's own, no longer the estimate."""
    st.session_state[K("tps_source")] = TpsSource.ENTERED.value
    st.session_state.pop(_APPLIED, None)


def _apply_estimate() -> None:
    """Button callback: estimate the scenario's GPU x count, model, engine and tokens; fill in the throughput."""
    values = {alias: st.session_state.get(K(alias)) for alias in aliases(TcoInputs).values()}
    inputs, errors, _ = validate_params(TcoInputs, values, source="form")
    if errors:
        st.session_state[_APPLIED] = ("error", "Fix the inputs first: " + " ".join(errors))
        return
    try:
        point = estimate_tps(inputs, stored_calibrations())
    except PerfError as exc:
        st.session_state[_APPLIED] = ("error", f"No estimate: {exc}")
        return
    st.session_state[K("tps")] = point.output_tok_s
    st.session_state[K("tps_source")] = TpsSource.ESTIMATE.value
    st.session_state[_APPLIED] = ("success", f"Applied {point.output_tok_s:,.6g} tok/s: {_point_text(point)}")


def _point_text(point: OperatingPoint) -> str:
    where = (
        f"at concurrency {point.concurrency}, the highest within the SLO"
        if point.meets_slo
        else "at concurrency 1: it misses the SLO even there"
    )
    return f"{where}; {point.label}"


def _estimate_inputs() -> None:
    gpu_id = st.session_state.get(K("gpu"))
    gpus = st.session_state.get(K("gpus"))
    if gpu_id == CUSTOM_GPU:
        st.caption("Pick a catalog GPU above to estimate its throughput.")
    elif gpu_id:
        st.caption(
            f"For {gpus}x {find_gpu(gpu_id).name} and this form's input and output tokens per request, at the highest "
            "concurrency within the SLO."
        )
    models = [m.id for m in load_models()]
    names = {m.id: f"{m.name} · {m.params_b:g}B" for m in load_models()}
    st.selectbox("Model", models, key=K("model"), format_func=names.__getitem__)
    st.selectbox("Engine", list(ENGINE_FAMILIES), key=K("engine"), format_func=lambda e: get_engine(e).name)
    quants = {q.id: q.name for q in load_quant_methods()}
    st.selectbox(
        "Quantization",
        [AUTO, *quants],
        key=K("quant_method"),
        format_func=lambda q: "auto (the advisor's choice)" if q == AUTO else quants[q],
    )
    cols = st.columns(3)
    cols[0].number_input("TTFT p50 (ms)", key=K("ttft_p50"), step=50.0, format="%.6g")
    cols[1].number_input("TTFT p99 (ms)", key=K("ttft_p99"), step=100.0, format="%.6g")
    cols[2].number_input("TPOT p50 (ms)", key=K("tpot_p50"), step=5.0, format="%.6g")
    st.button("Apply the estimate", key="tco.apply_estimate", on_click=_apply_estimate, icon=":material/bolt:")
    applied = st.session_state.get(_APPLIED)
    if applied is not None:
        level, text = applied
        (st.success if level == "success" else st.error)(text, icon="✅" if level == "success" else "🚫")


def _estimate_note(inputs: TcoInputs) -> None:
    """When the throughput is an estimate, say so on the page with its band and basis (and when it is stale)."""
    if inputs.tps_source != TpsSource.ESTIMATE:
        return
    try:
        point = estimate_tps(inputs, stored_calibrations())
    except PerfError as exc:
        st.warning(
            f"The throughput is marked as an estimate, but these inputs have none ({exc}); treat "
            f"{inputs.output_tok_s_per_replica:,.6g} tok/s as entered.",
            icon="⚠️",
        )
        return
    engine = get_engine(inputs.engine).name
    quant = get_quant(point.estimate.quant).name
    text = (
        f"Throughput {inputs.output_tok_s_per_replica:,.6g} tok/s per replica is an {point.label}. "
        f"{point.estimate.model_name} on {inputs.gpus_per_replica}x {point.estimate.gpu_name} with {engine}, {quant}, "
        f"{_point_text(point).split(';')[0]}."
    )
    if abs(point.output_tok_s - inputs.output_tok_s_per_replica) > 0.005 * point.output_tok_s:
        text += (
            f" For the inputs now on the page the estimate is {point.output_tok_s:,.6g} tok/s: "
            "apply it again under Estimate throughput."
        )
    st.info(text, icon=":material/query_stats:")


def _measured_note(inputs: TcoInputs) -> None:
    """A measured request rate (`rps`) says so, naming the probe run when the link does."""
    rps = inputs.requests_per_s_per_replica
    if rps is None:
        return
    run = f"probe run `{inputs.rps_run_id}`" if inputs.rps_run_id else "a probe run (not named in the link)"
    st.info(
        f"Capacity per replica is **measured**: {rps:,.6g} requests/s within the SLO, by {run}. With "
        f"{inputs.out_tokens_per_request:,} output tokens per request that is "
        f"{inputs.output_tok_s_per_replica:,.6g} output tokens/s.",
        icon=":material/speed:",
    )


def _lever_inputs() -> None:
    st.toggle("Quantization (AWQ / FP8)", key=K("quant"))
    st.number_input("Throughput gain (%)", key=K("quant_gain"), step=5.0, format="%.4g")
    st.toggle("Prefix caching", key=K("prefix"))
    left, right = st.columns(2)
    left.number_input("Prompt reuse (%)", key=K("reuse"), step=5.0, format="%.4g")
    right.number_input(
        "Prefill share of GPU time (%)",
        key=K("prefill_share"),
        step=1.0,
        format="%.4g",
        help=load_handbook().levers.prefix_caching.source,
    )
    st.toggle("Speculative decoding", key=K("spec"))
    left, mid, right = st.columns(3)
    left.number_input("Acceptance (%)", key=K("accept"), step=5.0, format="%.4g")
    mid.number_input("Draft tokens", key=K("spec_tokens"), step=1)
    right.number_input(
        "Break-even (%)",
        key=K("spec_break_even"),
        step=5.0,
        format="%.4g",
        help=load_handbook().levers.speculative_decoding.source,
    )
    st.toggle("Distillation (e.g. 7B → 3B)", key=K("distill"))
    st.number_input("Cost cut (%)", key=K("distill_cut"), step=5.0, format="%.4g")
    st.toggle("Spot GPUs", key=K("spot"))
    st.number_input("Spot price cut (%)", key=K("spot_cut"), step=5.0, format="%.4g")


def _headline(result: TcoResult) -> None:
    cur = result.inputs.currency
    cap, fleet = result.capacity, result.fleet
    st.subheader("One replica at full load")
    cols = st.columns(4)
    cols[0].metric("Cost per request", format_money(cap.cost_per_request, cur), border=True)
    cols[1].metric("Per million output tokens", format_money(cap.cost_per_million_output_tokens, cur), border=True)
    cols[2].metric("Per million tokens (in + out)", format_money(cap.cost_per_million_total_tokens, cur), border=True)
    cols[3].metric(
        "Per replica per month",
        format_money(cap.cost_per_replica_month, cur),
        border=True,
        help=f"{format_money(cap.cost_per_replica_year, cur)} per year",
    )
    cols = st.columns(4)
    cols[0].metric("Seconds of output per request", f"{cap.seconds_of_output_per_request:.2f} s", border=True)
    cols[1].metric("Requests/s per replica", f"{cap.requests_per_s:,.2f}", border=True)
    cols[2].metric("Requests/day per replica", f"{cap.requests_per_day:,.0f}", border=True)
    cols[3].metric("Per replica per year", format_money(cap.cost_per_replica_year, cur), border=True)
    st.subheader("Your traffic")
    cols = st.columns(4)
    cols[0].metric(
        "Replicas at peak",
        f"{fleet.replicas:,}",
        border=True,
        help=f"peak {fleet.peak_requests_per_s:,.2f} req/s at {result.inputs.target_utilization_pct:g}% "
        "target utilization",
    )
    cols[1].metric("GPUs needed", f"{fleet.gpus:,}", border=True)
    cols[2].metric(
        "Fleet per month",
        format_money(fleet.fleet_cost_per_month, cur, compact=True),
        border=True,
        help=f"{format_money(fleet.fleet_cost_per_year, cur)} per year",
    )
    cols[3].metric(
        "Fleet per year",
        format_money(fleet.fleet_cost_per_year, cur, compact=True),
        border=True,
        help=format_money(fleet.fleet_cost_per_year, cur),
    )
    cols = st.columns(4)
    util = fleet.utilization_at_average
    cols[0].metric("Utilization at average traffic", "—" if util is None else f"{util:.0%}", border=True)
    cols[1].metric(
        "Effective cost per request",
        format_money(fleet.effective_cost_per_request, cur),
        border=True,
        help="Fleet cost divided by the requests actually served: idle capacity is paid for.",
    )
    cols[2].metric("Average requests/s", f"{fleet.average_requests_per_s:,.2f}", border=True)
    cols[3].metric("Peak requests/s", f"{fleet.peak_requests_per_s:,.2f}", border=True)


def _levers_tab(result: TcoResult) -> None:
    cur = result.inputs.currency
    chain = result.levers
    cols = st.columns(3)
    cols[0].metric("Optimized cost per request", format_money(chain.optimized.cost_per_request, cur), border=True)
    cols[1].metric(
        "Optimized fleet per year",
        format_money(chain.optimized_fleet.fleet_cost_per_year, cur, compact=True),
        border=True,
    )
    cols[2].metric(
        "Saved per year at your traffic", format_money(chain.saving_per_year, cur, compact=True), border=True
    )
    st.plotly_chart(lever_waterfall(result), key="tco.fig.waterfall")
    table = pd.DataFrame(
        [
            {
                "lever": s.label,
                "on": s.enabled,
                "effect": s.effect,
                "cost per request after": format_money(s.cost_per_request_after, cur) if s.enabled else "",
                "saved per request": format_money(s.saving_per_request, cur) if s.enabled else "",
                "replicas after": s.replicas_after if s.enabled else None,
                "saved per year": format_money(s.saving_per_year, cur) if s.enabled else "",
                "source": s.source,
            }
            for s in chain.steps
        ]
    )
    st.dataframe(table, hide_index=True)


def body() -> None:
    """Draw the page."""
    st.title("What will it cost?")
    st.caption(
        "The handbook's arithmetic (section 2.4, Q5): throughput and price in; cost per request, per million "
        "tokens, per month and year out. The URL keeps every input: share it to share the scenario."
    )
    state.load()
    st.session_state.setdefault(_PREV_CURRENCY, st.session_state[K("currency")])
    state.show_notes()
    with st.sidebar:
        _inputs_form()
    st.session_state[_PREV_CURRENCY] = st.session_state[K("currency")]
    inputs, errors = state.read()
    if inputs is None:
        show_errors("Check these inputs; the results update once they are valid.", errors)
        return
    result = estimate(inputs)
    _estimate_note(inputs)
    _measured_note(inputs)
    _headline(result)
    for note in result.notes:
        st.info(note, icon="💡")
    levers, sens, curve = st.tabs(["Optimization levers", "Sensitivity", "Cost vs throughput"])
    with levers:
        _levers_tab(result)
    with sens:
        st.plotly_chart(sensitivity_tornado(result), key="tco.fig.tornado")
    with curve:
        st.plotly_chart(cost_vs_throughput(result, load_handbook().slo.min_output_tok_s_per_gpu), key="tco.fig.curve")
    scenario_panel(PAGE, "/tco", inputs, state.mark_scenario)


guarded(body)
