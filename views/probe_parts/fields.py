"""The live probe's load settings and optional sections: workload, trace, sessions, rate, deployment."""

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from probes import (
    WorkloadKind,
)
from probes.deployment import display_names
from ui.lang import _
from ui.probe_fields import catalog_field, choice_field, number_field, text_field, toggle_field
from views.probe_parts.state import (
    APIS,
    CONVERSATIONS_FILE,
    PROMPT_FILE,
    SESSION_VARIANTS,
    TRACE_ATTRIBUTION,
    TRACE_FILE,
    TRACE_FORMATS,
    TRACES,
    WORKLOADS,
    K,
    state,
)


def load_fields(box: DeltaGenerator) -> None:
    """How to load the endpoint: the API, the workload (and its own fields), the levels and requests per level."""
    left, mid, right, last = st.columns(4)
    choice_field(left, state, "api", APIS)
    choice_field(mid, state, "workload", WORKLOADS)
    text_field(right, state, "levels")
    number_field(last, state, "requests", step=8)
    workload = st.session_state.get(K("workload"))
    if workload == WorkloadKind.SYNTHETIC.value:
        number_field(box, state, "input_tokens", step=128)
    elif workload == WorkloadKind.SHARED_PREFIX.value:
        number_field(box, state, "prefix_tokens", step=256)
    elif workload == WorkloadKind.FILE.value:
        st.file_uploader(
            _("Prompt file (JSONL)"),
            type=["jsonl", "json", "txt"],
            key=PROMPT_FILE,
            help=_(
                'One {"prompt": ...}, {"system": ..., "prompt": ...} or {"messages": [...]} per '
                "line. The file is not part of the link: upload it again on another screen."
            ),
        )
    elif workload == WorkloadKind.TRACE.value:
        _trace_fields(box)
    elif workload == WorkloadKind.SESSIONS.value:
        _session_fields(box)


def sections() -> None:
    """The optional settings, each in a closed section: load and generation, rates, SLO, timeouts, deployment, power."""
    with st.expander(_("Load and generation"), icon=":material/speed:") as load:
        left, mid, right = st.columns(3)
        number_field(left, state, "max_tokens", step=32)
        number_field(mid, state, "warmup", step=1)
        number_field(right, state, "temperature", step=0.1, fmt="%.2f")
        number_field(left, state, "duration", step=10.0, fmt="%.4g", placeholder=_("empty: no bound"))
        toggle_field(mid, state, "ignore_eos")
        text_field(load, state, "label", placeholder=_("e.g. A800 AWQ baseline"))
    with st.expander(_("Request rates (open loop)"), icon=":material/trending_up:"):
        _rate_fields()
    with st.expander(_("SLO targets"), icon=":material/flag:"):
        left, mid, right = st.columns(3)
        number_field(left, state, "ttft_p50", step=50.0, fmt="%.6g")
        number_field(mid, state, "ttft_p99", step=100.0, fmt="%.6g")
        number_field(right, state, "tpot_p50", step=5.0, fmt="%.6g")
    with st.expander(_("Timeouts"), icon=":material/timer:"):
        left, mid, right = st.columns(3)
        number_field(left, state, "connect_timeout", step=1.0, fmt="%.4g")
        number_field(mid, state, "ttft_timeout", step=5.0, fmt="%.4g")
        number_field(right, state, "stall_timeout", step=5.0, fmt="%.4g")
    with st.expander(_("Deployment (optional: lets the estimate be calibrated by this run)"), icon=":material/dns:"):
        _deployment_fields()
    with st.expander(_("GPU power (optional: a DCGM exporter)"), icon=":material/bolt:"):
        st.caption(
            _(
                "With the URL of a DCGM exporter on the GPU machine, the run reads each GPU's power while it runs "
                "and reports the energy it measured: joules per output token and kWh, and power on the run's time "
                "axis. A failed read is counted and never stops the run."
            )
        )
        left, right = st.columns([3, 1])
        text_field(left, state, "dcgm_url", placeholder="http://gpu-box:9400/metrics")
        number_field(right, state, "dcgm_interval", step=0.5, fmt="%.4g")
    with st.expander(_("Many machines (optional: Ray workers)"), icon=":material/hub:"):
        st.caption(
            _(
                "Spread every level over Ray workers: each sends its exact share from one shared start, and the "
                "figures come from all their requests. Without a Ray address, a local Ray is started for the run."
            )
        )
        left, right = st.columns([1, 3])
        number_field(left, state, "workers", step=1, placeholder=_("empty: one process"))
        text_field(right, state, "ray_address", placeholder="ray-head:6379")


def _trace_fields(box: DeltaGenerator) -> None:
    """Trace replay: a built-in trace or an uploaded file, its format, the slice and the speed."""
    left, right = box.columns(2)
    catalog_field(left, state, "trace", TRACES, placeholder=_("or upload a trace file"))
    catalog_field(right, state, "trace_format", TRACE_FORMATS, placeholder=_("told from the file"))
    box.caption(_(TRACE_ATTRIBUTION))
    box.file_uploader(
        _("Trace file (used when no built-in trace is picked)"),
        type=["jsonl", "json", "csv", "txt"],
        key=TRACE_FILE,
        help=_(
            "Mooncake JSONL, the Azure 2023 CSV or timestamp_s,input_tokens,output_tokens. The file is not part "
            "of the link: upload it again on another screen."
        ),
    )
    left, mid, right, last = box.columns(4)
    number_field(left, state, "trace_speed", step=1.0, fmt="%.6g")
    number_field(mid, state, "trace_start", step=60.0, fmt="%.6g")
    number_field(right, state, "trace_duration", step=60.0, fmt="%.6g", placeholder=_("empty: to the end"))
    number_field(last, state, "trace_limit", step=100, placeholder=_("empty: no limit"))


def _session_fields(box: DeltaGenerator) -> None:
    """Sessions: users, turns, think time, chat or agent, or the user's own conversations."""
    left, mid, right, last = box.columns(4)
    number_field(left, state, "sessions", step=1)
    number_field(mid, state, "turns", step=1)
    number_field(right, state, "think_time", step=0.5, fmt="%.4g")
    choice_field(last, state, "session_variant", SESSION_VARIANTS)
    box.file_uploader(
        _("Conversations file (optional: else synthetic sessions)"),
        type=["jsonl", "json", "txt"],
        key=CONVERSATIONS_FILE,
        help=_(
            'JSONL in the OpenAI messages format, one {"messages": [...]} per line; each user message is a turn '
            "and recorded answers are replaced by the server's. The file is not part of the link: upload it again "
            "on another screen."
        ),
    )
    box.caption(
        _(
            "Every turn resends the whole conversation so far, the server's own answers included, so later turns "
            "show what the prefix cache saves. The levels and rates are not used: the sessions are one level."
        )
    )


def _rate_fields() -> None:
    """Open-loop load: a list of request rates (one level each), or a search for the highest rate within the SLO."""
    st.caption(
        _(
            "Give rates to send requests at those arrival rates instead of the concurrency levels (one level per "
            "rate), or let the probe find the highest rate whose level meets the SLO targets."
        )
    )
    left, mid, right = st.columns(3)
    text_field(left, state, "rate", placeholder=_("empty: closed loop, e.g. 1,2,4,8"))
    number_field(mid, state, "burstiness", step=0.5, fmt="%.4g")
    number_field(right, state, "max_in_flight", step=8, placeholder=_("the highest concurrency"))
    left, mid, right = st.columns([2, 1, 1], vertical_alignment="bottom")
    toggle_field(left, state, "find_max_rate")
    number_field(mid, state, "search_max_levels", step=1)
    number_field(right, state, "search_max_duration", step=60.0, fmt="%.6g")


def _deployment_fields() -> None:
    """The deployment measured: optional; what is left empty is read from the server when it tells."""
    names = display_names()
    st.caption(
        _(
            "A run calibrates the estimates of its deployment once all five are known. Left empty, the engine is "
            "read from the server's metrics or model list, and the model and quantization from the served "
            "checkpoint when it names one catalog entry; the run says what was detected."
        )
    )
    left, mid, right = st.columns([3, 2, 3])
    catalog_field(left, state, "gpu", names["gpu"], placeholder=_("not stated"))
    number_field(mid, state, "gpu_count", step=1, placeholder=_("not stated"))
    catalog_field(right, state, "deploy_model", names["model"], placeholder=_("detect from /v1/models"))
    left, right = st.columns(2)
    catalog_field(left, state, "engine", names["engine"], placeholder=_("detect from the server"))
    catalog_field(right, state, "quant", names["quant"], placeholder=_("detect from the checkpoint name"))
