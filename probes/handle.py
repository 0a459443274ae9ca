"""What a handle on a probe run answers, wherever the run goes: its progress, whether it ended, and with what."""

import threading

from probes.models import RunResult
from probes.progress import Progress


class RunHandle:
    """The read side of a started probe run: ProbeRun (a thread here) and ProcessProbeRun (a child process)."""

    def __init__(self) -> None:
        self._progress = Progress()
        self._finished = threading.Event()
        self._result: RunResult | None = None
        self._error: BaseException | None = None

    def progress(self) -> Progress:
        """A copy of the run's progress as last known (safe from any thread)."""
        return self._progress.snapshot()

    def done(self) -> bool:
        """True once the run ended and everything that hears of it has."""
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until done (or timeout); True if done."""
        return self._finished.wait(timeout)

    def result(self) -> RunResult | None:
        """The run's result once done (None before, or when it ended without one: see .error)."""
        return self._result

    @property
    def error(self) -> BaseException | None:
        """Why the run ended without a result, if it did."""
        return self._error
