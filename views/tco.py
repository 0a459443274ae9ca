"""Cost calculator: GPU price and traffic in; cost per request, per million tokens, per month and year out."""

import pandas as pd
import streamlit as st

from catalog import AUTO, find_gpu, get_engine, load_gpus, load_handbook, load_models, load_quant_methods
from catalog.quantization import get_quant
from i18n.numbers import format_large
from perf import ENGINE_FAMILIES, PerfError
from perf.coefficients import newest_release
from tco import CUSTOM_GPU, TcoInputs, TcoResult, convert, estimate, format_money
from tco.figures import cost_vs_throughput, lever_waterfall, sensitivity_tornado
from tco.inputs import TpsSource, catalog_price
from tco.money import Currency
from tco.throughput import OperatingPoint, estimate_tps
from ui.calibration import stored_calibrations
from ui.concepts import concept_note
from ui.errors import guarded, show_errors
from ui.first_paint import after_headline, stopped_at_headline
from ui.lang import _, language
from ui.params import aliases, validate_params
from ui.scenarios import load_scenario_params, scenario_panel
from ui.state import PageState

PAGE = "tco"
state = PageState(PAGE, TcoInputs, load_base=load_scenario_params(PAGE))
K = state.key
_PREV_CURRENCY = "_tco.prev_currency"
_SEED = load_handbook().seed_benchmark
TABS = "_tco.tab"  # the open tab of the results (lazy: the others do not run)
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
        return _("Custom GPU (enter its price)")
    gpu = find_gpu(gpu_id)
    return f"{gpu.name} · {gpu.memory_gb:g} GB"


def _inputs_form() -> None:
    st.subheader(_("Scenario"))
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
        gpu = find_gpu(gpu_id)
        if gpu.has_price:
            st.caption(
                _("Public price: {low}–{high} {currency}/GPU-hour ({date}). Source: {source}").format(
                    low=f"{gpu.price_low:g}",
                    high=f"{gpu.price_high:g}",
                    currency=gpu.price_currency,
                    date=gpu.price_date,
                    source=gpu.price_source,
                )
            )
        else:
            st.caption(
                _("No public hourly price on record for {gpu} ({note}); enter yours.").format(
                    gpu=gpu.name, note=gpu.price_note
                )
            )
    left, right = st.columns(2)
    left.segmented_control(
        _("Currency"), ["CNY", "USD"], key=K("currency"), on_change=_on_currency_change, required=True
    )
    right.number_input(
        _("Exchange rate (CNY per USD)"), key=K("fx"), step=0.01, format="%.4g", help=f"{load_handbook().fx.source}"
    )
    left, right = st.columns(2)
    left.number_input(_("Price per GPU-hour (in the currency above)"), key=K("price"), step=0.1, format="%.4g")
    right.number_input(
        _("GPUs per replica"), key=K("gpus"), step=1, help=_("GPUs serving one model copy (tensor parallel size).")
    )
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
    elif st.session_state.get(K("tps")) == _SEED.output_tok_s and st.session_state.get(K("gpu")) == _SEED.gpu:
        st.caption(
            _(
                "Throughput source: the handbook's **measured** run ({model}, {engine}, concurrency {concurrency}). "
                "For another model or engine, estimate it below or cost a probe run."
            ).format(model=_SEED.model, engine=_SEED.engine, concurrency=_SEED.concurrency)
        )
    with st.expander(_("Estimate throughput"), icon=":material/query_stats:"):
        _estimate_inputs()
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
    st.subheader(_("Traffic"))
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
    with st.expander(_("Optimization levers (handbook Q5)"), icon=":material/tune:"):
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
    st.session_state[_APPLIED] = (
        "success",
        _("Applied {tok_s} tok/s: {point}").format(tok_s=f"{point.output_tok_s:,.6g}", point=_point_text(point)),
    )


def _point_text(point: OperatingPoint) -> str:
    where = (
        _("at concurrency {concurrency}, the highest within the SLO").format(concurrency=point.concurrency)
        if point.meets_slo
        else _("at concurrency 1: it misses the SLO even there")
    )
    return f"{where}; {point.label_text(_)}"


def _estimate_inputs() -> None:
    gpu_id = st.session_state.get(K("gpu"))
    gpus = st.session_state.get(K("gpus"))
    if gpu_id == CUSTOM_GPU:
        st.caption(_("Pick a catalog GPU above to estimate its throughput."))
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


def _estimate_note(inputs: TcoInputs) -> None:
    """When the throughput is an estimate, say so on the page with its band and basis (and when it is stale)."""
    if inputs.tps_source != TpsSource.ESTIMATE:
        return
    try:
        point = estimate_tps(inputs, stored_calibrations())
    except PerfError as exc:
        st.warning(
            _(
                "The throughput is marked as an estimate, but these inputs have none ({reason}); treat {tok_s} tok/s "
                "as entered."
            ).format(reason=exc, tok_s=f"{inputs.output_tok_s_per_replica:,.6g}"),
            icon="⚠️",
        )
        return
    engine = get_engine(inputs.engine).name
    quant = get_quant(point.estimate.quant).name
    text = _(
        "Throughput {tok_s} tok/s per replica is an {label}. {model} on {gpus}x {gpu} with {engine}, {quant}, {where}."
    ).format(
        tok_s=f"{inputs.output_tok_s_per_replica:,.6g}",
        label=point.label_text(_),
        model=point.estimate.model_name,
        gpus=inputs.gpus_per_replica,
        gpu=point.estimate.gpu_name,
        engine=engine,
        quant=quant,
        where=_point_text(point).split(";")[0],
    )
    if abs(point.output_tok_s - inputs.output_tok_s_per_replica) > 0.005 * point.output_tok_s:
        text += " " + _(
            "For the inputs now on the page the estimate is {tok_s} tok/s: apply it again under Estimate throughput."
        ).format(tok_s=f"{point.output_tok_s:,.6g}")
    st.info(text, icon=":material/query_stats:")


def _measured_note(inputs: TcoInputs) -> None:
    """A measured request rate (`rps`) says so, naming the probe run when the link does."""
    rps = inputs.requests_per_s_per_replica
    if rps is None:
        return
    run = (
        _("probe run `{run_id}`").format(run_id=inputs.rps_run_id)
        if inputs.rps_run_id
        else _("a probe run (not named in the link)")
    )
    st.info(
        _(
            "Capacity per replica is **measured**: {rps} requests/s within the SLO, by {run}. With {out} output "
            "tokens per request that is {tok_s} output tokens/s."
        ).format(
            rps=f"{rps:,.6g}",
            run=run,
            out=f"{inputs.out_tokens_per_request:,}",
            tok_s=f"{inputs.output_tok_s_per_replica:,.6g}",
        ),
        icon=":material/speed:",
    )


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
        help=load_handbook().levers.prefix_caching.source,
    )
    st.toggle(_("Speculative decoding"), key=K("spec"))
    left, mid, right = st.columns(3)
    left.number_input(_("Acceptance (%)"), key=K("accept"), step=5.0, format="%.4g")
    mid.number_input(_("Draft tokens"), key=K("spec_tokens"), step=1)
    right.number_input(
        _("Break-even (%)"),
        key=K("spec_break_even"),
        step=5.0,
        format="%.4g",
        help=load_handbook().levers.speculative_decoding.source,
    )
    st.toggle(_("Distillation (e.g. 7B → 3B)"), key=K("distill"))
    st.number_input(_("Cost cut (%)"), key=K("distill_cut"), step=5.0, format="%.4g")
    st.toggle(_("Spot GPUs"), key=K("spot"))
    st.number_input(_("Spot price cut (%)"), key=K("spot_cut"), step=5.0, format="%.4g")


def _money(amount: float | None, currency: str, *, compact: bool = False) -> str:
    return format_money(amount, currency, compact=compact, language=language())


def _exact(amount: float | None, currency: str) -> str:
    """The exact figure for a hover, when the shown one is rounded into 万/亿 or millions."""
    return _("Exactly {amount}").format(amount=format_money(amount, currency))


def _headline(result: TcoResult) -> None:
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


def _capacity_and_fleet(result: TcoResult) -> None:
    """The rest of the figures: one replica's capacity, and the fleet your traffic needs."""
    cur = result.inputs.currency
    cap, fleet = result.capacity, result.fleet
    cols = st.columns(4)
    cols[0].metric(_("Seconds of output per request"), f"{cap.seconds_of_output_per_request:.2f} s", border=True)
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


def _levers_tab(result: TcoResult) -> None:
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
        _("Saved per year at your traffic"),
        _money(chain.saving_per_year, cur, compact=True),
        border=True,
        help=_exact(chain.saving_per_year, cur),
    )
    table = pd.DataFrame(
        [
            {
                _("lever"): s.label,
                _("on"): s.enabled,
                _("effect"): s.effect,
                _("cost per request after"): _money(s.cost_per_request_after, cur) if s.enabled else "",
                _("saved per request"): _money(s.saving_per_request, cur) if s.enabled else "",
                _("replicas after"): s.replicas_after if s.enabled else None,
                _("saved per year"): _money(s.saving_per_year, cur) if s.enabled else "",
                _("source"): s.source,
            }
            for s in chain.steps
        ]
    )
    st.dataframe(table, hide_index=True)
    for key in ("prefix_caching", "speculative_decoding", "spot"):
        concept_note(key)


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
    st.session_state.setdefault(_PREV_CURRENCY, st.session_state[K("currency")])
    state.show_notes()
    inputs, errors = state.read()
    if inputs is None:
        show_errors(_("Check these inputs; the results update once they are valid."), errors)
    else:
        _results(inputs)
    # The form comes after the headline (the sidebar keeps its place): a shared link's figure is not held back by it.
    if not stopped_at_headline():
        with st.sidebar:
            _inputs_form()
    st.session_state[_PREV_CURRENCY] = st.session_state[K("currency")]


def _results(inputs: TcoInputs) -> None:
    result = estimate(inputs, _)
    _estimate_note(inputs)
    _measured_note(inputs)
    _headline(result)
    if not after_headline(PAGE):
        return  # the first run ends with the headline; the rest follows once the browser has drawn it
    _capacity_and_fleet(result)
    for note in result.notes:
        st.info(note, icon="💡")
    # Lazy tabs: only the open one runs, so a shared link's headline is not held back by charts (docs/performance.md).
    levers, by_lever, sens, curve = st.tabs(
        [_("Optimization levers"), _("Cost by lever"), _("Sensitivity"), _("Cost vs throughput")],
        key=TABS,
        on_change="rerun",
    )
    with levers:
        _levers_tab(result)
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
    scenario_panel(PAGE, "/tco", inputs, state.mark_scenario)


guarded(body)
