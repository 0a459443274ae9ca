"""Compare options: model, traffic and SLO in; every GPU x count x engine x quantization ranked by estimated cost."""

import threading
from collections import OrderedDict

import streamlit as st

from catalog import find_gpu, get_engine, load_gpus, load_models
from catalog.prices import PRICE_KINDS
from i18n import N_
from perf import ENGINE_FAMILIES, Calibration
from perf.coefficients import newest_release
from tco.compare_figures import cost_latency_figure
from tco.compare_inputs import (
    ANY_MARKET,
    GPU_COUNTS,
    MARKET_CHOICES,
    PRICE_SEPARATOR,
    CompareInputs,
    LatencyAxis,
    RankBy,
)
from tco.measured import MeasuredBeside, OptionKey, measured_options
from tco.prices import MARKET_WORDS, kind_text
from tco.ranking import Ranking, rank, reordered
from ui.calibration import stored_calibrations
from ui.errors import guarded, show_errors
from ui.first_paint import after_headline, stopped_at_headline
from ui.lang import _, language
from ui.params import LIST_SEPARATOR
from ui.resources import price_book
from ui.state import PageState, plain_widget_value
from ui.token_table import split_inputs
from views.compare_parts.apis import api_line
from views.compare_parts.ceiling import ceiling_answer
from views.compare_parts.table import left_out, option_details, ranking_table
from views.compare_parts.top import headline, latency_and_links

PAGE = "compare"
TABS = "_compare.tab"  # the open tab of the results (lazy: the others do not run)
_RANKING = "_compare.ranking"  # the last ranking: a change of ordering or chart axis reuses it
_MEASURED = "_compare.measured"  # the options stored runs measured, for the last ranking
Measured = dict[OptionKey, MeasuredBeside]
SHARED_RANKINGS = 32  # rankings kept across sessions, the least recently used dropped first
_RANK_LABELS = {
    RankBy.PER_MILLION.value: N_("Per 1M output tokens, all GPU time (full load)"),
    RankBy.FLEET.value: N_("Fleet per month (your traffic)"),
    RankBy.PESSIMISTIC.value: N_("Per 1M output tokens, pessimistic end of the band"),
    RankBy.INPUT.value: N_("Per 1M input tokens (full load)"),
    RankBy.OUTPUT.value: N_("Per 1M output tokens, decode share (full load)"),
    RankBy.BLENDED.value: N_("Per 1M tokens, blended (full load)"),
    RankBy.INPUT_AT_TRAFFIC.value: N_("Per 1M input tokens (your traffic)"),
    RankBy.OUTPUT_AT_TRAFFIC.value: N_("Per 1M output tokens, decode share (your traffic)"),
    RankBy.BLENDED_AT_TRAFFIC.value: N_("Per 1M tokens, blended (your traffic)"),
}
_AXIS_LABELS = {LatencyAxis.TPOT.value: "TPOT p50", LatencyAxis.TTFT.value: "TTFT p50"}


def _to_widget(alias: str, value: object) -> object:
    if alias in {"prices", "versions"} and isinstance(value, tuple):
        return LIST_SEPARATOR.join(value)
    return plain_widget_value(alias, value)


state = PageState(PAGE, CompareInputs, to_widget=_to_widget)
K = state.key


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
    st.number_input(
        _("Prefill share of GPU time (%)"),
        key=K("prefill_share"),
        step=1.0,
        format="%.4g",
        help=_(
            "The share of a request's GPU time its input tokens take; it splits the cost by kind of token when the "
            "split is the assumed share."
        ),
    )
    split_inputs(K, automatic=False)
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
            "lowest price of the chosen tier on record; a GPU without one is left out unless priced here."
        ).format(separator=PRICE_SEPARATOR),
    )
    _market_inputs()
    st.number_input(
        _("Cost ceiling per million output tokens"),
        key=K("ceiling"),
        step=1.0,
        format="%.6g",
        help=_("In the currency above. The page answers the best tokens/s per user any option reaches under it."),
    )
    _option_filters()


def _option_filters() -> None:
    """Which engines, GPU counts and engine releases the ranking considers."""
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


def _market_inputs() -> None:
    """The price tier each GPU is ranked at, and which GPUs to consider: a market, vendors, names."""
    st.segmented_control(
        _("Price tier"),
        list(PRICE_KINDS),
        key=K("price_tier"),
        format_func=lambda kind: kind_text(kind, _),
        required=True,
        help=_("Each GPU is ranked at its lowest price of this kind on record; a GPU without one is left out."),
    )
    with st.expander(_("GPUs to consider"), icon=":material/public:"):
        st.segmented_control(
            _("Market"),
            list(MARKET_CHOICES),
            key=K("market"),
            format_func=lambda m: _("any") if m == ANY_MARKET else _(MARKET_WORDS[m]),
            required=True,
            help=_("The GPUs one can buy or rent there, as catalog/data/markets.csv lists them with their sources."),
        )
        st.multiselect(_("Vendors"), sorted({g.vendor for g in load_gpus()}), key=K("vendors"))
        st.multiselect(
            _("GPUs"), [g.id for g in load_gpus()], key=K("gpu_names"), format_func=lambda g: find_gpu(g).name
        )


def _view_controls() -> None:
    labels = {value: _(label) for value, label in _RANK_LABELS.items()}  # worded now: format_func may run later
    left, right = st.columns(2)
    left.selectbox(
        _("Rank by"),
        list(labels),
        key=K("rank_by"),
        format_func=labels.__getitem__,
        help=_(
            "Full load: one replica busy all the time. Your traffic: the fleet your peak needs, idle headroom "
            "included. Input and output split each request's GPU time by the prefill share (Model and traffic)."
        ),
    )
    right.segmented_control(
        _("Chart latency"), list(_AXIS_LABELS), key=K("latency"), format_func=_AXIS_LABELS.__getitem__, required=True
    )


_Key = tuple[CompareInputs, tuple[Calibration, ...], str]  # priced inputs, calibrations, the prices' stamp


class _SharedRankings:
    """The last rankings of every session, by priced inputs and calibrations: a shared link opens a new session.

    Not st.cache_resource around rank(): the progress bar drawn while it ranks would be recorded and replayed.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._rankings: OrderedDict[_Key, Ranking] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _Key) -> Ranking | None:
        with self._lock:
            if key in self._rankings:
                self._rankings.move_to_end(key)
            return self._rankings.get(key)

    def put(self, key: _Key, ranking: Ranking) -> None:
        with self._lock:
            self._rankings[key] = ranking
            self._rankings.move_to_end(key)
            while len(self._rankings) > self._size:
                self._rankings.popitem(last=False)


@st.cache_resource
def _shared_rankings() -> _SharedRankings:
    return _SharedRankings(SHARED_RANKINGS)


def _ranking(inputs: CompareInputs) -> tuple[Ranking, Measured]:
    """Rank (with a progress bar), or reuse a ranking of the same priced inputs (this session's or another's).

    With it, the options a stored run measured: the runs are read once, when the ranking is (re)made.
    """
    book = price_book()
    last: Ranking | None = st.session_state.get(_RANKING)
    if last is not None and last.inputs.priced_inputs == inputs.priced_inputs and last.prices_stamp == book.stamp:
        return reordered(last, inputs), st.session_state.get(_MEASURED, {})
    calibrations = stored_calibrations()
    key = (inputs.priced_inputs, calibrations, book.stamp)
    shared = _shared_rankings().get(key)
    if shared is not None:
        st.session_state[_RANKING] = shared
        return reordered(shared, inputs), _measured(shared, calibrations)
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

    ranking = rank(inputs, calibrations=calibrations, progress=progress, prices=book)
    bar.empty()
    st.session_state[_RANKING] = ranking
    _shared_rankings().put(key, ranking)
    return ranking, _measured(ranking, calibrations)


def _measured(ranking: Ranking, calibrations: tuple[Calibration, ...]) -> Measured:
    """The options stored runs measured, kept for this session's reruns of the same ranking."""
    inputs = ranking.inputs
    found = measured_options(
        ranking.options, inputs.model, inputs.in_tokens_per_request, inputs.out_tokens_per_request, calibrations
    )
    st.session_state[_MEASURED] = found
    return found


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
    ranking, measured = _ranking(inputs)
    if not ranking.options:
        st.warning(
            _(
                "No option fits this model on 1–8 GPUs of a priced catalog GPU with these engines; see what was "
                "left out below."
            ),
            icon="⚠️",
        )
        left_out(ranking)
        return
    headline(ranking)
    if not after_headline(PAGE):
        return  # the first run ends with the top option; the rest follows once the browser has drawn it
    assert ranking.top is not None
    latency_and_links(ranking.top)
    _view_controls()
    ceiling_answer(ranking)
    # Lazy tabs: only the open one runs, so the headline is not held back by the chart (docs/performance.md).
    table, chart, detail = st.tabs(
        [_("Ranking"), _("Cost vs latency"), _("Option details")], key=TABS, on_change="rerun"
    )
    with table:
        ranking_table(ranking, measured)
    if chart.open:
        figure = cost_latency_figure(ranking, inputs.latency, tr=_, language=language())
        chart.plotly_chart(figure, key="compare.fig.cost_latency")
    if detail.open:
        with detail:
            option_details(ranking)
    api_line(ranking)
    left_out(ranking)


guarded(body)
