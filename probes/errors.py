"""Domain exceptions of the probe: each carries a message a person can act on."""

from dataclasses import dataclass


class ProbeError(Exception):
    """Base class of every expected probe failure (shown once at the page edge or by the CLI)."""


class ProbeSettingsError(ProbeError):
    """The run settings are refused (absurd values, over a safety cap, a forbidden host)."""


class EndpointUnreachableError(ProbeError):
    """No request could reach the endpoint at all (refused, unreachable, TLS, connect timeout)."""


class EndpointResponseError(ProbeError):
    """The endpoint answered, but not as an OpenAI-compatible server would (e.g. listing models failed)."""


class WorkloadError(ProbeError):
    """A workload could not be built (e.g. an unreadable or malformed prompt file)."""


@dataclass(frozen=True, slots=True)
class LineProblem:
    """One bad line of an input file (a trace, a conversations file), as the error message lists it."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"
