"""Live probe: measure TTFT, TPOT and throughput of an OpenAI-compatible endpoint at several concurrency levels."""

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from db.runs import RunRecorder, get_run, sample_counts
from probes import (
    ProbeError,
    ProbeRun,
    Progress,
    RunResult,
    RunStatus,
    WorkloadKind,
    check_connection,
    run_sync,
)
from probes.figures import level_rows, throughput_figure
from probes.form import ProbeForm, prepare_run
from ui.errors import guarded, show_errors
from ui.live_runs import live_runs
from ui.params import format_value, validate_params
from ui.probe_views import downloads, run_details
from ui.resources import get_engine
from ui.state import PageState, plain_widget_value
from ui.text import escape_markdown

PAGE = "probe"
POLL_S = 0.5
API_KEY = "probe.api_key"  # a password widget, deliberately outside the page model: never in the URL
PICK = "probe.pick_model"
PROMPT_FILE = "probe.prompt_file"
RUN = "_probe.run"  # this session's ProbeRun (the worker thread's handle)
RUN_ID = "_probe.run_id"
LAST = "_probe.last_run_id"  # the finished run shown below the form
SERVED = "_probe.served_models"
REPORT = "_probe.connection"
START_ERROR = "_probe.start_error"
CANCELLING = "_probe.cancelling"
TEMP_FILE = "_probe.temp_prompt_file"

WORKLOADS = {
    "seed": "Handbook's eight fixed prompts",
    "synthetic": "Synthetic prompts of a set length",
    "shared_prefix": "Shared long system prompt (prefix caching)",
    "code_json": "Code and JSON tasks (speculative decoding)",
    "file": "My prompt file (JSONL)",
}
APIS = {"chat": "Chat completions", "completions": "Completions"}


def _to_widget(alias: str, value: object) -> object:
    if alias == "levels":
        return format_value(value)
    return plain_widget_value(alias, value)


state = PageState(PAGE, ProbeForm, to_widget=_to_widget)
K = state.key


def _running() -> ProbeRun | None:
    run = st.session_state.get(RUN)
    return run if isinstance(run, ProbeRun) else None


def _test_connection() -> None:
    """Button callback: list the served models and, with a model, send one tiny request."""
    model = str(st.session_state.get(K("model")) or "").strip() or None
    needed = {alias: st.session_state.get(K(alias)) for alias in ("url", "api", "connect_timeout", "ttft_timeout")}
    form, errors, _ = validate_params(ProbeForm, needed, source="form")
    if errors:
        st.session_state[REPORT] = (False, errors[0])
        return
    try:
        report = run_sync(
            check_connection(
                form.base_url, st.session_state.get(API_KEY) or None, model, api=form.api, timeouts=form.timeouts
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
    """The form; returns the slot where the Start button goes (drawn once the inputs are read)."""
    with st.container(border=True):
        left, mid, right = st.columns([3, 2, 2])
        left.text_input(
            "Endpoint URL",
            key=K("url"),
            placeholder="http://host:8000/v1",
            help="The OpenAI-compatible base URL (vLLM, SGLang, LMDeploy, TGI, llama.cpp, Ollama).",
        )
        mid.text_input(
            "API key",
            key=API_KEY,
            type="password",
            placeholder="optional",
            help="Sent to the endpoint only: never stored, logged, exported or put in the link.",
        )
        right.text_input(
            "Model",
            key=K("model"),
            placeholder="as the server names it",
            help="Type it, or press Test connection to list what the server serves.",
        )
        served = st.session_state.get(SERVED)
        if served and served[1]:
            st.selectbox(
                f"Models served by {served[0]}",
                served[1],
                key=PICK,
                index=None,
                placeholder="pick one to use it",
                on_change=_pick_model,
            )
        left, mid, right, last = st.columns(4)
        left.selectbox("API", list(APIS), key=K("api"), format_func=APIS.__getitem__)
        mid.selectbox("Workload", list(WORKLOADS), key=K("workload"), format_func=WORKLOADS.__getitem__)
        right.text_input("Concurrency levels", key=K("levels"), help="Comma-separated, e.g. 1,2,4,8,16.")
        last.number_input("Requests per level", key=K("requests"), step=8, min_value=1)
        workload = st.session_state.get(K("workload"))
        if workload == WorkloadKind.SYNTHETIC.value:
            st.number_input("Prompt length (tokens)", key=K("input_tokens"), step=128, min_value=1)
        elif workload == WorkloadKind.SHARED_PREFIX.value:
            st.number_input("Shared system prompt (tokens)", key=K("prefix_tokens"), step=256, min_value=1)
        elif workload == WorkloadKind.FILE.value:
            st.file_uploader(
                "Prompt file (JSONL)",
                type=["jsonl", "json", "txt"],
                key=PROMPT_FILE,
                help='One {"prompt": ...}, {"system": ..., "prompt": ...} or {"messages": [...]} per '
                "line. The file is not part of the link: upload it again on another screen.",
            )
        with st.expander("Load and generation", icon=":material/speed:"):
            left, mid, right = st.columns(3)
            left.number_input("Max tokens", key=K("max_tokens"), step=32, min_value=1)
            mid.number_input("Warm-up requests (not counted)", key=K("warmup"), step=1, min_value=0)
            right.number_input("Temperature", key=K("temperature"), step=0.1, format="%.2f")
            left.number_input(
                "Request rate (req/s)",
                key=K("rate"),
                value=None,
                step=1.0,
                format="%.4g",
                placeholder="empty: closed loop",
                help="Poisson arrivals at this rate, at most the level's concurrency in flight.",
            )
            mid.number_input(
                "Level duration bound (s)",
                key=K("duration"),
                value=None,
                step=10.0,
                format="%.4g",
                placeholder="empty: no bound",
                help="Stop sending new requests after this long.",
            )
            right.toggle(
                "Ignore EOS (always generate max tokens)", key=K("ignore_eos"), help="vLLM / SGLang extension."
            )
            st.text_input(
                "Run label",
                key=K("label"),
                max_chars=200,
                placeholder="e.g. A800 AWQ baseline",
                help="A name for the run in Probe runs.",
            )
        with st.expander("SLO targets", icon=":material/flag:"):
            left, mid, right = st.columns(3)
            left.number_input("TTFT p50 (ms)", key=K("ttft_p50"), step=50.0, format="%.6g")
            mid.number_input("TTFT p99 (ms)", key=K("ttft_p99"), step=100.0, format="%.6g")
            right.number_input("TPOT p50 (ms)", key=K("tpot_p50"), step=5.0, format="%.6g")
        with st.expander("Timeouts", icon=":material/timer:"):
            left, mid, right = st.columns(3)
            left.number_input("Connect (s)", key=K("connect_timeout"), step=1.0, format="%.4g")
            mid.number_input("First token (s)", key=K("ttft_timeout"), step=5.0, format="%.4g")
            right.number_input(
                "Stall between chunks (s)",
                key=K("stall_timeout"),
                step=5.0,
                format="%.4g",
                help="Also ended: a stream running past max tokens.",
            )
        left, right, rest = st.columns([1.4, 1.2, 3], vertical_alignment="center")
        left.button(
            "Test connection", key="probe.test", icon=":material/lan:", on_click=_test_connection, disabled=busy
        )
        report = st.session_state.get(REPORT)
        if report is not None:
            ok, message = report
            rest.markdown(f":{'green' if ok else 'red'}[{'✓' if ok else '✗'}] " + _plain(message))
    return right


def _plain(text: str) -> str:
    return escape_markdown(text)


def _prompt_file() -> str | None:
    upload = st.session_state.get(PROMPT_FILE)
    if upload is None:
        return None
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", prefix="probe-prompts-", delete=False) as out:
        out.write(upload.getvalue())
    st.session_state[TEMP_FILE] = out.name  # removed once the run is over
    return out.name


def _start(form: ProbeForm) -> bool:
    """Check the settings, record the run, start the worker (True); refused settings are shown once (False)."""
    st.session_state.pop(START_ERROR, None)
    try:
        prompt_file = _prompt_file() if form.workload == WorkloadKind.FILE else None
        settings = prepare_run(form, st.session_state.get(API_KEY) or None, prompt_file)
    except ProbeError as exc:
        st.session_state[START_ERROR] = str(exc)
        _drop_temp_file()
        return False
    recorder = RunRecorder(get_engine(), settings)
    run = ProbeRun(
        settings,
        on_sample=recorder.on_sample,
        on_level=recorder.on_level,
        on_heartbeat=recorder.on_heartbeat,
        on_finish=recorder.on_finish,
    )
    try:
        run.start()
    except ProbeError as exc:
        recorder.on_finish(None, exc)
        st.session_state[START_ERROR] = str(exc)
        _drop_temp_file()
        return False
    st.session_state[RUN] = run
    st.session_state[RUN_ID] = recorder.run_id
    live_runs().add(recorder.run_id, run)
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
        _drop_temp_file()


def _drop_temp_file() -> None:
    path = st.session_state.pop(TEMP_FILE, None)
    if path:
        Path(path).unlink(missing_ok=True)


def _progress_view(run: ProbeRun, progress: Progress) -> None:
    total = max(1, progress.levels_total or len(run.settings.concurrency))
    per_level = max(1, progress.requests_per_level or run.settings.requests_per_level)
    done_levels = len(progress.levels)
    index = progress.level_index if progress.level_index is not None else 0
    if progress.phase == "level":
        label = f"Level {index + 1} of {total}: concurrency {progress.concurrency}"
        overall = min(1.0, (index * per_level + progress.finished) / (total * per_level))
        in_level = min(1.0, progress.finished / per_level)
    else:
        label = {
            "starting": "Starting…",
            "connecting": "Connecting…",
            "warmup": "Warming up (not counted)…",
            "finished": "Finishing…",
        }.get(progress.phase, progress.phase)
        overall = min(1.0, done_levels / total)
        in_level = 0.0
    box = st.status(
        f"Probing {_plain(run.settings.endpoint)} · {_plain(run.settings.model)} — {label}",
        state="running",
        expanded=True,
    )  # not a `with` block: leaving one marks it complete
    box.progress(overall, text=f"Run: {done_levels} of {total} levels done")
    if progress.phase == "level":
        box.progress(
            in_level,
            text=f"This level: {progress.finished} of {per_level} requests finished "
            f"({progress.ok} ok, {progress.failed} failed), {progress.sent} sent",
        )
    if progress.message:
        box.caption(_plain(progress.message))
    if progress.levels:
        partial = RunResult(
            endpoint=run.settings.endpoint,
            model=run.settings.model,
            settings=run.settings,
            status=RunStatus.RUNNING,
            started_at=progress.levels[0].started_at,
            levels=list(progress.levels),
        )
        box.dataframe(pd.DataFrame(level_rows(partial)), hide_index=True, key="probe.live.levels")
        box.plotly_chart(throughput_figure([partial]), key="probe.live.throughput")


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
        "Cancelling…" if cancelling else "Cancel probe",
        key="probe.cancel",
        icon=":material/stop_circle:",
        on_click=_cancel,
        disabled=cancelling,
        help="Stops sending; requests in flight are dropped; finished ones are kept.",
    )


def _result() -> None:
    run_id = st.session_state.get(LAST)
    if not run_id:
        return
    result = get_run(get_engine(), run_id, with_samples=False)
    if result is None:
        st.info("The last run was deleted.", icon="ℹ️")
        return
    requests, failed = sample_counts(get_engine(), run_id)
    st.subheader("Result")
    st.caption(f"Run `{run_id}` · stored with every request · {requests} requests, {failed} failed")
    for problem in st.session_state.get("_probe.sink_errors", [])[:3]:
        st.warning(f"Some results could not be stored: {_plain(problem)}", icon="⚠️")
    run_details(result, f"probe.result.{run_id}")
    left, right = st.columns([3, 1], vertical_alignment="center")
    with left:
        downloads(result, f"probe.result.{run_id}")
    right.page_link(
        "views/runs.py", label="Open in Probe runs", icon=":material/history:", query_params={"runs": run_id}
    )


def body() -> None:
    """Draw the page."""
    st.title("How fast is it really?")
    st.caption(
        "Point the probe at any OpenAI-compatible endpoint: it streams requests at each concurrency level and "
        "measures time to first token, time per output token and throughput, the way the handbook's section 2 "
        "does. Every run is stored (Probe runs). The link keeps every input except the API key."
    )
    state.load()
    state.show_notes()
    _settle()
    busy = _running() is not None
    start_slot = _form(busy)
    form, errors = state.read()
    start = start_slot.button(
        "Start probe", key="probe.start", type="primary", icon=":material/play_arrow:", disabled=busy or form is None
    )
    if form is None:
        show_errors("Check these inputs; the probe can start once they are valid.", errors)
    elif start and not busy and _start(form):
        st.rerun()  # redraw the form with Start disabled while the probe runs
    if START_ERROR in st.session_state:
        st.error(f"The probe did not start: {_plain(st.session_state.pop(START_ERROR))}", icon="🚫")
    if _running() is not None:
        _live()
    else:
        _result()


guarded(body)
