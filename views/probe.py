"""Live probe: measure TTFT, TPOT and throughput of an OpenAI-compatible endpoint at several concurrency levels."""

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from db.run_queries import get_run, sample_counts
from probes import (
    ProbeError,
    ProcessProbeRun,
    Progress,
    RunResult,
    RunStatus,
    WorkloadKind,
    check_connection,
    run_sync,
)
from probes.errors import ProbeSettingsError
from probes.figures import level_rows, throughput_figure
from probes.form import ProbeForm
from probes.options import prepare_run
from probes.uploads import keep_upload
from probes.wording import note_text
from settings import get_settings
from ui.errors import guarded, show_errors
from ui.first_paint import after_headline, headline_drawn
from ui.lang import _
from ui.live_runs import live_runs
from ui.params import validate_params
from ui.probe_fields import text_field
from ui.probe_views import deployment_caption, run_details
from ui.resources import get_engine
from ui.run_downloads import downloads
from ui.tables import without_gaps
from ui.text import escape_markdown
from ui.worker_views import live_workers
from views.probe_parts.fields import load_fields, sections
from views.probe_parts.state import (
    API_KEY,
    CANCELLING,
    CONVERSATIONS_FILE,
    LAST,
    PAGE,
    PICK,
    POLL_S,
    PROMPT_FILE,
    REPORT,
    RUN,
    RUN_ID,
    SERVED,
    START_ERROR,
    TRACE_FILE,
    K,
    state,
)


def _running() -> ProcessProbeRun | None:
    run = st.session_state.get(RUN)
    return run if isinstance(run, ProcessProbeRun) else None


def _test_connection() -> None:
    """Button callback: list the served models and, with a model, send one tiny request."""
    model = str(st.session_state.get(K("model")) or "").strip() or None
    needed = {alias: st.session_state.get(K(alias)) for alias in ("url", "api", "connect_timeout", "ttft_timeout")}
    form, errors, _notes = validate_params(ProbeForm, needed, source="form")
    if errors:
        st.session_state[REPORT] = (False, errors[0])
        return
    try:
        report = run_sync(
            check_connection(
                form.base_url,
                st.session_state.get(API_KEY) or None,
                model,
                api=form.api,
                timeouts=form.timeouts,
                tr=_,
            )
        )
    except ProbeError as exc:
        st.session_state[REPORT] = (False, str(exc))
        return
    st.session_state[REPORT] = (report.ok, report.message)
    if report.models is not None:
        st.session_state[SERVED] = (report.endpoint, report.models)
        if model is None and report.models:
            st.session_state[K("model")] = report.models[0]


def _pick_model() -> None:
    picked = st.session_state.get(PICK)
    if picked:
        st.session_state[K("model")] = picked


def _cancel() -> None:
    run = _running()
    if run is not None:
        run.cancel()
        st.session_state[CANCELLING] = True


def _form(busy: bool) -> DeltaGenerator:
    """The form; returns the slot where the Start button goes (drawn once the inputs are read).

    Each setting's label, help and limits come from its field (probes/options.py), as the CLI's flags do.
    """
    box = st.container(border=True)
    with box:
        left, mid, right = st.columns([3, 2, 2])
        text_field(left, state, "url", placeholder="http://host:8000/v1")
        mid.text_input(
            _("API key"),
            key=API_KEY,
            type="password",
            placeholder=_("optional"),
            help=_("Sent to the endpoint only: never stored, logged, exported or put in the link."),
        )
        text_field(
            right,
            state,
            "model",
            placeholder=_("as the server names it"),
            hint=_("Type it, or press Test connection to list what the server serves."),
        )
        served = st.session_state.get(SERVED)
        if served and served[1]:
            st.selectbox(
                _("Models served by {endpoint}").format(endpoint=served[0]),
                served[1],
                key=PICK,
                index=None,
                placeholder=_("pick one to use it"),
                on_change=_pick_model,
            )
        left, right, rest = st.columns([1.4, 1.2, 3], vertical_alignment="center")
        left.button(
            _("Test connection"), key="probe.test", icon=":material/lan:", on_click=_test_connection, disabled=busy
        )
        report = st.session_state.get(REPORT)
        if report is not None:
            ok, message = report
            rest.markdown(f":{'green' if ok else 'red'}[{'✓' if ok else '✗'}] " + escape_markdown(message))
        # The load settings and the optional sections come below the buttons, once the browser has drawn the form
        # (ui/first_paint.py): a shared link's form is not held back by their select boxes and number fields, and the
        # Start button does not move when they come.
        if headline_drawn(PAGE):
            load_fields(box)
            sections()
    return right


def _kept_upload(key: str) -> str | None:
    """The upload of a file widget, kept by content under UPLOADS_DIR (stored runs name it); None without one."""
    upload = st.session_state.get(key)
    if upload is None:
        return None
    return str(keep_upload(upload.getvalue(), upload.name, get_settings().uploads_dir))


def _start(form: ProbeForm) -> bool:
    """Check the settings, record the run, start the worker (True); refused settings are shown once (False)."""
    st.session_state.pop(START_ERROR, None)
    try:
        if form.workload == WorkloadKind.TRACE and not form.trace:
            uploaded = _kept_upload(TRACE_FILE)
            if uploaded is None:
                raise ProbeSettingsError("pick a built-in trace or upload a trace file")
            form = form.model_copy(update={"trace": uploaded})  # the upload, checked like any trace file
        files = {}
        if form.workload == WorkloadKind.FILE:
            files["prompt_file"] = _kept_upload(PROMPT_FILE) or ""
        if form.workload == WorkloadKind.SESSIONS:
            files["conversations_file"] = _kept_upload(CONVERSATIONS_FILE) or ""
        settings = prepare_run(form, st.session_state.get(API_KEY) or None, files)
    except ProbeError as exc:
        st.session_state[START_ERROR] = str(exc)
        return False
    get_engine()  # the database migrated before the run's own process records into it
    # The run goes to a process of its own (probes/process_run.py): in a thread of this server, every page rerun
    # would delay its requests and its clock.
    run = ProcessProbeRun(settings, database_url=get_settings().database_url)
    try:
        run.start()  # a refusal is recorded as the stored run's end
    except ProbeError as exc:
        st.session_state[START_ERROR] = str(exc)
        return False
    assert run.run_id is not None  # the recorder stores every run it starts
    st.session_state[RUN] = run
    st.session_state[RUN_ID] = run.run_id
    live_runs().add(run.run_id, run)
    st.session_state[CANCELLING] = False
    st.session_state.pop(LAST, None)
    return True


def _settle() -> None:
    """A finished run moves from 'live' to 'last result'."""
    run = _running()
    if run is not None and run.done():
        st.session_state[LAST] = st.session_state.pop(RUN_ID, None)
        st.session_state["_probe.sink_errors"] = list(run.sink_errors)
        del st.session_state[RUN]


def _level_load(run: ProcessProbeRun, progress: Progress) -> str:
    """What the running level sends: a trace, sessions, a concurrency or a request rate."""
    if run.settings.trace_mode:
        return _("replaying the trace at {speed}×").format(speed=f"{run.settings.trace_speed:g}")
    if run.settings.sessions_mode:
        return _("{sessions} sessions of up to {turns} turns").format(
            sessions=progress.concurrency, turns=run.settings.turns
        )
    if progress.request_rate_rps is None:
        return _("concurrency {level}").format(level=progress.concurrency)
    return _("{rate} requests/s").format(rate=f"{progress.request_rate_rps:g}")


def _progress_view(run: ProcessProbeRun, progress: Progress) -> None:
    """The running probe's status box: where it is, its progress bars and the levels finished so far."""
    total = max(1, progress.levels_total or len(run.settings.concurrency))
    per_level = max(1, progress.requests_per_level or run.settings.requests_per_level)
    done_levels = len(progress.levels)
    index = progress.level_index if progress.level_index is not None else 0
    if progress.phase == "level":
        load = _level_load(run, progress)
        if run.settings.find_max_rate:
            label = _("Level {number} of at most {total}: {load}").format(number=index + 1, total=total, load=load)
        else:
            label = _("Level {number} of {total}: {load}").format(number=index + 1, total=total, load=load)
        overall = min(1.0, (index * per_level + progress.finished) / (total * per_level))
        in_level = min(1.0, progress.finished / per_level)
    else:
        label = {
            "starting": _("Starting…"),
            "connecting": _("Connecting…"),
            "calibrating": _("calibrating"),
            "warmup": _("Warming up (not counted)…"),
            "finished": _("Finishing…"),
        }.get(progress.phase, progress.phase)
        overall = min(1.0, done_levels / total)
        in_level = 0.0
    box = st.status(
        _("Probing {endpoint} · {model} — {phase}").format(
            endpoint=escape_markdown(run.settings.endpoint), model=escape_markdown(run.settings.model), phase=label
        ),
        state="running",
        expanded=True,
    )  # not a `with` block: leaving one marks it complete
    box.progress(overall, text=_("Run: {done} of {total} levels done").format(done=done_levels, total=total))
    if progress.phase == "level":
        box.progress(
            in_level,
            text=_(
                "This level: {finished} of {total} requests finished ({ok} ok, {failed} failed), {sent} sent"
            ).format(
                finished=progress.finished,
                total=per_level,
                ok=progress.ok,
                failed=progress.failed,
                sent=progress.sent,
            ),
        )
    if progress.message:
        box.caption(escape_markdown(note_text(progress.message, _)))
    live_workers(box, progress.workers)
    if progress.levels:
        partial = RunResult(
            endpoint=run.settings.endpoint,
            model=run.settings.model,
            settings=run.settings,
            status=RunStatus.RUNNING,
            started_at=progress.levels[0].started_at,
            levels=list(progress.levels),
        )
        box.dataframe(without_gaps(level_rows(partial, _)), hide_index=True, key="probe.live.levels")
        box.plotly_chart(throughput_figure([partial], _), key="probe.live.throughput")


@st.fragment(run_every=POLL_S)
def _live() -> None:
    """Polls the worker: progress per level, and a Cancel button that works while the page waits."""
    run = _running()
    if run is None:
        return
    if run.done():
        st.rerun()  # the whole page then shows the result
    progress = run.progress()
    cancelling = bool(st.session_state.get(CANCELLING)) or progress.status == RunStatus.CANCELLED
    _progress_view(run, progress)
    st.button(
        _("Cancelling…") if cancelling else _("Cancel probe"),
        key="probe.cancel",
        icon=":material/stop_circle:",
        on_click=_cancel,
        disabled=cancelling,
        help=_("Stops sending; requests in flight are dropped; finished ones are kept."),
    )


def _result() -> None:
    run_id = st.session_state.get(LAST)
    if not run_id:
        return
    result = get_run(get_engine(), run_id, with_samples=False)
    if result is None:
        st.info(_("The last run was deleted."), icon="ℹ️")
        return
    requests, failed = sample_counts(get_engine(), run_id)
    st.subheader(_("Result"))
    st.caption(
        _("Run `{run_id}` · stored with every request · {requests} requests, {failed} failed").format(
            run_id=run_id, requests=requests, failed=failed
        )
    )
    deployment_caption(result)
    for problem in st.session_state.get("_probe.sink_errors", [])[:3]:
        st.warning(_("Some results could not be stored: {problem}").format(problem=escape_markdown(problem)), icon="⚠️")
    run_details(result, f"probe.result.{run_id}")
    left, right = st.columns([3, 1], vertical_alignment="center")
    with left:
        downloads(result, f"probe.result.{run_id}")
    right.page_link(
        "views/runs.py", label=_("Open in Probe runs"), icon=":material/history:", query_params={"runs": run_id}
    )


def body() -> None:
    """Draw the page."""
    st.title(_("How fast is it really?"))
    st.caption(
        _(
            "Point the probe at any OpenAI-compatible endpoint: it streams requests at each concurrency level and "
            "measures time to first token, time per output token and throughput, the way the handbook's section 2 "
            "does. Every run is stored (Probe runs). The link keeps every input except the API key."
        )
    )
    state.load()
    state.show_notes()
    _settle()
    busy = _running() is not None
    start_slot = _form(busy)
    form, errors = state.read()
    start = start_slot.button(
        _("Start probe"), key="probe.start", type="primary", icon=":material/play_arrow:", disabled=busy or form is None
    )
    if form is None:
        show_errors(_("Check these inputs; the probe can start once they are valid."), errors)
    elif start and not busy and _start(form):
        st.rerun()  # redraw the form with Start disabled while the probe runs
    if START_ERROR in st.session_state:
        st.error(
            _("The probe did not start: {reason}").format(reason=escape_markdown(st.session_state.pop(START_ERROR))),
            icon="🚫",
        )
    if not after_headline(PAGE):
        return  # the first run ends with the form; the rest follows once the browser has drawn it
    if _running() is not None:
        _live()
    else:
        _result()


guarded(body)
