"""A probe run in a worker thread with its own event loop; callbacks run in a separate sink thread; cancellable."""

import asyncio
import queue
import threading
from collections.abc import Callable

import httpx2

from probes.config import RunSettings, check_run_settings
from probes.deployment import Deployment
from probes.models import LevelResult, RequestSample, RunResult, RunStatus
from probes.runner import Progress, run_probe
from probes.wording import RECORD_FAILED
from probes.workloads import build_prompts
from settings import Settings

FinishSink = Callable[[RunResult | None, BaseException | None], None]
_STOP = "stop"
HEARTBEAT_INTERVAL_S = 5.0  # a run beats this often while it runs; db/ derives the staleness and sweep from it


class ProbeRun:
    """Start with .start(); poll .progress(); .cancel() keeps what finished; .wait() then .result().

    on_sample / on_level / on_deployment / on_finish run in order in one sink thread, never on the event loop, so a
    slow sink (a database write) does not distort the timings. on_heartbeat runs in a thread of its own every
    heartbeat_s until on_finish has run, whether samples arrive or not (a slow endpoint) and however long the sink
    takes. on_deployment is called once, before the first level's samples, when the server told the deployment.
    """

    def __init__(
        self,
        settings: RunSettings,
        *,
        on_sample: Callable[[RequestSample], None] | None = None,
        on_level: Callable[[LevelResult], None] | None = None,
        on_finish: FinishSink | None = None,
        on_heartbeat: Callable[[], None] | None = None,
        on_deployment: Callable[[Deployment], None] | None = None,
        heartbeat_s: float = HEARTBEAT_INTERVAL_S,
        transport: httpx2.AsyncBaseTransport | None = None,
        limits: Settings | None = None,
    ) -> None:
        self.settings = settings
        self._on_sample = on_sample
        self._on_level = on_level
        self._on_finish = on_finish
        self._on_heartbeat = on_heartbeat
        self._on_deployment = on_deployment
        self._heartbeat_s = heartbeat_s
        self._transport = transport
        self._limits = limits
        self._progress = Progress()
        self._queue: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[RunResult] | None = None
        self._cancel_requested = threading.Event()
        self._finished = threading.Event()
        self._result: RunResult | None = None
        self._error: BaseException | None = None
        self.sink_errors: list[str] = []
        self._threads: list[threading.Thread] = []

    def start(self) -> "ProbeRun":
        """Check the settings here (ProbeSettingsError, WorkloadError raise in the caller), then start the threads."""
        check_run_settings(self.settings, self._limits)
        build_prompts(self.settings, self.settings.requests_per_level)
        self._threads = [
            threading.Thread(target=self._work, name="probe-run", daemon=True),
            threading.Thread(target=self._sink, name="probe-sink", daemon=True),
        ]
        if self._on_heartbeat is not None:
            self._threads.append(threading.Thread(target=self._beat, name="probe-heartbeat", daemon=True))
        for thread in self._threads:
            thread.start()
        return self

    def cancel(self) -> None:
        """Stop sending; requests in flight are dropped; finished samples stay (the result is CANCELLED)."""
        self._cancel_requested.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)

    def progress(self) -> Progress:
        """A copy of the current progress (safe from any thread)."""
        return self._progress.snapshot()

    def done(self) -> bool:
        """True once the run ended and every callback ran."""
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until done (or timeout); True if done."""
        return self._finished.wait(timeout)

    def result(self) -> RunResult | None:
        """The run's result once done (None before, or if it crashed: see .error)."""
        return self._result

    @property
    def error(self) -> BaseException | None:
        """The exception that ended the run abnormally, if any."""
        return self._error

    def _work(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:

            async def main() -> RunResult:
                self._task = asyncio.current_task()
                if self._cancel_requested.is_set():
                    raise asyncio.CancelledError
                return await run_probe(
                    self.settings,
                    on_sample=lambda s: self._queue.put(("sample", s)),
                    on_level=lambda lv: self._queue.put(("level", lv)),
                    on_deployment=lambda d: self._queue.put(("deployment", d)),
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

    def _call(self, func: Callable[..., None] | None, *args: object) -> None:
        if func is None:
            return
        try:
            func(*args)
        except Exception as exc:  # a sink failure is reported, not fatal to the run
            self.sink_errors.append(f"{type(exc).__name__}: {exc}")
            self._progress.update(message=RECORD_FAILED.format(error=exc))

    def _beat(self) -> None:
        while not self._finished.wait(self._heartbeat_s):
            self._call(self._on_heartbeat)

    def _sink(self) -> None:
        while True:
            kind, payload = self._queue.get()
            if kind == _STOP:
                break
            sinks = {"sample": self._on_sample, "level": self._on_level, "deployment": self._on_deployment}
            self._call(sinks[kind], payload)
        self._call(self._on_finish, self._result, self._error)
        self._finished.set()
