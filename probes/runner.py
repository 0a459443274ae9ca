"""The sweep: warm-up, then each concurrency level (closed loop or Poisson arrivals), metrics scrapes, callbacks."""

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from threading import Lock

import httpx2
import openai
from openai import AsyncOpenAI

from probes.client import (
    Clock,
    classify_error,
    close_quietly,
    encode_body,
    make_client,
    make_http,
    request_body,
    send_request,
)
from probes.config import RunSettings, check_run_settings
from probes.metrics import best_concurrency_within_slo, summarize_level
from probes.models import CONNECTION_KINDS, LevelResult, RequestSample, RunResult, RunStatus, ServerMetrics
from probes.prom import metrics_url_for, scrape, server_metrics
from probes.transport import LeanTransport
from probes.workloads import Prompt, build_prompts
from settings import Settings

SampleSink = Callable[[RequestSample], None]
LevelSink = Callable[[LevelResult], None]


@dataclass
class Progress:
    """Where a run is; the worker updates it, pages poll a copy (ProbeRun.progress())."""

    status: RunStatus = RunStatus.RUNNING
    phase: str = "starting"  # starting, connecting, warmup, level, finished
    levels_total: int = 0
    level_index: int | None = None
    concurrency: int | None = None
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


async def _preflight(client: AsyncOpenAI, settings: RunSettings) -> str | None:
    """None if the endpoint answers HTTP at all (any status); else why it cannot be reached.

    It goes through the SDK (GET /models), which also pays the SDK's one-time set-up before anything is timed.
    """
    try:
        response = await asyncio.wait_for(
            client.models.with_raw_response.list(), settings.timeouts.connect_s + settings.timeouts.ttft_s
        )
        await response.http_response.aclose()
    except (openai.APIConnectionError, httpx2.HTTPError, OSError) as exc:
        kind, message = classify_error(exc)
        if kind in CONNECTION_KINDS:
            return f"cannot reach {settings.endpoint} ({kind}): {message}"
    except (openai.APIError, TimeoutError):
        return None
    return None


class _Level:
    """One level's dispatch: at most `concurrency` in flight, optionally Poisson arrivals, optionally time-bounded."""

    def __init__(
        self,
        client: AsyncOpenAI,
        settings: RunSettings,
        prompts: list[Prompt],
        index: int,
        concurrency: int,
        count: int,
        clock: Clock,
        on_sample: SampleSink | None,
        progress: Progress,
        counted: bool = True,
        prompt_offset: int = 0,
        lean: LeanTransport | None = None,
    ) -> None:
        self.client = client
        self.lean = lean
        self.bodies: dict[int, bytes] = {}
        self.settings = settings
        self.prompts = prompts
        self.index = index
        self.concurrency = concurrency
        self.count = count
        self.clock = clock
        self.on_sample = on_sample
        self.progress = progress
        self.counted = counted
        self.prompt_offset = prompt_offset
        self.samples: list[RequestSample] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.start_s = 0.0
        self.end_s = 0.0

    def _done_callback(self, free: asyncio.Semaphore) -> Callable[[asyncio.Task[None]], None]:
        def done(task: asyncio.Task[None]) -> None:
            self.tasks.discard(task)
            free.release()

        return done

    async def _prepare(self) -> None:
        """Before the level's clock: every request body encoded, and `concurrency` connections open and idle."""
        n = len(self.prompts)
        for i in range(self.count):
            k = (self.prompt_offset + i) % n
            if k not in self.bodies:
                self.bodies[k] = encode_body(request_body(self.settings, self.prompts[k]))
        if self.lean is not None:
            await self.lean.warm(self.settings.base_url, self.concurrency, self.settings.timeouts.connect_s)

    async def _one(self, i: int) -> None:
        k = (self.prompt_offset + i) % len(self.prompts)
        sample = await send_request(
            self.client,
            self.settings,
            self.prompts[k],
            level_index=self.index,
            concurrency=self.concurrency,
            index=i,
            level_start_s=self.start_s,
            clock=self.clock,
            body=self.bodies.get(k),
        )
        self.end_s = self.clock()
        self.samples.append(sample)
        if self.counted:
            self.progress.count(sample)
            if self.on_sample is not None:
                self.on_sample(sample)

    async def run(self) -> None:
        """Dispatch every request and wait for them; on cancellation, cancel those in flight and re-raise."""
        settings = self.settings
        free = asyncio.Semaphore(self.concurrency)
        rng = random.Random(settings.seed * 7919 + self.index)
        await self._prepare()
        self.start_s = self.end_s = self.clock()
        next_s = self.start_s
        try:
            for i in range(self.count):
                if settings.duration_s is not None and self.clock() - self.start_s >= settings.duration_s:
                    break
                if settings.request_rate_rps is not None:
                    next_s += rng.expovariate(settings.request_rate_rps)
                    delay = next_s - self.clock()
                    if delay > 0:
                        await asyncio.sleep(delay)
                await free.acquire()
                task = asyncio.create_task(self._one(i))
                self.tasks.add(task)
                task.add_done_callback(self._done_callback(free))
                if self.counted:
                    self.progress.update(sent=i + 1)
            while self.tasks:
                await asyncio.wait(set(self.tasks))
        except asyncio.CancelledError:
            for task in self.tasks:
                task.cancel()
            if self.tasks:
                await asyncio.wait(set(self.tasks))
            raise


async def run_probe(
    settings: RunSettings,
    *,
    on_sample: SampleSink | None = None,
    on_level: LevelSink | None = None,
    progress: Progress | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    clock: Clock = time.perf_counter,
    limits: Settings | None = None,
) -> RunResult:
    """Run the sweep and return its result.

    Refused settings raise ProbeSettingsError and an unreadable workload WorkloadError, before anything is sent.
    An unreachable endpoint gives a FAILED result. Cancelling the task ends the run early: requests in flight are
    dropped, everything finished is kept, and the result is CANCELLED. Callbacks run inline on the event loop:
    keep them cheap (ProbeRun moves them to a thread of their own).
    """
    check_run_settings(settings, limits)
    prompts = build_prompts(settings, settings.requests_per_level)
    progress = progress or Progress()
    progress.update(
        levels_total=len(settings.concurrency), requests_per_level=settings.requests_per_level, phase="connecting"
    )
    started_at = datetime.now(UTC)
    lean = None
    if transport is None:
        lean = transport = LeanTransport(clock=clock)
    http = make_http(settings, max(settings.concurrency), transport)
    client = make_client(settings, http)
    levels: list[LevelResult] = []
    samples: list[RequestSample] = []
    status = RunStatus.COMPLETED
    error: str | None = None
    try:
        unreachable = await _preflight(client, settings)
        if unreachable is not None:
            status, error = RunStatus.FAILED, unreachable
        else:
            metrics_url = settings.metrics_url or metrics_url_for(settings.base_url)
            scrape_on = settings.scrape_metrics

            async def scrape_now() -> tuple[dict[str, float], str] | None:
                nonlocal scrape_on
                if not scrape_on:
                    return None
                got = await scrape(http, metrics_url)
                if got is None:
                    scrape_on = False  # tolerant of absence: stop asking
                return got

            if settings.warmup_requests:
                progress.update(phase="warmup")
                warm = _Level(
                    client,
                    settings,
                    prompts,
                    -1,
                    min(settings.warmup_requests, max(settings.concurrency)),
                    settings.warmup_requests,
                    clock,
                    None,
                    progress,
                    counted=False,
                    lean=lean,
                )
                await warm.run()
            for index, concurrency in enumerate(settings.concurrency):
                progress.update(
                    phase="level", level_index=index, concurrency=concurrency, sent=0, finished=0, ok=0, failed=0
                )
                before = await scrape_now()
                level = _Level(
                    client,
                    settings,
                    prompts,
                    index,
                    concurrency,
                    settings.requests_per_level,
                    clock,
                    on_sample,
                    progress,
                    prompt_offset=index * settings.requests_per_level,
                    lean=lean,
                )
                level_started = datetime.now(UTC)
                cancelled = False
                try:
                    await level.run()
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None:
                        task.uncancel()
                    cancelled = True
                after = None if cancelled else await scrape_now()
                metrics: ServerMetrics | None = None
                if before is not None and after is not None:
                    metrics = server_metrics(before[0], after[0], after[1])
                samples.extend(level.samples)
                if level.samples:
                    result = summarize_level(
                        index,
                        concurrency,
                        level.samples,
                        started_at=level_started,
                        finished_at=datetime.now(UTC),
                        duration_s=max(0.0, level.end_s - level.start_s),
                        slo=settings.slo,
                        request_rate_rps=settings.request_rate_rps,
                        server_metrics=metrics,
                    )
                    levels.append(result)
                    with progress._lock:
                        progress.levels.append(result)
                    if on_level is not None:
                        on_level(result)
                if cancelled:
                    status = RunStatus.CANCELLED
                    break
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        status = RunStatus.CANCELLED
    except Exception as exc:  # a bug must not lose what finished: the run is FAILED with the reason
        status, error = RunStatus.FAILED, f"{type(exc).__name__}: {exc}"
    finally:
        await close_quietly(client)
    progress.update(status=status, phase="finished", message=error)
    return RunResult(
        endpoint=settings.endpoint,
        model=settings.model,
        settings=settings,
        status=status,
        error=error,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        best_concurrency_within_slo=best_concurrency_within_slo(levels),
        levels=levels,
        samples=samples,
    )


async def run_until(settings: RunSettings, cancel: asyncio.Event, **kwargs: object) -> RunResult:
    """run_probe, cancelled when `cancel` is set (for callers that own the event loop)."""
    task = asyncio.create_task(run_probe(settings, **kwargs))  # type: ignore[arg-type]
    waiter = asyncio.create_task(cancel.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            task.cancel()
        return await task
    finally:
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
