"""Cost calculator: GPU price and traffic in; cost per request, per million tokens, per month and year out."""

import streamlit as st

from catalog import AUTO, find_gpu, get_engine, load_gpus, load_handbook, load_models, load_quant_methods
from perf import ENGINE_FAMILIES, PerfError
from perf.coefficients import newest_release
from perf.hardware import modelled
from tco import CUSTOM_GPU, TcoInputs, convert, estimate
from tco.figures import cost_vs_throughput, lever_waterfall, sensitivity_tornado
from tco.inputs import TpsSource, catalog_price
from tco.lever_basis import WHAT_IF_LEVERS
from tco.throughput import estimate_tps
from tco.token_split import phases_for
from ui.calibration import stored_calibrations
from ui.concepts import concept_note
from ui.errors import guarded, show_errors
from ui.first_paint import after_headline, stopped_at_headline
from ui.lang import _, language
from ui.names import unmodelled_gpu_note
from ui.npu_measurements import npu_measurements
from ui.params import aliases, validate_params
from ui.resources import price_book
from ui.scenarios import load_scenario_params, scenario_panel
from ui.state import PageState
from ui.token_table import split_inputs
from views.tco_parts.inverse import inverse_answers, inverse_inputs
from views.tco_parts.notes import estimate_note, measured_note, point_text
from views.tco_parts.owning import owning_inputs, owning_section
from views.tco_parts.price_gate import fill_link_price, price_missing
from views.tco_parts.prices import price_record, refresh_button
from views.tco_parts.results import capacity_and_fleet, headline, levers_tab
from views.tco_parts.tokens import tokens_by_kind

PAGE = "tco"
state = PageState(PAGE, TcoInputs, load_base=load_scenario_params(PAGE))
K = state.key
_PREV_CURRENCY = "_tco.prev_currency"
_SEED = load_handbook().seed_benchmark
TABS = "_tco.tab"  # the open tab of the results (lazy: the others do not run)
_APPLIED = "_tco.estimate_applied"  # what the last "Apply the estimate" said: ("success" | "error", text)


def _on_gpu_change() -> None:
    """The new GPU's own price, or none (the page asks for one rather than keep the last GPU's)."""
    st.session_state[K("price")] = catalog_price(
        st.session_state[K("gpu")], st.session_state[K("currency")], st.session_state[K("fx")], book=price_book()
    )


def _on_currency_change() -> None:
    previous = st.session_state.get(_PREV_CURRENCY, st.session_state[K("currency")])
    price = st.session_state.get(K("price"))
    if isinstance(price, (int, float)) and previous != st.session_state[K("currency")]:
        st.session_state[K("price")] = round(
            convert(price, previous, st.session_state[K("currency")], st.session_state[K("fx")]), 4
        )


def _gpu_label(gpu_id: str) -> str:
    if gpu_id == CUSTOM_GPU:
        return _("Custom GPU (enter its price)")
    gpu = find_gpu(gpu_id)
    return f"{gpu.name} · {gpu.memory_gb:g} GB"


def _inputs_form() -> None:
    """The sidebar's form, group by group: GPU, price, throughput, requests, traffic, levers."""
    st.subheader(_("Scenario"))
    _gpu_input()
    _price_inputs()
    _throughput_input()
    with st.expander(_("Estimate throughput"), icon=":material/query_stats:"):
        _estimate_inputs()
    _request_inputs()
    st.subheader(_("Traffic"))
    _traffic_inputs()
    with st.expander(_("Optimization levers (handbook Q5)"), icon=":material/tune:"):
        _lever_inputs()
    with st.expander(_("Owning, energy and hosted APIs"), icon=":material/factory:"):
        owning_inputs(K)
    with st.expander(_("Budget and power (working backwards)"), icon=":material/undo:"):
        inverse_inputs(K)


def _gpu_input() -> None:
    """The GPU and the public price on record for it (or why there is none)."""
    gpu_ids = [g.id for g in load_gpus()] + [CUSTOM_GPU]
    st.selectbox(
        _("GPU"),
        gpu_ids,
        key=K("gpu"),
        format_func=_gpu_label,
        on_change=_on_gpu_change,
        help=_("Picking a GPU fills in its lowest public on-demand price; edit it freely."),
    )
    gpu_id = st.session_state.get(K("gpu"))
    if gpu_id and gpu_id != CUSTOM_GPU:
        price_record(gpu_id, st.session_state[K("currency")], st.session_state[K("fx")], K("price"))
    refresh_button()


def _price_inputs() -> None:
    """Currency, exchange rate, price per GPU-hour and GPUs per replica."""
    left, right = st.columns(2)
    left.segmented_control(
        _("Currency"), ["CNY", "USD"], key=K("currency"), on_change=_on_currency_change, required=True
    )
    right.number_input(
        _("Exchange rate (CNY per USD)"),
        key=K("fx"),
        step=0.01,
        format="%.4g",
        help=_("Source: {source}").format(source=load_handbook().fx.source),
    )
    left, right = st.columns(2)
    left.number_input(_("Price per GPU-hour (in the currency above)"), key=K("price"), step=0.1, format="%.4g")
    right.number_input(
        _("GPUs per replica"), key=K("gpus"), step=1, help=_("GPUs serving one model copy (tensor parallel size).")
    )


def _throughput_input() -> None:
    """The throughput per replica, typed or measured, and where it comes from."""
    measured_rps = st.session_state.get(K("rps"))
    st.number_input(
        _("Throughput per replica (output tokens/s)"),
        key=K("tps"),
        step=10.0,
        format="%.6g",
        on_change=_on_tps_change,
        disabled=bool(measured_rps),
        help=_(
            "Measured at your serving concurrency; the handbook's A800 reached {tok_s} tok/s at {concurrency}. Or "
            "fill it from an estimate (below)."
        ).format(tok_s=f"{_SEED.output_tok_s:g}", concurrency=_SEED.concurrency),
    )
    _throughput_source(measured_rps)


def _throughput_source(measured_rps: object) -> None:
    """Say where the throughput comes from: a probe run's rate, an estimate or the handbook's run."""
    if measured_rps:
        rate, _sep, run_id = str(measured_rps).partition("@")
        st.caption(
            ":material/speed: "
            + (
                _(
                    "Capacity: **measured** {rate} requests/s per replica within the SLO (probe run `{run_id}`); the "
                    "throughput is that rate x output tokens per request."
                )
                if run_id
                else _(
                    "Capacity: **measured** {rate} requests/s per replica within the SLO; the throughput is that rate "
                    "x output tokens per request."
                )
            ).format(rate=rate, run_id=run_id)
        )
        st.button(_("Enter throughput instead"), key="tco.drop_rps", on_click=_drop_rps, icon=":material/edit:")
    elif st.session_state.get(K("tps_source")) == TpsSource.ESTIMATE.value:
        st.caption(":material/query_stats: " + _("Throughput source: **estimate** (band and basis on the page)."))
    elif st.session_state.get(K("tps_source")) == TpsSource.MEASURED.value:
        st.caption(":material/speed: " + _("Throughput source: **measured** by a probe run (Cost this)."))
    elif st.session_state.get(K("tps")) == _SEED.output_tok_s and st.session_state.get(K("gpu")) == _SEED.gpu:
        st.caption(
            _(
                "Throughput source: the handbook's **measured** run ({model}, {engine}, concurrency {concurrency}). "
                "For another model or engine, estimate it below or cost a probe run."
            ).format(model=_SEED.model, engine=_SEED.engine, concurrency=_SEED.concurrency)
        )


def _request_inputs() -> None:
    """Tokens per request and hours per month."""
    left, right = st.columns(2)
    left.number_input(_("Output tokens per request"), key=K("out_tokens"), step=10)
    right.number_input(_("Input tokens per request"), key=K("in_tokens"), step=50)
    st.number_input(
        _("Hours per month (h)"),
        key=K("hours"),
        step=10.0,
        format="%.6g",
        help=_("730 = 8,760 h / 12 (most cloud bills); the handbook uses 720 (30 days)."),
    )


def _traffic_inputs() -> None:
    """Requests per day, the peak over the average and the target utilization."""
    st.number_input(_("Traffic (requests per day)"), key=K("traffic"), step=10_000.0, format="%.10g")
    left, right = st.columns(2)
    left.number_input(
        _("Peak-to-average ratio (×)"),
        key=K("peak"),
        step=0.1,
        format="%.4g",
        help=_("Peak requests/s divided by the daily average; at least 1."),
    )
    right.number_input(
        _("Target utilization (%)"),
        key=K("util"),
        step=5.0,
        format="%.4g",
        help=_("How busy a replica may run at peak; above 0 and at most 100."),
    )


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
    inputs, errors, _rejected = validate_params(TcoInputs, values, source="form")
    if errors:
        st.session_state[_APPLIED] = ("error", _("Fix the inputs first:") + " " + " ".join(errors))
        return
    try:
        point = estimate_tps(inputs, stored_calibrations())
    except PerfError as exc:
        st.session_state[_APPLIED] = ("error", _("No estimate: {reason}").format(reason=exc))
        return
    st.session_state[K("tps")] = point.output_tok_s
    st.session_state[K("tps_source")] = TpsSource.ESTIMATE.value
    for lever in WHAT_IF_LEVERS:  # assumptions start off once the throughput is an estimate
        st.session_state[K(lever)] = False
    st.session_state[_APPLIED] = (
        "success",
        _("Applied {tok_s} tok/s: {point}").format(tok_s=f"{point.output_tok_s:,.6g}", point=point_text(point)),
    )


def _estimate_inputs() -> None:
    gpu_id = st.session_state.get(K("gpu"))
    gpus = st.session_state.get(K("gpus"))
    if gpu_id == CUSTOM_GPU:
        st.caption(_("Pick a catalog GPU above to estimate its throughput."))
    elif gpu_id and not modelled(find_gpu(gpu_id)):
        st.caption(unmodelled_gpu_note(find_gpu(gpu_id).name, _))
        npu_measurements(gpu_id, st.session_state.get(K("model")))
    elif gpu_id:
        st.caption(
            _(
                "For {gpus}x {gpu} and this form's input and output tokens per request, at the highest concurrency "
                "within the SLO."
            ).format(gpus=gpus, gpu=find_gpu(gpu_id).name)
        )
    models = [m.id for m in load_models()]
    names = {m.id: f"{m.name} · {m.params_b:g}B" for m in load_models()}
    st.selectbox(_("Model"), models, key=K("model"), format_func=names.__getitem__)
    st.selectbox(_("Engine"), list(ENGINE_FAMILIES), key=K("engine"), format_func=lambda e: get_engine(e).name)
    newest = newest_release(str(st.session_state.get(K("engine")) or ENGINE_FAMILIES[0]))
    st.text_input(
        _("Engine release"),
        key=K("engine_version"),
        placeholder=_("newest with measured data: {release}").format(release=newest) if newest else "",
        help=_(
            "The release to estimate, as the engine numbers it (0.19.0, 1.2.0rc6). Empty: the newest release with "
            "measured data. A release without measured data is estimated as an extrapolation, with wider bands."
        ),
    )
    quants = {q.id: q.name for q in load_quant_methods()}
    st.selectbox(
        _("Quantization"),
        [AUTO, *quants],
        key=K("quant_method"),
        format_func=lambda q: _("auto (the advisor's choice)") if q == AUTO else quants[q],
    )
    cols = st.columns(3)
    cols[0].number_input(_("TTFT p50 (ms)"), key=K("ttft_p50"), step=50.0, format="%.6g")
    cols[1].number_input(_("TTFT p99 (ms)"), key=K("ttft_p99"), step=100.0, format="%.6g")
    cols[2].number_input(_("TPOT p50 (ms)"), key=K("tpot_p50"), step=5.0, format="%.6g")
    st.button(_("Apply the estimate"), key="tco.apply_estimate", on_click=_apply_estimate, icon=":material/bolt:")
    applied = st.session_state.get(_APPLIED)
    if applied is not None:
        level, text = applied
        (st.success if level == "success" else st.error)(text, icon="✅" if level == "success" else "🚫")


def _lever_inputs() -> None:
    st.toggle(_("Quantization (AWQ / FP8)"), key=K("quant"))
    st.number_input(_("Throughput gain (%)"), key=K("quant_gain"), step=5.0, format="%.4g")
    st.toggle(_("Prefix caching"), key=K("prefix"))
    left, right = st.columns(2)
    left.number_input(_("Prompt reuse (%)"), key=K("reuse"), step=5.0, format="%.4g")
    right.number_input(
        _("Prefill share of GPU time (%)"),
        key=K("prefill_share"),
        step=1.0,
        format="%.4g",
        help=_("Source: {source}").format(source=load_handbook().levers.prefix_caching.source),
    )
    split_inputs(K, automatic=True)
    st.toggle(_("Speculative decoding"), key=K("spec"))
    left, mid, right = st.columns(3)
    left.number_input(_("Acceptance (%)"), key=K("accept"), step=5.0, format="%.4g")
    mid.number_input(_("Draft tokens"), key=K("spec_tokens"), step=1)
    right.number_input(
        _("Break-even (%)"),
        key=K("spec_break_even"),
        step=5.0,
        format="%.4g",
        help=_("Source: {source}").format(source=load_handbook().levers.speculative_decoding.source),
    )
    st.toggle(_("Distillation (e.g. 7B → 3B)"), key=K("distill"))
    st.number_input(_("Cost cut (%)"), key=K("distill_cut"), step=5.0, format="%.4g")
    st.toggle(_("Spot GPUs"), key=K("spot"))
    st.number_input(_("Spot price cut (%)"), key=K("spot_cut"), step=5.0, format="%.4g")


def body() -> None:
    """Draw the page."""
    st.title(_("What will it cost?"))
    st.caption(
        _(
            "The handbook's arithmetic (section 2.4, Q5): throughput and price in; cost per request, per million "
            "tokens, per month and year out. The URL keeps every input: share it to share the scenario."
        )
    )
    state.load()
    fill_link_price(K)
    st.session_state.setdefault(_PREV_CURRENCY, st.session_state[K("currency")])
    state.show_notes()
    inputs, errors = (None, []) if price_missing(K) else state.read()
    if inputs is None and errors:
        show_errors(_("Check these inputs; the results update once they are valid."), errors)
    elif inputs is not None:
        _results(inputs)
    # The form comes after the headline (the sidebar keeps its place): a shared link's figure is not held back by it.
    if not stopped_at_headline():
        with st.sidebar:
            _inputs_form()
    st.session_state[_PREV_CURRENCY] = st.session_state[K("currency")]


def _results(inputs: TcoInputs) -> None:
    phases = phases_for(inputs, stored_calibrations())
    result = estimate(inputs, _, None if isinstance(phases, str) else phases)
    estimate_note(inputs)
    measured_note(inputs)
    headline(result)
    if not after_headline(PAGE):
        return  # the first run ends with the headline; the rest follows once the browser has drawn it
    capacity_and_fleet(result)
    tokens_by_kind(result, phases if isinstance(phases, str) else None)
    for note in result.notes:
        st.info(note, icon="💡")
    owning_section(result)
    # Lazy tabs: only the open one runs, so a shared link's headline is not held back by charts (docs/performance.md).
    levers, by_lever, sens, curve = st.tabs(
        [_("Optimization levers"), _("Cost by lever"), _("Sensitivity"), _("Cost vs throughput")],
        key=TABS,
        on_change="rerun",
    )
    with levers:
        levers_tab(result)
    if by_lever.open:
        by_lever.plotly_chart(lever_waterfall(result, _, language()), key="tco.fig.waterfall")
    if sens.open:
        sens.plotly_chart(sensitivity_tornado(result, _, language()), key="tco.fig.tornado")
    if curve.open:
        with curve:
            st.plotly_chart(
                cost_vs_throughput(result, load_handbook().slo.min_output_tok_s_per_gpu, _), key="tco.fig.curve"
            )
            concept_note("ttft_tpot")
    inverse_answers(result)
    scenario_panel(PAGE, "/tco", inputs, state.mark_scenario)


guarded(body)
