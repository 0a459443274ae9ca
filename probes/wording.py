"""Texts the probe writes in English that are also machine text, and their wording in the page's language.

A run's notes, its progress messages, the rate search's stop detail, the SLO violations and the endpoint errors are
stored, exported (JSON) and printed by the CLI in English, byte for byte as the templates below make them. A page
words one with ``note_text(text, tr)``: the text is matched back to its template (marked ``N_`` for the catalog),
and the template's translation is filled with the same values (a ``{reason}`` or ``{detail}`` that is itself a
known text is worded too). A text made by no template (a server's or an exception's words) stays as it is;
``note_text(text)`` (English) is always ``text``.
"""

import re
from functools import cache
from string import Formatter

from i18n import N_, Translate, identity

# probes/runner.py, probes/worker.py: live progress messages (the preflight one is also the failed run's error)
CANNOT_REACH = N_("cannot reach {endpoint} ({kind}): {reason}")
DETECT_FAILED = N_("could not tell the deployment: {error}")
SEARCH_STOPPED = N_("rate search stopped: {detail}")
RECORD_FAILED = N_("could not record: {error}")
# probes/process_run.py: the page's probe runs in a process of its own
CHILD_LOST = N_("the probe's process stopped (exit code {code}); finished requests are kept")
CHILD_SLOW = N_("the probe's process did not start within {seconds} s")

# probes/ray_fleet.py, probes/ray_driver.py: --workers (a missing Ray, a lost worker, a client-bound worker's note)
RAY_MISSING = N_(
    "--workers needs Ray, which is not installed here: pip install -r requirements-ray.txt (or run without --workers)"
)
WORKER_LOST = N_(
    "worker {worker} on {node} was lost at {at} during level {level} ({reason}); its requests after its last batch "
    "are missing"
)
CLIENT_BOUND = N_(
    "worker {worker} used {cpu}% of a core (over {limit}%): it was client-bound, so its latencies may be inflated; "
    "add workers or machines"
)

# probes/replay.py: a trace replay's note (RunResult.notes)
UNCALIBRATED = N_("the server reported no prompt usage: trace input lengths are uncalibrated (one token per word)")
UNCALIBRATED_BECAUSE = N_(
    "the server reported no prompt usage: trace input lengths are uncalibrated (one token per word): {reason}"
)

# probes/ratesearch.py: why a rate search stopped (RateSearch.stop_detail)
FIRST_RATE_MISSED = N_("the first rate, {rate} requests/s, missed the SLO")
RATE_CAP = N_("every rate up to {rate} requests/s met the SLO")
CONVERGED = N_("{good} requests/s met the SLO and {bad} missed it (within {precision}%)")
MAX_LEVELS = N_("the level budget ({levels}) ran out")
MAX_REQUESTS = N_("{sent} of {budget} requests were sent; a level at {rate} requests/s would need about {need} more")
MAX_DURATION = N_("{elapsed} of {budget} s went by; a level at {rate} requests/s would take about {takes} s more")

# probes/metrics.py, probes/runner.py: why a level missed the SLO (SloOutcome.violations; TTFT/TPOT ones are figures)
NO_REQUESTS = N_("no requests")
NO_REQUEST_COMPLETED = N_("no request completed")
NO_REQUEST_FINISHED = N_("no request finished")
TOO_MANY_FAILED = N_("{failed} of {sent} requests failed (over {ratio})")

# probes/endpoint.py: why /v1/models could not be listed (EndpointUnreachableError, EndpointResponseError)
CANNOT_CONNECT = N_("cannot connect to {endpoint}: {reason}")
CONNECT_TIMEOUT = N_("connect timeout")
MODELS_HTTP = N_("{endpoint} answered HTTP {status} to /models")
MODELS_HTTP_AUTH = N_("{endpoint} answered HTTP {status} to /models (check the API key)")
MODELS_LATE = N_("{endpoint} did not answer /models in time")
NOT_A_MODEL_LIST = N_("{endpoint} /models is not an OpenAI model list: {error}")

TEMPLATES = (
    CANNOT_REACH,
    DETECT_FAILED,
    SEARCH_STOPPED,
    RECORD_FAILED,
    RAY_MISSING,
    WORKER_LOST,
    CLIENT_BOUND,
    UNCALIBRATED,
    UNCALIBRATED_BECAUSE,
    FIRST_RATE_MISSED,
    RATE_CAP,
    CONVERGED,
    MAX_LEVELS,
    MAX_REQUESTS,
    MAX_DURATION,
    NO_REQUESTS,
    NO_REQUEST_COMPLETED,
    NO_REQUEST_FINISHED,
    TOO_MANY_FAILED,
    CANNOT_CONNECT,
    CONNECT_TIMEOUT,
    MODELS_HTTP,
    MODELS_HTTP_AUTH,
    MODELS_LATE,
    NOT_A_MODEL_LIST,
)
NESTED = frozenset({"reason", "detail"})  # placeholders whose value may itself be a known text


@cache
def _pattern(template: str) -> re.Pattern[str]:
    """The template as a regular expression, each placeholder a named group."""
    parts = []
    for literal, name, _spec, _conversion in Formatter().parse(template):
        parts.append(re.escape(literal))
        if name is not None:
            parts.append(f"(?P<{name}>.*?)")
    return re.compile("".join(parts), re.DOTALL)


def note_text(text: str, tr: Translate = identity) -> str:
    """A text the probe wrote in English (a note, progress message, stop detail, violation), worded by tr."""
    for template in TEMPLATES:
        match = _pattern(template).fullmatch(text)
        if match is not None:
            values = {
                name: note_text(value, tr) if name in NESTED else value for name, value in match.groupdict().items()
            }
            return tr(template).format(**values)
    return text
