"""Probe runs whose process died read interrupted within seconds: a pass at start, then a sweeper thread per engine."""

import atexit
import logging
import threading
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Self

from sqlalchemy import Engine

from db.recovery import HEARTBEAT_STALE_S, recover_interrupted_runs, recover_orphaned_runs
from probes.worker import HEARTBEAT_INTERVAL_S

SWEEP_INTERVAL_S = HEARTBEAT_INTERVAL_S
# The longest a run of a dead process reads `running` while another process sweeps: its last heartbeat came before
# it died, goes stale HEARTBEAT_STALE_S later, and a sweep comes within SWEEP_INTERVAL_S (same host: one sweep).
INTERRUPTED_WITHIN_S = HEARTBEAT_STALE_S + SWEEP_INTERVAL_S
STOP_TIMEOUT_S = 10.0

log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


def sweep(engine: Engine, *, stale_after_s: float = HEARTBEAT_STALE_S, now: datetime | None = None) -> int:
    """Mark this host's RUNNING runs whose process is gone, then any RUNNING run with a stale heartbeat, INTERRUPTED.

    Samples and levels stay; returns how many. Safe with several processes and replicas (UPDATE ... WHERE status).
    """
    return recover_orphaned_runs(engine) + recover_interrupted_runs(engine, stale_after_s, now)


class Sweeper:
    """A daemon thread that sweeps every interval_s until stop(); a database error is logged, never raised.

    It holds its engine weakly and ends once nothing else holds it (a command line run called in-process).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        interval_s: float = SWEEP_INTERVAL_S,
        stale_after_s: float = HEARTBEAT_STALE_S,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._engine = weakref.ref(engine)
        self.interval_s = interval_s
        self.stale_after_s = stale_after_s
        self.marked = 0  # runs this sweeper marked interrupted
        self.failures = 0  # sweeps that failed (the database was unreachable, locked, not migrated...)
        self._clock = clock
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="db-sweeper", daemon=True)
        self._failing = False
        self._sweeping = threading.Lock()  # one sweep at a time (start_recovery's and the thread's)

    @property
    def engine(self) -> Engine | None:
        """The engine swept, while something else holds it."""
        return self._engine()

    def sweep_once(self) -> int:
        """Sweep now; returns the runs marked (0 when the database failed: logged, and tried again next time)."""
        with self._sweeping:
            return self._sweep_once()

    def _sweep_once(self) -> int:
        engine = self._engine()
        if engine is None:
            return 0
        try:
            marked = sweep(engine, stale_after_s=self.stale_after_s, now=self._clock())
        except Exception as exc:  # the sweeper must never take its process down
            self.failures += 1
            if not self._failing:
                first_line = (str(exc).splitlines() or [""])[0]
                log.warning(
                    "could not look for interrupted probe runs (trying again every %g s): %s: %s",
                    self.interval_s,
                    type(exc).__name__,
                    first_line,
                )
            self._failing = True
            return 0
        if self._failing:
            log.warning("looking for interrupted probe runs works again")
        self._failing = False
        if marked:
            log.info("marked %d probe run(s) interrupted: their process stopped", marked)
        self.marked += marked
        return marked

    def start(self) -> Self:
        """Start the thread (once)."""
        self._thread.start()
        return self

    def is_alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Ask the thread to stop and wait for it (a sweep under way finishes first)."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval_s) and self._engine() is not None:
            self.sweep_once()


_lock = threading.Lock()
_sweepers: dict[int, Sweeper] = {}  # by id(engine); an entry whose engine is gone is replaced when its id comes back


def start_sweeper(engine: Engine) -> Sweeper:
    """The engine's sweeper in this process, started if there is none (or it died, as after a fork)."""
    with _lock:
        for key in [key for key, old in _sweepers.items() if old.engine is None]:
            _sweepers.pop(key).stop(0)
        found = _sweepers.get(id(engine))
        if found is not None and found.engine is engine and found.is_alive():
            return found
        if found is not None:
            found.stop(0)
        sweeper = Sweeper(engine).start()
        _sweepers[id(engine)] = sweeper
        return sweeper


def stop_sweeper(engine: Engine, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stop the engine's sweeper, if it has one (before the engine is disposed or its database dropped)."""
    with _lock:
        sweeper = _sweepers.pop(id(engine), None)
    if sweeper is not None:
        sweeper.stop(timeout_s)


def stop_all_sweepers(timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stop every sweeper of this process."""
    with _lock:
        sweepers = list(_sweepers.values())
        _sweepers.clear()
    for sweeper in sweepers:
        sweeper.stop(timeout_s)


def start_recovery(engine: Engine) -> Sweeper:
    """On start of a process that uses the database: mark runs of dead processes at once, then keep sweeping.

    A failure of the first pass is logged; the sweeper tries again within SWEEP_INTERVAL_S.
    """
    sweeper = start_sweeper(engine)
    sweeper.sweep_once()
    return sweeper


atexit.register(stop_all_sweepers, 1.0)
