"""Where a run goes as it happens: the one sink interface a run is given, a sink that drops it, one that keeps it.

ProbeRun (probes/worker.py) calls a sink in this order: `started` once in the caller's thread, before anything is
sent; then, from one sink thread and never on the event loop, `deployment` (at most once, before the first sample),
`samples` (batches of finished requests, in order), `level_finished` (each finished level) and `power` (a DCGM
exporter's readings, when the run scrapes one) as they come, and
last exactly one of `finished` (the run ended with a result: completed, cancelled or failed) or `failed` (it ended
without one). `heartbeat` comes from a thread of its own every few seconds until then. run_probe (probes/runner.py)
calls only `deployment`, `samples`, `level_finished` and `power`, inline on its event loop.

The database's recorder (db/recorder.py) is the sink of `python -m probes` and of the /probe page; the Ray driver
and the importers hand their runs to the same interface. A sink's exception is reported (ProbeRun.sink_errors),
never fatal to the run, except in `started`, which the caller sees: a run that cannot be recorded does not start.
"""

from collections.abc import Sequence
from typing import Protocol

from probes.config import RunSettings
from probes.deployment import Deployment
from probes.models import LevelResult, RequestSample, RunResult
from probes.power import PowerSample


class RunSink(Protocol):
    """The events of one run, in the order the module docstring gives."""

    def started(self, settings: RunSettings) -> str | None:
        """The run is about to start with these settings; the id it is stored under (None: not stored)."""
        ...

    def deployment(self, deployment: Deployment) -> None:
        """The deployment, with what the server told filled in (only when that changed it)."""

    def samples(self, samples: Sequence[RequestSample]) -> None:
        """Finished requests, in the order they finished."""

    def level_finished(self, level: LevelResult) -> None:
        """A finished level's figures."""

    def power(self, samples: Sequence[PowerSample]) -> None:
        """GPU power readings of one scrape (or its failure), in time order."""

    def heartbeat(self) -> None:
        """The run is alive (whether requests finish or not)."""

    def finished(self, result: RunResult) -> None:
        """The run ended with this result (its status says how)."""

    def failed(self, error: BaseException | None) -> None:
        """The run ended without a result: this error, or None when it was cancelled before it started."""


class NullSink:
    """A sink that keeps nothing: the run of a command line without a database, and a base for partial sinks."""

    def started(self, settings: RunSettings) -> str | None:
        """Nothing is stored: no id."""
        return None

    def deployment(self, deployment: Deployment) -> None:
        """Dropped."""

    def samples(self, samples: Sequence[RequestSample]) -> None:
        """Dropped."""

    def level_finished(self, level: LevelResult) -> None:
        """Dropped."""

    def power(self, samples: Sequence[PowerSample]) -> None:
        """Dropped."""

    def heartbeat(self) -> None:
        """Dropped."""

    def finished(self, result: RunResult) -> None:
        """Dropped."""

    def failed(self, error: BaseException | None) -> None:
        """Dropped."""


class MemorySink(NullSink):
    """A sink that keeps every event in memory (tests, and runs read back in the same process)."""

    def __init__(self) -> None:
        self.settings: RunSettings | None = None
        self.deployments: list[Deployment] = []
        self.sample_list: list[RequestSample] = []
        self.batches = 0  # calls of samples()
        self.levels: list[LevelResult] = []
        self.power_samples: list[PowerSample] = []
        self.heartbeats = 0
        self.result: RunResult | None = None
        self.error: BaseException | None = None
        self.ended = False  # finished or failed was called
        self.events: list[str] = []  # the order of the calls: started, deployment, sample (one per request), ...

    def started(self, settings: RunSettings) -> str | None:
        """Keep the settings; not stored, so no id."""
        self.settings = settings
        self.events.append("started")
        return None

    def deployment(self, deployment: Deployment) -> None:
        """Keep the deployment."""
        self.deployments.append(deployment)
        self.events.append("deployment")

    def samples(self, samples: Sequence[RequestSample]) -> None:
        """Keep the requests."""
        self.sample_list.extend(samples)
        self.batches += 1
        self.events.extend("sample" for _ in samples)

    def level_finished(self, level: LevelResult) -> None:
        """Keep the level."""
        self.levels.append(level)
        self.events.append("level")

    def power(self, samples: Sequence[PowerSample]) -> None:
        """Keep the readings."""
        self.power_samples.extend(samples)
        self.events.append("power")

    def heartbeat(self) -> None:
        """Count it."""
        self.heartbeats += 1

    def finished(self, result: RunResult) -> None:
        """Keep the result."""
        self.result, self.ended = result, True
        self.events.append("finished")

    def failed(self, error: BaseException | None) -> None:
        """Keep the error."""
        self.error, self.ended = error, True
        self.events.append("failed")
