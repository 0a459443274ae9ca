"""Probe runs: every stored run (imported ones too), filtered; open one, compare several, export, delete, import."""

import datetime as dt
from collections.abc import Callable

import pandas as pd
import streamlit as st

from db.imports import imports_of
from db.recorder import delete_run
from db.run_queries import (
    StoredRun,
    best_request_rates,
    get_run,
    get_run_row,
    list_runs,
    peak_output_tok_s,
    run_filters,
    sample_counts,
)
from probes.form import MAX_OPEN_RUNS, RunsView
from probes.models import RunResult, RunStatus
from ui.calibration import estimate_vs_measured
from ui.errors import guarded, show_errors
from ui.first_paint import after_headline, stopped_at_headline
from ui.lang import _
from ui.live_runs import live_runs
from ui.probe_views import comparison, deployment_caption, run_details, status_name, title_text
from ui.resources import get_engine
from ui.run_downloads import downloads
from ui.state import PageState
from ui.text import escape_markdown
from views.runs_parts.imports import import_section, provenance_caption, source_words

PAGE = "runs"
LIST_LIMIT = 500
LIST_TAB = "_runs.list_tab"  # the open tab of the list (lazy: the grid runs once its tab is opened)
NEWEST_ROWS = 50  # the list's first tab: the newest runs as text
NEWEST_UNBOXED = 10  # more rows than this scroll in a box NEWEST_HEIGHT_PX high
NEWEST_HEIGHT_PX = 420
CONFIRM = "_runs.confirm_delete"
DELETED = "_runs.deleted"

state = PageState(PAGE, RunsView)
K = state.key


def row_label(row: StoredRun) -> str:
    """A run in a list: its label (or model), start time, status and short id; plain text."""
    name = row.label or row.model
    return f"{name} · {row.started_at:%Y-%m-%d %H:%M} · {status_name(row.status)} · {row.id[:8]}"


def _filter(label: str, alias: str, values: list[str], every: str) -> None:
    current = st.session_state.get(K(alias)) or ""
    options = ["", *values] if current in ("", *values) else ["", current, *values]
    st.selectbox(label, options, key=K(alias), format_func=lambda v: v or every)


def _known_selection(rows: list[StoredRun]) -> dict[str, StoredRun]:
    """The opened runs that exist (the link may name deleted ones), by id; say which were dropped."""
    listed = {row.id: row for row in rows}
    chosen: list[str] = list(st.session_state.get(K("runs")) or [])
    found: dict[str, StoredRun] = {}
    missing: list[str] = []
    for run_id in chosen:
        row = listed.get(run_id) or get_run_row(get_engine(), run_id)
        if row is None:
            missing.append(run_id)
        else:
            found[run_id] = row
    if missing:
        st.session_state[K("runs")] = list(found)
        st.warning(
            _("No stored run {runs} (deleted?); it is left out.").format(runs=", ".join(f"`{m}`" for m in missing)),
            icon="⚠️",
        )
    return found


def _list(rows: list[StoredRun]) -> None:
    """The runs: the newest as text first (no data grid to load before it), all of them in a grid one tab away."""
    newest, every = st.tabs(
        [_("Newest"), _("Every run: sort, search, download")],  # no count: the open tab stays open as it changes
        key=LIST_TAB,
        on_change="rerun",
    )
    with newest:
        _newest(rows[:NEWEST_ROWS], len(rows))
    if every.open:
        with every:
            _table(rows)


def _list_rows(rows: list[StoredRun]) -> list[dict[str, object]]:
    """The list's columns, one dict per run (labels in this page's language): both of its views show these."""
    peaks = peak_output_tok_s(get_engine(), [row.id for row in rows])
    rates = best_request_rates(get_engine(), [row.id for row in rows])
    imported = imports_of(get_engine(), [row.id for row in rows])
    return [
        {
            _("started"): row.started_at,
            _("status"): status_name(row.status),
            _("label"): row.label,
            _("model"): row.model,
            _("endpoint"): row.endpoint,
            _("workload"): row.workload,
            _("source"): source_words(imported.get(row.id)),
            _("best concurrency within SLO"): row.best_concurrency_within_slo,
            _("best req/s within SLO"): rates.get(row.id),
            _("peak output tok/s"): round(peaks[row.id], 1) if row.id in peaks else None,
            "id": row.id,
        }
        for row in rows
    ]


def _cell(value: object) -> str:
    """One cell of the Markdown list: times to the second, numbers grouped, typed text escaped, nothing for None."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    if isinstance(value, int | float):
        return f"{value:,.6g}"
    return escape_markdown(str(value))


def _newest(rows: list[StoredRun], count: int) -> None:
    """The newest runs as a Markdown table, in a box that scrolls: the same columns as the grid."""
    table = _list_rows(rows)
    header = list(table[0])
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for line in table:
        cells = [f"`{value}`" if name == "id" else _cell(value) for name, value in line.items()]
        lines.append("| " + " | ".join(cells) + " |")
    with st.container(height=NEWEST_HEIGHT_PX if len(rows) > NEWEST_UNBOXED else "content"):
        st.markdown("\n".join(lines))
    if count > len(rows):
        st.caption(
            _("The newest {shown} of {count}; the next tab has every one.").format(
                shown=f"{len(rows):,}", count=f"{count:,}"
            )
        )


def _table(rows: list[StoredRun]) -> None:
    started = _("started")
    st.dataframe(
        pd.DataFrame(_list_rows(rows)),
        hide_index=True,
        key="runs.table",
        column_config={started: st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss")},
    )


def _ask_delete(run_id: str) -> None:
    st.session_state[CONFIRM] = run_id


def _keep() -> None:
    st.session_state.pop(CONFIRM, None)


def _delete(run_id: str, label: str) -> None:
    delete_run(get_engine(), run_id)
    st.session_state.pop(CONFIRM, None)
    st.session_state[K("runs")] = [r for r in st.session_state.get(K("runs")) or [] if r != run_id]
    st.session_state[DELETED] = label


def _delete_controls(result: RunResult) -> None:
    run_id = result.run_id or ""
    running = result.status == RunStatus.RUNNING
    live = live_runs().get(run_id) if running else None
    if live is not None:
        progress = live.progress()
        st.caption(
            _("Running in this app: {finished} requests of this level finished, {failed} failed.").format(
                finished=progress.finished, failed=progress.failed
            )
        )
        st.button(
            _("Cancel probe"),
            key=f"runs.cancel.{run_id}",
            icon=":material/stop_circle:",
            on_click=live.cancel,
            help=_("Stops sending; requests in flight are dropped; finished ones are kept."),
        )
    if st.session_state.get(CONFIRM) != run_id:
        st.button(
            _("Delete run…"),
            key=f"runs.delete.{run_id}",
            icon=":material/delete:",
            on_click=_ask_delete,
            args=(run_id,),
            disabled=running,
            help=_("Cancel it first.") if running else _("Asks before deleting."),
        )
        return
    with st.container(border=True):
        requests, _failed = sample_counts(get_engine(), run_id)
        st.warning(
            _("Delete run `{run_id}` with its {requests} requests? This cannot be undone.").format(
                run_id=run_id[:8], requests=requests
            ),
            icon="🗑️",
        )
        left, right, _rest = st.columns([1, 1, 4])
        left.button(
            _("Yes, delete"),
            key=f"runs.confirm_delete.{run_id}",
            type="primary",
            on_click=_delete,
            args=(run_id, result.settings.label or result.model),
        )
        right.button(_("Keep it"), key=f"runs.keep.{run_id}", on_click=_keep)


def _about(result: RunResult) -> None:
    s = result.settings
    finished = f" → {result.finished_at:%H:%M:%S}" if result.finished_at else ""
    st.caption(
        _(
            "{endpoint} · model {model} · {api} · workload {workload} · {load} · max tokens {max_tokens} · "
            "{started}{finished} UTC · `{run_id}`"
        ).format(
            endpoint=escape_markdown(result.endpoint),
            model=escape_markdown(result.model),
            api=s.api,
            workload=s.workload,
            load=escape_markdown(s.load_words(_)),
            max_tokens=s.max_tokens,
            started=f"{result.started_at:%Y-%m-%d %H:%M:%S}",
            finished=finished,
            run_id=result.run_id,
        )
    )


def _one(result: RunResult, key: str, after_cards: Callable[[], bool] | None = None) -> None:
    _about(result)
    provenance_caption(result)
    deployment_caption(result)
    estimate_vs_measured(result)
    if not run_details(result, key, after_cards=after_cards):
        return  # the first run ends with the run's cards; the rest follows once the browser has drawn them
    downloads(result, key, formats=True)
    _delete_controls(result)


def body() -> None:
    """Draw the page."""
    st.title(_("Probe runs"))
    st.caption(
        _(
            "Every probe run is kept, from this page or the command line, and so is every result file imported from "
            "another tool. Filter them, open one, or pick two or more to compare them on the same charts. The link "
            "keeps the filters and the runs opened."
        )
    )
    state.load()
    state.show_notes()
    deleted = st.session_state.pop(DELETED, None)
    if deleted is not None:
        st.success(_("Deleted the run “{run}”.").format(run=escape_markdown(deleted)), icon="🗑️")
    rows = list_runs(
        get_engine(),
        endpoint=st.session_state.get(K("endpoint")) or None,
        model=st.session_state.get(K("model")) or None,
        limit=LIST_LIMIT,
    )
    selected = _known_selection(rows)
    if rows:
        _list(rows)
    else:
        st.info(_("No stored runs match. Start one on the Live probe page, or import result files below."), icon="ℹ️")
        st.page_link("views/probe.py", label=_("Open the live probe"), icon=":material/speed:")
    import_section()
    view, errors = state.read()
    if view is None:
        show_errors(_("Check these inputs."), errors)
    else:
        _opened(view.runs)
    # The filters and the picker come after the list and the opened run (the sidebar keeps its place): a shared
    # link's figures are not held back by them.
    if not stopped_at_headline():
        with st.sidebar:
            _controls(rows, selected)


def _controls(rows: list[StoredRun], selected: dict[str, StoredRun]) -> None:
    """The list's filters, and the runs to open."""
    endpoints, models = run_filters(get_engine())
    st.subheader(_("Filter the list"))
    _filter(_("Endpoint"), "endpoint", endpoints, _("All endpoints"))
    _filter(_("Model"), "model", models, _("All models"))
    options = {**{row.id: row for row in rows}, **selected}
    labels = {run_id: row_label(row) for run_id, row in options.items()}  # worded now, in this page's language
    st.multiselect(
        _("Open runs"),
        list(options),
        key=K("runs"),
        format_func=labels.__getitem__,
        max_selections=MAX_OPEN_RUNS,
        placeholder=_("Pick one to open it, two or more to compare"),
        help=_("Runs hidden by the filters stay open; the link keeps them."),
    )


def _opened(run_ids: tuple[str, ...]) -> None:
    """One opened run (its cards first), or two or more compared; the list alone is the page's headline."""
    engine = get_engine()
    results = [r for r in (get_run(engine, run_id, with_samples=False) for run_id in run_ids) if r is not None]
    if len(results) != 1 and not after_headline(PAGE):
        return  # the first run ends with the list; the rest follows once the browser has drawn it
    if not results:
        return
    if any(r.status == RunStatus.RUNNING for r in results):
        st.button(_("Refresh"), key="runs.refresh", icon=":material/refresh:", help=_("A run is still running."))
    if len(results) == 1:
        st.subheader(title_text(results[0]))
        _one(results[0], f"runs.run.{results[0].run_id}", after_cards=lambda: after_headline(PAGE))
        return
    st.subheader(_("Comparing {count} runs").format(count=len(results)))
    comparison(results, "runs.compare")
    for result in results:
        with st.expander(title_text(result)):
            _one(result, f"runs.run.{result.run_id}")


guarded(body)
