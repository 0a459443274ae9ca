"""The live probe page's state: its form as widgets, its session keys, its choices' labels."""

from i18n import N_
from probes.form import ProbeForm
from ui.params import format_value
from ui.state import PageState, plain_widget_value

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


CONVERSATIONS_FILE = "probe.conversations_file"


# Choices' labels: marked here, translated where the select boxes draw them (ui/probe_views.py).
WORKLOADS = {
    "seed": N_("Handbook's eight fixed prompts"),
    "synthetic": N_("Synthetic prompts of a set length"),
    "shared_prefix": N_("Shared long system prompt (prefix caching)"),
    "code_json": N_("Code and JSON tasks (speculative decoding)"),
    "file": N_("My prompt file (JSONL)"),
    "trace": N_("Trace replay (arrival times and lengths)"),
    "sessions": N_("Multi-turn sessions (growing history)"),
}


SESSION_VARIANTS = {"chat": N_("Chat"), "agent": N_("Agent (long tool context, short answers)")}


TRACES = {
    "azure-code": N_("Azure 2023 code (8,819 requests, 57 min)"),
    "azure-conv": N_("Azure 2023 conversation (19,366 requests, 58 min)"),
}


TRACE_FORMATS = {
    "mooncake": "Mooncake JSONL",
    "azure": "Azure 2023 CSV",
    "csv": "timestamp_s,input_tokens,output_tokens",
}


TRACE_ATTRIBUTION = N_(
    "Built-in traces: Azure LLM inference 2023 trace (CC-BY 4.0), from Patel et al., *Splitwise: Efficient "
    "generative LLM inference using phase splitting*, ISCA 2024."
)


TRACE_FILE = "probe.trace_file"


APIS = {"chat": N_("Chat completions"), "completions": N_("Completions")}


def _to_widget(alias: str, value: object) -> object:
    if alias in ("levels", "rate"):
        return format_value(value)
    return plain_widget_value(alias, value)


state = PageState(PAGE, ProbeForm, to_widget=_to_widget)


K = state.key
