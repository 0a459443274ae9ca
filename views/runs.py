"""Probe runs: every stored run, filtered by endpoint and model; open one, compare several, export, delete."""

import pandas as pd
import streamlit as st

from db.runs import (
    RunRow,
    best_request_rates,
    delete_run,
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
from ui.live_runs import live_runs
from ui.probe_views import comparison, deployment_caption, downloads, run_details, title_text
from ui.resources import get_engine
from ui.state import PageState
from ui.text import escape_markdown

PAGE = "runs"
LIST_LIMIT = 500
CONFIRM = "_runs.confirm_delete"
DELETED = "_runs.deleted"

state = PageState(PAGE, RunsView)
K = state.key


def row_label(row: RunRow) -> str:
    """A run in a list: its label (or model), start time, status and short id; plain text."""
    name = row.label or row.model
    return f"{name} · {row.started_at:%Y-%m-%d %H:%M} · {row.status} · {row.id[:8]}"


def _filter(label: str, alias: str, values: list[str], every: str) -> None:
    current = st.session_state.get(K(alias)) or ""
    options = ["", *values] if current in ("", *values) else ["", current, *values]
    st.selectbox(label, options, key=K(alias), format_func=lambda v: v or every)


def _known_selection(rows: list[RunRow]) -> dict[str, RunRow]:
    """The opened runs that exist (the link may name deleted ones), by id; say which were dropped."""
    listed = {row.id: row for row in rows}
    chosen: list[str] = list(st.session_state.get(K("runs")) or [])
    found: dict[str, RunRow] = {}
    missing: list[str] = []
    for run_id in chosen:
        row = listed.get(run_id) or get_run_row(get_engine(), run_id)
        if row is None:
            missing.append(run_id)
        else:
            found[run_id] = row
    if missing:
        st.session_state[K("runs")] = list(found)
        st.warning(f"No stored run {', '.join(f'`{m}`' for m in missing)} (deleted?); it is left out.", icon="⚠️")
    return found


def _table(rows: list[RunRow]) -> None:
    peaks = peak_output_tok_s(get_engine(), [row.id for row in rows])
    rates = best_request_rates(get_engine(), [row.id for row in rows])
    table = pd.DataFrame(
        [
            {
                "started": row.started_at,
                "status": row.status,
                "label": row.label,
                "model": row.model,
                "endpoint": row.endpoint,
                "workload": row.workload,
                "best concurrency within SLO": row.best_concurrency_within_slo,
                "best req/s within SLO": rates.get(row.id),
                "peak output tok/s": round(peaks[row.id], 1) if row.id in peaks else None,
                "id": row.id,
            }
            for row in rows
        ]
    )
    st.dataframe(
        table,
        hide_index=True,
        key="runs.table",
        column_config={"started": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss")},
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
            f"Running in this app: {progress.finished} requests of this level finished, {progress.failed} failed."
        )
        st.button(
            "Cancel probe",
            key=f"runs.cancel.{run_id}",
            icon=":material/stop_circle:",
            on_click=live.cancel,
            help="Stops sending; requests in flight are dropped; finished ones are kept.",
        )
    if st.session_state.get(CONFIRM) != run_id:
        st.button(
            "Delete run…",
            key=f"runs.delete.{run_id}",
            icon=":material/delete:",
            on_click=_ask_delete,
            args=(run_id,),
            disabled=running,
            help="Cancel it first." if running else "Asks before deleting.",
        )
        return
    with st.container(border=True):
        requests, _ = sample_counts(get_engine(), run_id)
        st.warning(f"Delete run `{run_id[:8]}` with its {requests} requests? This cannot be undone.", icon="🗑️")
        left, right, _ = st.columns([1, 1, 4])
        left.button(
            "Yes, delete",
            key=f"runs.confirm_delete.{run_id}",
            type="primary",
            on_click=_delete,
            args=(run_id, result.settings.label or result.model),
        )
        right.button("Keep it", key=f"runs.keep.{run_id}", on_click=_keep)


def _about(result: RunResult) -> None:
    s = result.settings
    finished = f" → {result.finished_at:%H:%M:%S}" if result.finished_at else ""
    st.caption(
        f"{escape_markdown(result.endpoint)} · model {escape_markdown(result.model)} · {s.api} · workload "
        f"{s.workload} · {escape_markdown(s.load_text)} · max tokens {s.max_tokens} · "
        f"{result.started_at:%Y-%m-%d %H:%M:%S}{finished} UTC · `{result.run_id}`"
    )


def _one(result: RunResult, key: str) -> None:
    _about(result)
    deployment_caption(result)
    estimate_vs_measured(result)
    run_details(result, key)
    downloads(result, key)
    _delete_controls(result)


def body() -> None:
    """Draw the page."""
    st.title("Probe runs")
    st.caption(
        "Every probe run is kept, from this page or the command line. Filter them, open one, or pick two or more "
        "to compare them on the same charts. The link keeps the filters and the runs opened."
    )
    state.load()
    state.show_notes()
    deleted = st.session_state.pop(DELETED, None)
    if deleted is not None:
        st.success(f"Deleted the run “{escape_markdown(deleted)}”.", icon="🗑️")
    engine = get_engine()
    endpoints, models = run_filters(engine)
    left, right = st.columns(2)
    with left:
        _filter("Endpoint", "endpoint", endpoints, "All endpoints")
    with right:
        _filter("Model", "model", models, "All models")
    rows = list_runs(
        engine,
        endpoint=st.session_state.get(K("endpoint")) or None,
        model=st.session_state.get(K("model")) or None,
        limit=LIST_LIMIT,
    )
    selected = _known_selection(rows)
    if rows:
        _table(rows)
    else:
        st.info("No stored runs match. Start one on the Live probe page.", icon="ℹ️")
        st.page_link("views/probe.py", label="Open the live probe", icon=":material/speed:")
    options = {**{row.id: row for row in rows}, **selected}
    st.multiselect(
        "Open runs",
        list(options),
        key=K("runs"),
        format_func=lambda i: row_label(options[i]),
        max_selections=MAX_OPEN_RUNS,
        placeholder="Pick one to open it, two or more to compare",
        help="Runs hidden by the filters stay open; the link keeps them.",
    )
    view, errors = state.read()
    if view is None:
        show_errors("Check these inputs.", errors)
        return
    results = [r for r in (get_run(engine, run_id, with_samples=False) for run_id in view.runs) if r is not None]
    if not results:
        return
    if any(r.status == RunStatus.RUNNING for r in results):
        st.button("Refresh", key="runs.refresh", icon=":material/refresh:", help="A run is still running.")
    if len(results) == 1:
        st.subheader(title_text(results[0]))
        _one(results[0], f"runs.run.{results[0].run_id}")
        return
    st.subheader(f"Comparing {len(results)} runs")
    comparison(results, "runs.compare")
    for result in results:
        with st.expander(title_text(result)):
            _one(result, f"runs.run.{result.run_id}")


guarded(body)
