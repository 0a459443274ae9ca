"""The load generator: settings, a streamed OpenAI-compatible client, the sweep runner, metrics and results."""

from probes.config import (
    ApiKind,
    RunSettings,
    SloTargets,
    Timeouts,
    WorkloadKind,
    check_run_settings,
    redact_url,
)
from probes.deployment import Deployment
from probes.endpoint import ConnectionReport, check_connection, list_models, run_sync
from probes.errors import (
    EndpointResponseError,
    EndpointUnreachableError,
    ProbeError,
    ProbeSettingsError,
    WorkloadError,
)
from probes.metrics import best_concurrency_within_slo, summarize_level
from probes.models import (
    ErrorKind,
    LevelResult,
    RequestSample,
    RunResult,
    RunStatus,
    ServerMetrics,
    SloOutcome,
    Stats,
    TokenSource,
)
from probes.options import ProbeOptions, prepare_run
from probes.process_run import ProcessProbeRun
from probes.runner import Progress, run_probe
from probes.sink import MemorySink, NullSink, RunSink
from probes.worker import ProbeRun

__all__ = [
    "ApiKind",
    "ConnectionReport",
    "Deployment",
    "EndpointResponseError",
    "EndpointUnreachableError",
    "ErrorKind",
    "LevelResult",
    "MemorySink",
    "NullSink",
    "ProbeError",
    "ProbeOptions",
    "ProbeRun",
    "ProbeSettingsError",
    "ProcessProbeRun",
    "Progress",
    "RequestSample",
    "RunResult",
    "RunSettings",
    "RunSink",
    "RunStatus",
    "ServerMetrics",
    "SloOutcome",
    "SloTargets",
    "Stats",
    "Timeouts",
    "TokenSource",
    "WorkloadError",
    "WorkloadKind",
    "best_concurrency_within_slo",
    "check_connection",
    "check_run_settings",
    "list_models",
    "prepare_run",
    "redact_url",
    "run_probe",
    "run_sync",
    "summarize_level",
]
