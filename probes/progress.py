"""Where a run is: counts the worker updates and the pages poll, safe across threads."""

from dataclasses import dataclass, field, replace
from threading import Lock

from probes.models import LevelResult, RequestSample, RunStatus


@dataclass
class Progress:
    """Where a run is; the worker updates it, pages poll a copy (ProbeRun.progress())."""

    status: RunStatus = RunStatus.RUNNING
    phase: str = "starting"  # starting, connecting, warmup, level, finished
    levels_total: int = 0
    level_index: int | None = None
    concurrency: int | None = None
    request_rate_rps: float | None = None  # the current level's rate (None: closed loop)
    requests_per_level: int = 0
    sent: int = 0  # in the current level
    finished: int = 0
    ok: int = 0
    failed: int = 0
    levels: list[LevelResult] = field(default_factory=list)
    message: str | None = None
    _lock: Lock = field(default_factory=Lock, repr=False)

    def snapshot(self) -> "Progress":
        """A consistent copy for another thread."""
        with self._lock:
            return replace(self, levels=list(self.levels), _lock=Lock())

    def update(self, **changes: object) -> None:
        """Set fields under the lock."""
        with self._lock:
            for key, value in changes.items():
                setattr(self, key, value)

    def count(self, sample: RequestSample) -> None:
        """One more finished request in the current level."""
        with self._lock:
            self.finished += 1
            if sample.ok:
                self.ok += 1
            else:
                self.failed += 1

    def level_done(self, level: LevelResult) -> None:
        """One more finished level."""
        with self._lock:
            self.levels.append(level)
