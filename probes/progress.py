"""Where a run is: counts the worker updates and the pages poll, safe across threads."""

from dataclasses import dataclass, field, replace
from threading import Lock

from probes.models import LevelResult, RequestSample, RunStatus

CLIENT_BOUND_CPU_PERCENT = 85.0  # a worker above this share of a core is client-bound: its latencies may be inflated


@dataclass(frozen=True)
class WorkerProgress:
    """One Ray worker of a --workers run, as of the driver's last drain (this level's counts)."""

    id: int
    node: str
    sent: int = 0
    finished: int = 0
    errors: int = 0
    cpu_percent: float | None = None  # of one core, over the level so far
    alive: bool = True
    pid: int | None = None  # its process on its node

    @property
    def client_bound(self) -> bool:
        """True above CLIENT_BOUND_CPU_PERCENT of a core: its latencies may be inflated by the client itself."""
        return self.cpu_percent is not None and self.cpu_percent > CLIENT_BOUND_CPU_PERCENT


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
    workers: list[WorkerProgress] = field(default_factory=list)  # --workers: each Ray worker
    _lock: Lock = field(default_factory=Lock, repr=False)

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its lock (a run in a child process sends its progress up: probes/process_run.py)."""
        with self._lock:
            return {key: value for key, value in self.__dict__.items() if key != "_lock"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state, _lock=Lock())

    def snapshot(self) -> "Progress":
        """A consistent copy for another thread."""
        with self._lock:
            return replace(self, levels=list(self.levels), workers=list(self.workers), _lock=Lock())

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
