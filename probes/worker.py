"""A probe run in a worker thread with its own event loop; its sink hears of it in a separate thread; cancellable."""

import asyncio
import contextlib
import importlib.util
import queue
import threading
from collections.abc import Callable, Sequence
from itertools import groupby
from typing import cast

import httpx2

from probes.config import RunSettings, check_run_settings
from probes.deployment import Deployment
from probes.errors import ProbeError, ProbeSettingsError
from probes.handle import RunHandle
from probes.models import LevelResult, RequestSample, RunResult, RunStatus
from probes.power import PowerSample
from probes.runner import run_probe
from probes.sink import NullSink, RunSink
from probes.wording import RAY_MISSING, RECORD_FAILED
from probes.workloads import build_prompts
from settings import Settings

_STOP = "stop"
HEARTBEAT_INTERVAL_S = 5.0  # a run beats this often while it runs; db/ derives the staleness and sweep from it
MAX_BATCH = 500  # finished requests handed to the sink in one call at most


class _Queued(NullSink):
    """The sink run_probe is given on the event loop: it queues each event for the sink thread."""

    def __init__(self, events: "queue.SimpleQueue[tuple[str, object]]") -> None:
        self.events = events

    def deployment(self, deployment: Deployment) -> None:
        self.events.put(("deployment", deployment))

    def samples(self, samples: Sequence[RequestSample]) -> None:
        for sample in samples:
            self.events.put(("sample", sample))

    def level_finished(self, level: LevelResult) -> None:
        self.events.put(("level", level))

    def power(self, samples: Sequence[PowerSample]) -> None:
        self.events.put(("power", list(samples)))


def _ray_installed() -> bool:
    """True when ray can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("ray") is not None
    except ValueError:  # sys.modules["ray"] is None: imports of it fail
        return False


class ProbeRun(RunHandle):
    """Start with .start(); poll .progress(); .cancel() keeps what finished; .wait() then .result().

    The run's sink (probes/sink.py) hears of it in order, from one sink thread, never on the event loop, so a slow
    sink (a database write) does not distort the timings: requests that finished meanwhile come as one batch. Its
    heartbeat runs in a thread of its own every heartbeat_s until the run ended, whether samples arrive or not (a slow
    endpoint) and however long the sink takes. Without a sink nothing hears of the run but its result.
    """

    def __init__(
        self,
        settings: RunSettings,
        *,
        sink: RunSink | None = None,
        heartbeat_s: float = HEARTBEAT_INTERVAL_S,
        transport: httpx2.AsyncBaseTransport | None = None,
        limits: Settings | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self._sink = sink
        self.run_id: str | None = None  # the sink's id of the run, once started
        self._heartbeat_s = heartbeat_s
        self._transport = transport
        self._limits = limits
        self._queue: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[RunResult] | None = None
        self._cancel_requested = threading.Event()
        self.sink_errors: list[str] = []
        self._threads: list[threading.Thread] = []

    def start(self) -> "ProbeRun":
        """Tell the sink, check the settings (ProbeSettingsError, WorkloadError raise here), start the threads.

        Refused settings end the sink's run as failed before they raise; the sink's own failure to start raises.
        """
        if self._sink is not None:
            self.run_id = self._sink.started(self.settings)
        try:
            check_run_settings(self.settings, self._limits)
            if self.settings.workers and not _ray_installed():
                raise ProbeSettingsError(RAY_MISSING)
            build_prompts(self.settings, self.settings.requests_per_level)
        except ProbeError as exc:
            if self._sink is not None:
                self._call(self._sink.failed, exc)
            raise
        self._threads = [
            threading.Thread(target=self._work, name="probe-run", daemon=True),
            threading.Thread(target=self._drain, name="probe-sink", daemon=True),
        ]
        if self._sink is not None:
            self._threads.append(threading.Thread(target=self._beat, name="probe-heartbeat", daemon=True))
        for thread in self._threads:
            thread.start()
        return self

    def cancel(self) -> None:
        """Stop sending; requests in flight are dropped; finished samples stay (the result is CANCELLED)."""
        self._cancel_requested.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the run already ended
                loop.call_soon_threadsafe(task.cancel)

    def _work(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:

            async def main() -> RunResult:
                self._task = asyncio.current_task()
                if self._cancel_requested.is_set():
                    raise asyncio.CancelledError
                if self.settings.workers:  # spread over Ray workers: only then is ray imported
                    from probes.ray_driver import run_spread

                    return await run_spread(
                        self.settings, sink=_Queued(self._queue), progress=self._progress, limits=self._limits
                    )
                return await run_probe(
                    self.settings,
                    sink=_Queued(self._queue),
                    progress=self._progress,
                    transport=self._transport,
                    limits=self._limits,
                )

            self._result = loop.run_until_complete(main())
        except asyncio.CancelledError:
            self._progress.update(status=RunStatus.CANCELLED, phase="finished")
            self._error = None
        except BaseException as exc:  # reported through .error and on_finish
            self._error = exc
            self._progress.update(status=RunStatus.FAILED, phase="finished", message=str(exc))
        finally:
            loop.close()
            self._queue.put((_STOP, None))

    def _call(self, func: Callable[..., None], *args: object) -> None:
        try:
            func(*args)
        except Exception as exc:  # a sink failure is reported, not fatal to the run
            self.sink_errors.append(f"{type(exc).__name__}: {exc}")
            self._progress.update(message=RECORD_FAILED.format(error=exc))

    def _beat(self) -> None:
        sink = self._sink
        assert sink is not None
        while not self._finished.wait(self._heartbeat_s):
            self._call(sink.heartbeat)

    def _drain(self) -> None:
        """The sink thread: hand the queued events to the sink in order, finished requests in batches."""
        sink = self._sink or NullSink()
        stopped = False
        while not stopped:
            events = [self._queue.get()]
            while len(events) < MAX_BATCH and not self._queue.empty():
                events.append(self._queue.get())
            for kind, group in groupby(events, key=lambda event: event[0]):
                payloads = [payload for _, payload in group]
                if kind == _STOP:
                    stopped = True
                elif kind == "sample":
                    self._call(sink.samples, payloads)
                elif kind == "power":
                    self._call(sink.power, [sample for batch in payloads for sample in cast(list[PowerSample], batch)])
                else:
                    call = sink.deployment if kind == "deployment" else sink.level_finished
                    for payload in payloads:
                        self._call(call, payload)
        if self._result is not None:
            self._call(sink.finished, self._result)
        else:
            self._call(sink.failed, self._error)
        self._finished.set()
