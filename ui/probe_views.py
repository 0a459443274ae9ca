"""Drawing probes: the form's widgets from the settings' fields; runs' figures, charts, tables, "Cost this", exports."""

from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from db.run_queries import error_summary, get_run, load_samples, sample_counts
from i18n import N_
from probes.baseline import scaling_sentence
from probes.deployment import deployment_text
from probes.figures import (
    compare_rows,
    error_rows,
    latency_figure,
    level_rows,
    run_label,
    throughput_figure,
    timeline_figure,
    turn_rows,
    turns_figure,
)
from probes.form import default_cost_level
from probes.models import RunResult, RunStatus
from probes.wording import note_text
from ui.concepts import concept_note
from ui.lang import _, lang_param
from ui.power_views import power_section
from ui.resources import get_engine
from ui.run_cost import run_cost_params
from ui.tables import without_gaps
from ui.text import escape_markdown
from ui.worker_views import partial_warning, workers_table

STATUS_ICONS = {
    RunStatus.COMPLETED: ":material/check_circle:",
    RunStatus.CANCELLED: ":material/stop_circle:",
    RunStatus.FAILED: ":material/error:",
    RunStatus.INTERRUPTED: ":material/warning:",
    RunStatus.RUNNING: ":material/pending:",
}
STATUS_NAMES = {  # a run's status as the lists show it (the stored value stays English)
    RunStatus.COMPLETED: N_("completed"),
    RunStatus.CANCELLED: N_("cancelled"),
    RunStatus.FAILED: N_("failed"),
    RunStatus.INTERRUPTED: N_("interrupted"),
    RunStatus.RUNNING: N_("running"),
}


def status_name(status: str) -> str:
    """A stored status ('completed') in the session's language."""
    try:
        return _(STATUS_NAMES[RunStatus(status)])
    except ValueError:
        return status


def _fmt(value: float | None, unit: str = "", digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}{unit}"


def run_status_message(result: RunResult) -> None:
    """Say plainly how the run ended (failed runs: what went wrong and what to do)."""
    if result.status == RunStatus.FAILED:
        st.error(
            _(
                "The probe failed: {error}. Check the endpoint URL, that the server is running and reachable from "
                "this machine, and the API key; **Test connection** tells more."
            ).format(error=note_text(result.error, _) if result.error else _("unknown error")),
            icon="🚫",
        )
    elif result.status == RunStatus.CANCELLED:
        st.warning(_("The probe was cancelled; the requests that finished before are kept below."), icon="⏹️")
    elif result.status == RunStatus.INTERRUPTED:
        st.warning(
            _("The probe was interrupted: {reason}.").format(
                reason=note_text(result.error, _) if result.error else _("the app stopped")
            ),
            icon="⚠️",
        )
    elif result.status == RunStatus.RUNNING:
        st.info(_("This run is still running; figures cover the levels finished so far."), icon="⏳")


def headline(result: RunResult) -> None:
    """The run's key figures as metrics, and how it scaled beside the handbook's benchmark."""
    cols = st.columns(4)
    _slo_metric(cols[0], result)
    _level_metrics(cols[1:], result)
    sentence = scaling_sentence(result, _)
    if sentence:
        st.caption(sentence)


def _slo_metric(where: DeltaGenerator, result: RunResult) -> None:
    """The run's SLO figure: met or not (a trace or sessions), the highest rate or concurrency within it."""
    rates = any(lv.request_rate_rps is not None for lv in result.levels)
    settings = result.settings
    if settings.trace_mode or settings.sessions_mode:
        what = (
            _("{sessions} sessions × {turns} turns").format(sessions=settings.sessions, turns=settings.turns)
            if settings.sessions_mode
            else _("trace {trace} at {speed}×").format(trace=settings.trace or "", speed=f"{settings.trace_speed:g}")
        )
        met = [lv.slo.met for lv in result.levels]
        where.metric(
            "SLO",
            (_("met") if all(met) else _("missed")) if met else _("not measured"),
            border=True,
            help=_("Whether the level ({load}) met the TTFT p50, TTFT p99, TPOT p50 and failure targets.").format(
                load=what
            ),
        )
    elif rates:
        best_rate = result.best_request_rate_within_slo_rps
        search = result.rate_search
        where.metric(
            _("Max request rate in SLO"),
            _("none") if best_rate is None else _("{rate} req/s").format(rate=f"{best_rate:,.4g}"),
            border=True,
            help=_("The highest request rate whose level met the TTFT p50, TTFT p99, TPOT p50 and failure targets.")
            + (
                " " + _("Search: {detail}.").format(detail=note_text(search.stop_detail, _))
                if search is not None
                else ""
            ),
        )
    else:
        where.metric(
            _("Max concurrency in SLO"),
            _("none") if result.best_concurrency_within_slo is None else str(result.best_concurrency_within_slo),
            border=True,
            help=_("The highest level whose TTFT p50, TTFT p99, TPOT p50 and failure share met the targets."),
        )


def _level_metrics(cols: Sequence[DeltaGenerator], result: RunResult) -> None:
    """Throughput, TTFT and TPOT at the level the cost is shown for."""
    shown = default_cost_level(result)
    if shown is None:
        at = ""
    elif shown.request_rate_rps is not None:
        at = _(" at {rate} req/s").format(rate=f"{shown.request_rate_rps:g}")
    else:
        at = _(" at concurrency {level}").format(level=shown.concurrency)
    cols[0].metric(
        _("Output tokens/s"),
        _fmt(shown.output_tok_s if shown else None),
        border=True,
        help=_("Output tokens over the level's wall time{at}.").format(at=at),
    )
    cols[1].metric(
        "TTFT p50",
        _fmt(shown.ttft_ms.p50 if shown else None, " ms"),
        border=True,
        help=_("Time to first token, median{at}.").format(at=at),
    )
    cols[2].metric(
        "TPOT p50",
        _fmt(shown.tpot_ms.p50 if shown else None, " ms", 2),
        border=True,
        help=_("Time per output token after the first, median{at}.").format(at=at),
    )


def cost_this(result: RunResult, key: str) -> None:
    """A level picker and a link that opens the cost calculator with that level's measured figures."""
    default = default_cost_level(result)
    levels = {lv.index: lv for lv in result.levels if lv.output_tok_s and lv.completed}
    if default is None:
        st.caption(_("No level produced output tokens, so there is nothing to cost."))
        return
    if st.session_state.get(key) not in levels:
        st.session_state[key] = default.index

    def label(index: int) -> str:
        level = levels[index]
        tok_s = f"{level.output_tok_s:,.1f}"
        if level.request_rate_rps is not None:
            best = level.request_rate_rps == result.best_request_rate_within_slo_rps
            rate = f"{level.request_rate_rps:g}"
            if best:
                return _("{rate} req/s: {tok_s} tok/s (highest rate within SLO)").format(rate=rate, tok_s=tok_s)
            return _("{rate} req/s: {tok_s} tok/s").format(rate=rate, tok_s=tok_s)
        if level.concurrency == result.best_concurrency_within_slo:
            return _("concurrency {level}: {tok_s} tok/s (highest within SLO)").format(
                level=level.concurrency, tok_s=tok_s
            )
        return _("concurrency {level}: {tok_s} tok/s").format(level=level.concurrency, tok_s=tok_s)

    labels = {index: label(index) for index in levels}  # worded now: format_func may run outside the page
    left, right = st.columns([2, 1], vertical_alignment="bottom")
    chosen = left.selectbox(
        _("Level to cost"),
        list(levels),
        key=key,
        format_func=labels.__getitem__,
        help=_("By default the highest rate (or concurrency) within SLO."),
    )
    level = levels[chosen]
    params, declared = run_cost_params(result, level)
    right.page_link(
        "views/tco.py", label=_("Cost this"), icon=":material/payments:", query_params={**params, **lang_param()}
    )
    if not declared:
        st.caption(_("The run declared no GPU: the cost calculator starts from the handbook's A800; pick yours there."))
    if result.best_concurrency_within_slo is None and result.best_request_rate_within_slo_rps is None:
        st.caption(_("No level met the SLO; the default is the level with the highest throughput."))
    what = (
        _("requests/s this endpoint served within the SLO, as one replica")
        if "rps" in params
        else _("throughput of this endpoint as one replica")
    )
    st.caption(
        _("Opens the cost calculator with {params} ({what}).").format(
            params=", ".join(f"`{k}={v}`" for k, v in params.items()), what=what
        )
    )


def run_details(result: RunResult, key: str, *, after_cards: Callable[[], bool] | None = None) -> bool:
    """Everything about one run: status, headline, charts, tables, "Cost this".

    after_cards, called below the headline cards, may end the drawing there (False, returned): the page's first run
    (ui/first_paint.py).
    """
    run_status_message(result)
    partial_warning(result)
    if not result.levels:
        if result.status != RunStatus.FAILED:
            st.info(_("No level finished, so there is nothing to chart yet."), icon="ℹ️")
        _errors_table(result, key)
        return True
    headline(result)
    if after_cards is not None and not after_cards():
        return False
    # Lazy tabs: only the open one runs, so the run's figures are not held back by charts (docs/performance.md).
    # The levels table opens first; a replay's timeline and sessions' figures by turn have a tab of their own.
    names = [_("Levels"), _("Latency"), _("Throughput"), _("Errors")]
    if result.settings.trace_mode:
        names.append(_("Timeline"))
    if any(lv.turns for lv in result.levels):
        names.append(_("By turn"))
    if result.settings.dcgm_url:
        names.append(_("Power"))
    if result.workers:
        names.append(_("Workers"))
    tabs = dict(zip(names, st.tabs(names, key=f"{key}.tab", on_change="rerun"), strict=True))
    with tabs[_("Levels")]:
        st.dataframe(without_gaps(level_rows(result, _)), hide_index=True, key=f"{key}.levels")
        concept_note("goodput")
    if tabs[_("Latency")].open:
        with tabs[_("Latency")]:
            st.plotly_chart(latency_figure([result], _), key=f"{key}.fig.latency")
            concept_note("ttft_tpot")
    if tabs[_("Throughput")].open:
        with tabs[_("Throughput")]:
            st.plotly_chart(throughput_figure([result], _), key=f"{key}.fig.throughput")
            concept_note("continuous_batching")
    if tabs[_("Errors")].open:
        with tabs[_("Errors")]:
            _errors_table(result, key)
    if _("Timeline") in tabs and tabs[_("Timeline")].open:
        with tabs[_("Timeline")]:
            _timeline(result, key)
    if _("By turn") in tabs and tabs[_("By turn")].open:
        with tabs[_("By turn")]:
            _turns(result, key)
    if _("Power") in tabs and tabs[_("Power")].open:
        with tabs[_("Power")]:
            power_section(result, key)
    if _("Workers") in tabs and tabs[_("Workers")].open:
        with tabs[_("Workers")]:
            workers_table(result, key)
    cost_this(result, f"{key}.cost_level")
    return True


def _turns(result: RunResult, key: str) -> None:
    """Sessions: the figures per turn index, and the server's prefix-cache hit ratio when it reported one."""
    st.markdown("**" + _("By turn") + "**")
    concept_note("prefix_caching")
    ratios = [lv.server_metrics.prefix_cache_hit_ratio for lv in result.levels if lv.server_metrics]
    ratio = next((r for r in ratios if r is not None), None)
    first = next((t for lv in result.levels for t in lv.turns or [] if t.turn == 1), None)
    later = [t.ttft_ms_p50 for lv in result.levels for t in lv.turns or [] if t.turn > 1 and t.ttft_ms_p50]
    parts = []
    if first is not None and first.ttft_ms_p50 and later:
        parts.append(
            _(
                "TTFT p50 of turn 1: {first} ms; of the later turns: {low}–{high} ms, though their prompts carry the "
                "whole history"
            ).format(first=f"{first.ttft_ms_p50:,.0f}", low=f"{min(later):,.0f}", high=f"{max(later):,.0f}")
        )
    parts.append(
        _("the server's prefix-cache hit ratio over the level: {ratio}").format(ratio=f"{ratio:.0%}")
        if ratio is not None
        else _("the server's /metrics gave no prefix-cache hit ratio")
    )
    cache = parts[-1]
    if len(parts) > 1:
        st.caption(_("{turns}; {cache}.").format(turns=parts[0], cache=cache))
    else:
        st.caption(_("{cache}.").format(cache=cache))
    left, right = st.columns([3, 2])
    left.plotly_chart(turns_figure(result, _), key=f"{key}.fig.turns")
    right.dataframe(pd.DataFrame(turn_rows(result, _)), hide_index=True, key=f"{key}.turns")


def _replay_figures(result: RunResult) -> None:
    """A trace replay's own figures: the requests it replayed and how late they left (send lag)."""
    level = next((lv for lv in result.levels if lv.schedule_lag_ms is not None), None)
    if level is None or level.schedule_lag_ms is None:
        return
    lag = level.schedule_lag_ms
    why = _(
        "Send lag: how late a request left after its time in the trace (divided by the speed); a high one means "
        "the probe could not keep up, and the server saw a gentler load than the trace's."
    )
    left, mid, right = st.columns(3)
    left.metric(
        _("Requests replayed"), f"{level.requests:,}", border=True, help=_("The requests of the trace's slice.")
    )
    for where, name, value in ((mid, _("Send lag p50"), lag.p50), (right, _("Send lag p99"), lag.p99)):
        where.metric(name, "—" if value is None else f"{value:,.1f} ms", border=True, help=why)


def _timeline(result: RunResult, key: str) -> None:
    """A trace replay's send lag and requests over time (a stored run opened without its samples: read them)."""
    _replay_figures(result)
    if not result.samples and result.run_id:
        result = result.model_copy(update={"samples": load_samples(get_engine(), result.run_id)})
    if result.samples:
        st.plotly_chart(timeline_figure(result, _), key=f"{key}.fig.timeline")
    for note in result.notes:
        st.info(note_text(note, _), icon="ℹ️")


def _errors_table(result: RunResult, key: str) -> None:
    if result.samples or not result.run_id:
        rows, total = error_rows(result, _), len(result.samples)
    else:  # a stored run opened without its samples: count in the database (English keys, those of error_rows)
        stored, (total, _failed) = (
            error_summary(get_engine(), result.run_id),
            sample_counts(get_engine(), result.run_id),
        )
        rows = [{_(column): value for column, value in row.items()} for row in stored]
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"{key}.errors")
    elif total:
        st.caption(_("Every request succeeded."))


def full_run(result: RunResult) -> RunResult:
    """The run with every request, for exports (a stored run is opened without them)."""
    if result.samples or not result.run_id:
        return result
    return get_run(get_engine(), result.run_id) or result


def comparison(results: Sequence[RunResult], key: str) -> None:
    """Two or more runs overlaid on the same charts, and their levels side by side."""
    table, latency, throughput = st.tabs(
        [_("Levels side by side"), _("Latency"), _("Throughput")], key=f"{key}.tab", on_change="rerun"
    )  # lazy: only the open tab runs (docs/performance.md)
    with table:
        st.dataframe(without_gaps(compare_rows(results, _)), hide_index=True, key=f"{key}.levels")
    if latency.open:
        latency.plotly_chart(latency_figure(results, _), key=f"{key}.fig.latency")
    if throughput.open:
        throughput.plotly_chart(throughput_figure(results, _), key=f"{key}.fig.throughput")
    slos = {r.settings.slo for r in results}
    if len(slos) > 1:
        st.caption(
            _("The runs had different SLO targets; the dashed lines are those of {run}.").format(
                run=run_label(results[0])
            )
        )


def deployment_caption(result: RunResult) -> None:
    """The deployment the run measured, when any of it is known (what the server told is said to be detected)."""
    text = deployment_text(result.settings.deployment, _)
    if text:
        st.caption(_("Deployment: {deployment}").format(deployment=escape_markdown(text)))


def title_text(result: RunResult) -> str:
    """The run's label for Markdown places (headings, expanders, tabs): every user character escaped."""
    return f"{STATUS_ICONS.get(result.status, '')} {escape_markdown(run_label(result))}".strip()
