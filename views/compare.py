"""Compare options: model, traffic and SLO in; every GPU x count x engine x quantization ranked by estimated cost."""

import threading
from collections import OrderedDict
from urllib.parse import urlencode

import pandas as pd
import streamlit as st
from streamlit.elements.lib.column_types import ColumnConfig

from catalog import get_engine, load_models
from i18n import N_
from perf import ENGINE_FAMILIES, Calibration
from perf.coefficients import newest_release
from tco import convert, format_money
from tco.compare_figures import cost_latency_figure
from tco.compare_inputs import GPU_COUNTS, PRICE_SEPARATOR, CompareInputs, LatencyAxis, RankBy
from tco.money import Currency
from tco.options import RankedOption, reason_text
from tco.ranking import Ranking, rank, reordered
from ui.calibration import stored_calibrations
from ui.errors import guarded, show_errors
from ui.first_paint import after_headline, stopped_at_headline
from ui.lang import _, language
from ui.params import LIST_SEPARATOR, to_params
from ui.state import PageState, plain_widget_value

PAGE = "compare"
TABS = "_compare.tab"  # the open tab of the results (lazy: the others do not run)
_RANKING = "_compare.ranking"  # the last ranking: a change of ordering or chart axis reuses it
SHARED_RANKINGS = 32  # rankings kept across sessions, the least recently used dropped first
_DETAIL = "compare.detail"
_RANK_LABELS = {
    RankBy.PER_MILLION.value: N_("Cost per 1M tokens"),
    RankBy.FLEET.value: N_("Fleet per month"),
    RankBy.PESSIMISTIC.value: N_("Cost, pessimistic end"),
}
_RANKED_BY = {
    RankBy.PER_MILLION: N_("cost per million output tokens"),
    RankBy.FLEET: N_("monthly fleet cost"),
    RankBy.PESSIMISTIC: N_("cost per million output tokens at the low end of each throughput band"),
}
_AXIS_LABELS = {LatencyAxis.TPOT.value: "TPOT p50", LatencyAxis.TTFT.value: "TTFT p50"}


def _to_widget(alias: str, value: object) -> object:
    if alias in {"prices", "versions"} and isinstance(value, tuple):
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
    st.subheader(_("Model and traffic"))
    st.selectbox(_("Model"), [m.id for m in load_models()], key=K("model"), format_func=_model_label)
    st.number_input(_("Traffic (requests per day)"), key=K("traffic"), step=10_000.0, format="%.10g")
    left, right = st.columns(2)
    left.number_input(_("Peak-to-average ratio (×)"), key=K("peak"), step=0.1, format="%.4g")
    right.number_input(_("Target utilization (%)"), key=K("util"), step=5.0, format="%.4g")
    left, right = st.columns(2)
    left.number_input(_("Input tokens per request"), key=K("in_tokens"), step=50)
    right.number_input(_("Output tokens per request"), key=K("out_tokens"), step=10)
    st.subheader("SLO")
    cols = st.columns(3)
    cols[0].number_input("TTFT p50 (ms)", key=K("ttft_p50"), step=50.0, format="%.6g")
    cols[1].number_input("TTFT p99 (ms)", key=K("ttft_p99"), step=100.0, format="%.6g")
    cols[2].number_input("TPOT p50 (ms)", key=K("tpot_p50"), step=5.0, format="%.6g")
    st.subheader(_("Prices"))
    left, right = st.columns(2)
    left.segmented_control(_("Currency"), ["CNY", "USD"], key=K("currency"), required=True)
    right.number_input(_("Exchange rate (CNY per USD)"), key=K("fx"), step=0.01, format="%.4g")
    st.text_input(
        _("Price overrides"),
        key=K("prices"),
        placeholder="h100:2.5, a800:12",
        help=_(
            "<gpu>{separator}<price per GPU-hour in the currency above>, comma-separated. Other GPUs use their "
            "lowest public price from the catalog; a GPU without one is left out unless priced here."
        ).format(separator=PRICE_SEPARATOR),
    )
    with st.expander(_("Options to consider"), icon=":material/filter_list:"):
        st.multiselect(_("Engines"), list(ENGINE_FAMILIES), key=K("engines"), format_func=lambda e: get_engine(e).name)
        st.pills(_("GPU counts"), list(GPU_COUNTS), key=K("counts"), selection_mode="multi")
        st.text_input(
            _("Engine releases"),
            key=K("versions"),
            placeholder=", ".join(
                f"{e}{PRICE_SEPARATOR}{newest_release(e)}" for e in ENGINE_FAMILIES if newest_release(e)
            ),
            help=_(
                "<engine>{separator}<release>, comma-separated. An engine not named is estimated at its newest release "
                "with measured data (shown above as the example); a release without measured data is estimated as "
                "an extrapolation, with wider bands."
            ).format(separator=PRICE_SEPARATOR),
        )


def _view_controls() -> None:
    left, right = st.columns(2)
    left.segmented_control(
        _("Rank by"), list(_RANK_LABELS), key=K("rank_by"), format_func=lambda v: _(_RANK_LABELS[v]), required=True
    )
    right.segmented_control(
        _("Chart latency"), list(_AXIS_LABELS), key=K("latency"), format_func=_AXIS_LABELS.__getitem__, required=True
    )


class _SharedRankings:
    """The last rankings of every session, by priced inputs and calibrations: a shared link opens a new session.

    Not st.cache_resource around rank(): the progress bar drawn while it ranks would be recorded and replayed.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._rankings: OrderedDict[tuple[CompareInputs, tuple[Calibration, ...]], Ranking] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[CompareInputs, tuple[Calibration, ...]]) -> Ranking | None:
        with self._lock:
            if key in self._rankings:
                self._rankings.move_to_end(key)
            return self._rankings.get(key)

    def put(self, key: tuple[CompareInputs, tuple[Calibration, ...]], ranking: Ranking) -> None:
        with self._lock:
            self._rankings[key] = ranking
            self._rankings.move_to_end(key)
            while len(self._rankings) > self._size:
                self._rankings.popitem(last=False)


@st.cache_resource
def _shared_rankings() -> _SharedRankings:
    return _SharedRankings(SHARED_RANKINGS)


def _ranking(inputs: CompareInputs) -> Ranking:
    """Rank (with a progress bar), or reuse a ranking of the same priced inputs (this session's or another's)."""
    last: Ranking | None = st.session_state.get(_RANKING)
    if last is not None and last.inputs.priced_inputs == inputs.priced_inputs:
        return reordered(last, inputs)
    calibrations = stored_calibrations()
    key = (inputs.priced_inputs, calibrations)
    shared = _shared_rankings().get(key)
    if shared is not None:
        st.session_state[_RANKING] = shared
        return reordered(shared, inputs)
    bar = st.progress(0.0, text=_("Estimating each option…"))
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = done * 100 // max(total, 1)
        if percent != shown[0]:
            shown[0] = percent
            bar.progress(
                percent / 100,
                text=_("Estimating option {done} of {total}…").format(done=f"{done:,}", total=f"{total:,}"),
            )

    ranking = rank(inputs, calibrations=calibrations, progress=progress)
    bar.empty()
    st.session_state[_RANKING] = ranking
    _shared_rankings().put(key, ranking)
    return ranking


def _headline(ranking: Ranking) -> None:
    top = ranking.top
    assert top is not None
    cur = ranking.inputs.currency
    lang = language()
    if top.meets_slo:
        verdict = _("meets the SLO")
    else:
        verdict = _("no option meets the SLO; this one misses it least expensively")
    st.subheader(f":material/trophy: {top.label}")
    st.caption(
        _("Rank 1 of {count} by {ranked_by}: {verdict}. Every figure is an estimate.").format(
            count=f"{len(ranking.options):,}", ranked_by=_(_RANKED_BY[ranking.inputs.rank_by]), verdict=verdict
        )
    )
    if top.price_overridden:
        price_help = _("at {price} {currency}/GPU-hour (your price)")
    else:
        price_help = _("at {price} {currency}/GPU-hour (lowest public price)")
    cols = st.columns(4)
    cols[0].metric(
        _("Per million output tokens"),
        format_money(top.cost_per_million_output_tokens, cur, language=lang),
        border=True,
        help=price_help.format(price=f"{top.price_per_gpu_hour:g}", currency=cur.value),
    )
    cols[1].metric(
        _("Fleet per month"),
        format_money(top.fleet_cost_per_month, cur, compact=True, language=lang),
        border=True,
        help=_("Exactly {amount}").format(amount=format_money(top.fleet_cost_per_month, cur)),
    )
    cols[2].metric(
        _("GPUs needed"),
        f"{top.total_gpus:,}",
        border=True,
        help=_("{replicas} replicas × {gpus} GPUs at the peak").format(
            replicas=f"{top.replicas:,}", gpus=top.gpus_per_replica
        ),
    )
    cols[3].metric(
        _("Tok/s per replica (estimate)"),
        f"{top.output_tok_s:,.0f} tok/s",
        border=True,
        help=_("at concurrency {concurrency}, the highest within the SLO").format(concurrency=top.concurrency),
    )
    low, high = top.cost_per_million_range
    st.caption(
        _(
            "Per million output tokens, {low} to {high} across the throughput band; rank it by the pessimistic end "
            "to favour options whose estimate is surer."
        ).format(low=format_money(low, cur, language=lang), high=format_money(high, cur, language=lang))
    )
    if top.datasheet_only:
        st.warning(
            _(
                "This option rests on datasheet figures alone: no measurement of {engine} on {gpu}'s architecture "
                "backs it. Rank by the pessimistic end, or probe it before buying."
            ).format(engine=top.engine_name, gpu=top.gpu_name),
            icon="⚠️",
        )
    other = Currency.USD if cur == Currency.CNY else Currency.CNY
    fx = ranking.inputs.cny_per_usd
    st.caption(
        _(
            "In {currency} at {fx} CNY per USD: {per_million} per million output tokens, {fleet} for the fleet per "
            "month."
        ).format(
            currency=other.value,
            fx=f"{fx:g}",
            per_million=format_money(convert(top.cost_per_million_output_tokens, cur, other, fx), other, language=lang),
            fleet=format_money(convert(top.fleet_cost_per_month, cur, other, fx), other, compact=True, language=lang),
        )
    )


def _latency_and_links(top: RankedOption) -> None:
    """The top option's estimated latency, its band and basis, and its links to the advisor and the cost page."""
    cols = st.columns(4)
    cols[0].metric(_("TTFT p50 (estimate)"), f"{top.ttft_p50_ms:,.0f} ms", border=True)
    cols[1].metric(
        _("TTFT p99 (estimate)"), "—" if top.ttft_p99_ms is None else f"{top.ttft_p99_ms:,.0f} ms", border=True
    )
    cols[2].metric(_("TPOT p50 (estimate)"), f"{top.tpot_p50_ms:,.1f} ms", border=True)
    cols[3].metric(_("Concurrency per replica"), f"{top.concurrency:,}", border=True)
    _band_and_basis(top)
    _links(top)


def _band_and_basis(option: RankedOption) -> None:
    st.caption(
        _(
            "Estimate: 8 in 10 held-out measurements fell within {bands} of the estimate ({group}). "
            "Basis ({kind}): {basis}."
        ).format(
            bands=option.bands_text(_),
            group=option.band_group_text(_),
            kind=option.basis_kind_text(_),
            basis=option.basis_worded(_),
        )
    )


def _links(option: RankedOption) -> None:
    left, right = st.columns(2)
    left.page_link(
        "views/tco.py",
        label=_("Price this in the cost calculator"),
        icon=":material/payments:",
        query_params=to_params(option.tco_inputs),
    )
    right.page_link(
        "views/selector.py",
        label=_("Open in the engine advisor"),
        icon=":material/tune:",
        query_params=to_params(option.advice_request),
    )


def _table(ranking: Ranking) -> None:
    """The ranked options; the data keeps its English column keys, the headers are in the page's language."""
    cur = ranking.inputs.currency.value
    per_million, fleet, price, per_million_range = (
        f"per 1M output tokens ({cur})",
        f"fleet per month ({cur})",
        f"price per GPU-hour ({cur})",
        f"per 1M range ({cur})",
    )
    meets, misses = _("meets"), _("misses SLO")
    rows = [
        {
            "rank": o.rank,
            "GPU": o.gpu_name,
            "GPUs per replica": o.gpus_per_replica,
            "replicas": o.replicas,
            "GPUs in all": o.total_gpus,
            "engine": o.engine_name,
            "quantization": o.quant_name,
            per_million: o.cost_per_million_output_tokens,
            per_million_range: "{:.4g}–{:.4g}".format(*o.cost_per_million_range),
            fleet: o.fleet_cost_per_month,
            "SLO": meets if o.meets_slo else misses,
            "concurrency": o.concurrency,
            "TTFT p50 ms": o.ttft_p50_ms,
            "TTFT p99 ms": o.ttft_p99_ms,
            "TPOT p50 ms": o.tpot_p50_ms,
            "tok/s per replica": o.output_tok_s,
            "band": f"{o.band_low:.2f}–{o.band_high:.2f}×",
            "bands": o.bands_text(_),
            "basis": o.basis_kind_text(_),
            "datasheet only": o.datasheet_only,
            "release": o.engine_version,
            price: o.price_per_gpu_hour,
            "cost calculator": tco_link(o),
            "engine advisor": selector_link(o),
            "basis detail": o.basis_worded(_),
        }
        for o in ranking.options
    ]
    headers = {
        "rank": _("rank"),
        "GPUs per replica": _("GPUs per replica"),
        "replicas": _("replicas"),
        "GPUs in all": _("GPUs in all"),
        "engine": _("engine"),
        "quantization": _("quantization"),
        "concurrency": _("concurrency"),
        "band": _("band"),
        "bands": _("bands (tok/s, TPOT, TTFT)"),
        "basis": _("basis"),
        "release": _("release"),
        "basis detail": _("basis detail"),
    }
    column_config: dict[str, ColumnConfig] = {key: st.column_config.Column(label) for key, label in headers.items()}
    column_config |= {
        per_million: st.column_config.NumberColumn(
            _("per 1M output tokens ({currency})").format(currency=cur), format="%.4g"
        ),
        fleet: st.column_config.NumberColumn(
            _("fleet per month ({currency})").format(currency=cur), format="localized"
        ),
        price: st.column_config.NumberColumn(_("price per GPU-hour ({currency})").format(currency=cur)),
        per_million_range: st.column_config.TextColumn(_("per 1M range ({currency})").format(currency=cur)),
        "datasheet only": st.column_config.CheckboxColumn(
            _("datasheet only"), help=_("no measurement of this engine on this GPU architecture backs the estimate")
        ),
        "TTFT p50 ms": st.column_config.NumberColumn(format="%.0f"),
        "TTFT p99 ms": st.column_config.NumberColumn(format="%.0f"),
        "TPOT p50 ms": st.column_config.NumberColumn(format="%.1f"),
        "tok/s per replica": st.column_config.NumberColumn(_("tok/s per replica"), format="%.0f"),
        "cost calculator": st.column_config.LinkColumn(_("cost calculator"), display_text=_("open /tco")),
        "engine advisor": st.column_config.LinkColumn(_("engine advisor"), display_text=_("open /selector")),
    }
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="compare.table", column_config=column_config)


def _details(ranking: Ranking) -> None:
    options = {o.rank: o for o in ranking.options}
    if st.session_state.get(_DETAIL) not in options:
        st.session_state[_DETAIL] = 1
    chosen = st.selectbox(_("Option"), list(options), key=_DETAIL, format_func=lambda r: f"#{r} {options[r].label}")
    option = options[chosen]
    cur, lang = ranking.inputs.currency, language()
    cols = st.columns(4)
    cols[0].metric(
        _("Per million output tokens"),
        format_money(option.cost_per_million_output_tokens, cur, language=lang),
        border=True,
    )
    cols[1].metric(
        _("Fleet per month"), format_money(option.fleet_cost_per_month, cur, compact=True, language=lang), border=True
    )
    cols[2].metric(_("Band (estimate)"), f"{option.band_low:.2f}–{option.band_high:.2f}×", border=True)
    cols[3].metric(_("Basis"), option.basis_kind_text(_), border=True)
    _band_and_basis(option)
    _links(option)


def _left_out(ranking: Ranking) -> None:
    title = _("Considered {considered} combinations; ranked {ranked}").format(
        considered=f"{ranking.considered:,}", ranked=f"{len(ranking.options):,}"
    )
    with st.expander(title):
        for reason, count in sorted(ranking.skipped.items(), key=lambda item: -item[1]):
            st.markdown(f"- {reason_text(reason, _)}: {count:,}")
        st.caption(
            _(
                "Every catalog GPU with a price × GPU count × engine with a step-time model × quantization the "
                "advisor allows on it; each kept option is estimated at the SLO operating point (the highest "
                "concurrency within the SLO) and priced with the cost calculator's arithmetic."
            )
        )


def body() -> None:
    """Draw the page."""
    st.title(_("Which option is cheapest?"))
    st.caption(
        _(
            "Every GPU in the catalog × 1, 2, 4, 8 GPUs × engine × quantization the advisor allows, estimated at the "
            "highest load within your SLO and priced for your traffic at its peak. Every figure here is an "
            "estimate, with its band and basis. The URL keeps every input."
        )
    )
    state.load()
    state.show_notes()
    inputs, errors = state.read()
    if inputs is None:
        show_errors(_("Check these inputs; the ranking updates once they are valid."), errors)
    else:
        _results(inputs)
    # The form comes after the headline (the sidebar keeps its place): a shared link's figure is not held back by it.
    if not stopped_at_headline():
        with st.sidebar:
            _inputs_form()


def _results(inputs: CompareInputs) -> None:
    ranking = _ranking(inputs)
    if not ranking.options:
        st.warning(
            _(
                "No option fits this model on 1–8 GPUs of a priced catalog GPU with these engines; see what was "
                "left out below."
            ),
            icon="⚠️",
        )
        _left_out(ranking)
        return
    _headline(ranking)
    if not after_headline(PAGE):
        return  # the first run ends with the top option; the rest follows once the browser has drawn it
    assert ranking.top is not None
    _latency_and_links(ranking.top)
    _view_controls()
    # Lazy tabs: only the open one runs, so the headline is not held back by the chart (docs/performance.md).
    table, chart, detail = st.tabs(
        [_("Ranking"), _("Cost vs latency"), _("Option details")], key=TABS, on_change="rerun"
    )
    with table:
        _table(ranking)
    if chart.open:
        figure = cost_latency_figure(ranking, inputs.latency, tr=_, language=language())
        chart.plotly_chart(figure, key="compare.fig.cost_latency")
    if detail.open:
        with detail:
            _details(ranking)
    _left_out(ranking)


guarded(body)
