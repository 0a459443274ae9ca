"""The sweep: preflight, warm-up, then each concurrency level with its metrics scrapes and callbacks."""

import asyncio
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime

import httpx2
import openai
from openai import AsyncOpenAI

from probes.client import Clock, classify_error, close_quietly, make_client, make_http
from probes.config import RunSettings, check_run_settings
from probes.detect import detect
from probes.level import WARMUP_INDEX, Level, LevelPlan
from probes.metrics import (
    best_concurrency_within_slo,
    best_request_rate_within_slo,
    peak_in_flight,
    summarize_level,
    with_energy,
)
from probes.models import (
    CONNECTION_KINDS,
    LevelResult,
    RateOutcome,
    RateSearch,
    RequestSample,
    RunResult,
    RunStatus,
    ServerMetrics,
)
from probes.power_monitor import PowerMonitor
from probes.progress import Progress
from probes.prom import Scraper, exposition, metrics_url_for, server_metrics
from probes.ratesearch import find_max_rate
from probes.replay import TraceLevel, calibrate, check_replay, schedule_lag
from probes.session_level import SessionLevel, check_sessions, conversations_of
from probes.sessions import Conversation
from probes.sink import NullSink, RunSink
from probes.trace_prompts import TracePromptBuilder
from probes.transport import LeanTransport
from probes.turn_stats import level_turn_stats
from probes.wording import CANNOT_REACH, DETECT_FAILED, NO_REQUEST_FINISHED, SEARCH_STOPPED
from probes.workloads import Prompt, build_prompts
from settings import Settings, get_settings

# Progress stays importable from here (probes/worker.py and probes/__init__.py import it from runner).
__all__ = ["Progress", "run_probe"]

MAX_MODELS_BYTES = 4 << 20  # of a /v1/models answer read to tell the deployment


async def run_probe(
    settings: RunSettings,
    *,
    sink: RunSink | None = None,
    progress: Progress | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    clock: Clock = time.perf_counter,
    limits: Settings | None = None,
    sweep_type: "type[Sweep] | None" = None,
) -> RunResult:
    """Run the sweep and return its result.

    `sweep_type` runs the levels another way (probes/ray_driver.py spreads them over Ray workers).

    Refused settings raise ProbeSettingsError and an unreadable workload WorkloadError, before anything is sent.
    An unreachable endpoint gives a FAILED result. Cancelling the task ends the run early: requests in flight are
    dropped, everything finished is kept, and the result is CANCELLED. Before the first request, blank fields of
    the deployment are filled from what the server tells (probes/detect.py); the sink's `deployment` gets it when
    that changed it, and the result's settings carry it. The sink hears `deployment`, `samples` (one request at a
    time) and `level_finished` inline on the event loop: keep them cheap (ProbeRun moves them to a thread of its
    own, and tells the sink when the run starts and ends).
    """
    check_run_settings(settings, limits)
    replay = check_replay(settings, limits) if settings.trace_mode else None  # refused before anything is sent
    session_requests = check_sessions(settings, limits) if settings.sessions_mode else None
    conversations = conversations_of(settings) if settings.sessions_mode else None
    prompts = build_prompts(settings, settings.requests_per_level)
    # A replay is open loop: at most max_in_flight in flight when given, else up to the concurrency cap.
    replay_pool = settings.max_in_flight or (limits or get_settings()).probe_max_concurrency
    pool = replay_pool if settings.trace_mode else len(conversations) if conversations is not None else None
    sweep = (sweep_type or Sweep)(
        settings,
        prompts,
        progress or Progress(),
        transport,
        clock,
        sink or NullSink(),
        pool=pool,
        limits=limits,
    )
    sweep.conversations = conversations
    if replay is not None:
        sweep.progress.update(requests_per_level=replay.requests)
    if session_requests is not None:
        sweep.progress.update(requests_per_level=session_requests)
    sweep.max_requests = (limits or get_settings()).probe_max_requests_per_run - settings.warmup_requests
    if not settings.dcgm_url:
        await sweep.run()
        return sweep.result()
    monitor = PowerMonitor(settings.dcgm_url, settings.dcgm_interval_s, sweep.sink.power, transport).start()
    try:
        await sweep.run()
    finally:
        power = await monitor.stop()
    return with_energy(sweep.result(), power)


class Sweep:
    """One run: its client, what it collected so far, and how it ended."""

    def __init__(
        self,
        settings: RunSettings,
        prompts: list[Prompt],
        progress: Progress,
        transport: httpx2.AsyncBaseTransport | None,
        clock: Clock,
        sink: RunSink,
        *,
        pool: int | None = None,
        limits: Settings | None = None,
    ) -> None:
        self.settings = settings
        self.limits = limits
        self.prompts = prompts
        self.progress = progress
        self.clock = clock
        self.sink = sink
        self.lean = LeanTransport(clock=clock) if transport is None else None
        self.pool = pool or (settings.in_flight_cap if settings.rate_mode else max(settings.concurrency))
        self.http = make_http(settings, self.pool, self.lean or transport)
        self.client = make_client(settings, self.http)
        self.scraper = Scraper(
            self.http, settings.metrics_url or metrics_url_for(settings.base_url), settings.scrape_metrics
        )
        self.started_at = datetime.now(UTC)
        self.levels: list[LevelResult] = []
        self.samples: list[RequestSample] = []
        self.status = RunStatus.COMPLETED
        self.error: str | None = None
        self.search: RateSearch | None = None
        self.conversations: list[Conversation] | None = None  # workload sessions
        self.notes: list[str] = []
        self.max_requests = settings.total_requests  # a search's request budget (run_probe sets the run's cap)
        progress.update(
            levels_total=settings.level_count, requests_per_level=settings.requests_per_level, phase="connecting"
        )

    async def run(self) -> None:
        """Every step in turn; a cancel or a bug ends the run with what finished kept."""
        try:
            unreachable, listing = await _preflight(self.client, self.settings)
            if unreachable is not None:
                self.status, self.error = RunStatus.FAILED, unreachable
                return
            await self._detect(listing)
            await self._warmup()
            if self.settings.trace_mode:
                if not await self._replay():
                    self.status = RunStatus.CANCELLED
                return
            if self.conversations is not None:
                if not await self._sessions(self.conversations):
                    self.status = RunStatus.CANCELLED
                return
            if self.settings.find_max_rate:
                await self._search()
                return
            rates = self.settings.request_rate_rps
            plans = (
                [(self.settings.in_flight_cap, rate) for rate in rates]
                if rates
                else [(concurrency, None) for concurrency in self.settings.concurrency]
            )
            for index, (concurrency, rate) in enumerate(plans):
                if not await self._level(index, concurrency, rate):
                    self.status = RunStatus.CANCELLED
                    return
        except asyncio.CancelledError:
            _uncancel()
            self.status = RunStatus.CANCELLED
        except Exception as exc:  # a bug must not lose what finished: the run is FAILED with the reason
            self.status, self.error = RunStatus.FAILED, f"{type(exc).__name__}: {exc}"
        finally:
            await close_quietly(self.client)
            self.progress.update(status=self.status, phase="finished", message=self.error)

    async def _detect(self, listing: object) -> None:
        """Fill the deployment's blank engine, model and quantization from /v1/models and /metrics."""
        given = self.settings.deployment
        if given.engine is None and self.settings.scrape_metrics:
            got = await exposition(self.http, self.scraper.url)
            metrics_text = got[0] if got is not None else None
        else:
            metrics_text = None
        try:
            found = detect(given, self.settings.model, listing, metrics_text)
        except Exception as exc:  # telling the deployment is a courtesy: it never costs the measurement
            self.progress.update(message=DETECT_FAILED.format(error=f"{type(exc).__name__}: {exc}"))
            return
        if found == given:
            return
        self.settings = self.settings.model_copy(update={"deployment": found})
        self.sink.deployment(found)

    async def _warmup(self) -> None:
        """Uncounted requests before the first level, if asked for."""
        count = self.settings.warmup_requests
        if not count:
            return
        self.progress.update(phase="warmup")
        plan = LevelPlan(WARMUP_INDEX, min(count, self.pool), count, counted=False)
        await self._new_level(plan).run()

    async def _replay(self) -> bool:
        """The trace replay: calibrate the prompt builder, then one open-loop level; False when cancelled."""
        self.progress.update(phase="calibrating")
        builder, note = await calibrate(self.client, self.settings, self.clock)
        if note is not None:
            self.notes.append(note)
            self.progress.update(message=note)
        self._level_progress(0, self.pool, None)
        before = await self.scraper.now()
        level, lags_ms = self._trace_level(builder)
        return await self._run_and_keep(
            level,
            before,
            lambda: {  # the level's concurrency: what the trace put in flight, not the cap
                "schedule_lag_ms": schedule_lag(lags_ms()),
                "concurrency": max(1, peak_in_flight(level.samples)),
            },
        )

    def _trace_level(self, builder: TracePromptBuilder) -> tuple[Level, Callable[[], list[float]]]:
        """The replay's one level, and how to read its send lags once it has run."""
        level = TraceLevel(
            self.client,
            self.settings,
            self.prompts,
            LevelPlan(0, self.pool, 0),
            clock=self.clock,
            progress=self.progress,
            on_sample=self._on_sample,
            lean=self.lean,
        ).use(builder)
        return level, lambda: level.lags_ms

    async def _sessions(self, conversations: list[Conversation]) -> bool:
        """Every session at once, turn after turn; one level with figures per turn; False when cancelled."""
        self._level_progress(0, len(conversations), None)
        before = await self.scraper.now()
        level = SessionLevel(
            self.client,
            self.settings,
            conversations,
            clock=self.clock,
            progress=self.progress,
            on_sample=self._on_sample,
            lean=self.lean,
        )
        return await self._run_and_keep(level, before, lambda: {"turns": level_turn_stats(level.samples)})

    async def _search(self) -> None:
        """--find-max-rate: grow then bisect the request rate (probes/ratesearch.py), one stored level per rate."""
        settings = self.settings

        async def measure(rate_rps: float) -> RateOutcome:
            index = len(self.levels)
            if not await self._level(index, settings.in_flight_cap, rate_rps):
                raise asyncio.CancelledError  # the run ends CANCELLED with the levels measured so far
            if not self.levels or self.levels[-1].index != index:  # nothing finished: it cannot have met the SLO
                return RateOutcome(met_slo=False, requests=0, duration_s=0.0, violations=(NO_REQUEST_FINISHED,))
            return RateOutcome.of_level(self.levels[-1])

        self.search = await find_max_rate(
            measure,
            start_rps=settings.search_start_rps,
            max_levels=settings.search_max_levels,
            max_requests=max(1, self.max_requests),
            max_duration_s=settings.search_max_duration_s,
            clock=self.clock,
        )
        self.progress.update(message=SEARCH_STOPPED.format(detail=self.search.stop_detail))

    async def _level(self, index: int, concurrency: int, rate_rps: float | None = None) -> bool:
        """One level with its scrapes before and after; False when it was cancelled (its samples are kept)."""
        per_level = self.settings.requests_per_level
        self._level_progress(index, concurrency, rate_rps)
        before = await self.scraper.now()
        plan = LevelPlan(index, concurrency, per_level, prompt_offset=index * per_level, rate_rps=rate_rps)
        level = self._new_level(plan)
        return await self._run_and_keep(level, before)

    def _level_progress(self, index: int, concurrency: int, rate_rps: float | None) -> None:
        self.progress.update(
            phase="level",
            level_index=index,
            concurrency=concurrency,
            request_rate_rps=rate_rps,
            sent=0,
            finished=0,
            ok=0,
            failed=0,
        )

    async def _run_and_keep(
        self,
        level: Level,
        before: tuple[dict[str, float], str] | None,
        extra: Callable[[], dict[str, object]] | None = None,
    ) -> bool:
        """Run a level (a cancel keeps its samples), scrape after it and keep it; False when it was cancelled.

        `extra` gives the level's own figures once it has run (a replay's send lag, sessions' per-turn figures).
        """
        started_at = datetime.now(UTC)
        completed = True
        try:
            await level.run()
        except asyncio.CancelledError:
            _uncancel()
            completed = False
        after = await self.scraper.now() if completed else None
        metrics = server_metrics(before[0], after[0], after[1]) if before and after else None
        self._keep(level, started_at, metrics, extra() if extra else None)
        return completed

    def _new_level(self, plan: LevelPlan) -> Level:
        return Level(
            self.client,
            self.settings,
            self.prompts,
            plan,
            clock=self.clock,
            progress=self.progress,
            on_sample=self._on_sample if plan.counted else None,
            lean=self.lean,
        )

    def _keep(
        self, level: Level, started_at: datetime, metrics: ServerMetrics | None, extra: dict[str, object] | None = None
    ) -> None:
        """The level's samples, and its summary when it has any."""
        self.samples.extend(level.samples)
        if not level.samples:
            return
        result = summarize_level(
            level.plan.index,
            level.plan.concurrency,
            level.samples,
            started_at=started_at,
            finished_at=datetime.now(UTC),
            duration_s=max(0.0, level.end_s - level.start_s),
            slo=self.settings.slo,
            request_rate_rps=level.plan.rate_rps,
            server_metrics=metrics,
        )
        if extra:
            result = result.model_copy(update=extra)
        self.levels.append(result)
        self.progress.level_done(result)
        self.sink.level_finished(result)

    def _on_sample(self, sample: RequestSample) -> None:
        self.sink.samples((sample,))

    def result(self) -> RunResult:
        """The run as it ended."""
        settings = self.settings
        return RunResult(
            endpoint=settings.endpoint,
            model=settings.model,
            settings=settings,
            status=self.status,
            error=self.error,
            started_at=self.started_at,
            finished_at=datetime.now(UTC),
            best_concurrency_within_slo=(
                None if settings.trace_mode or settings.sessions_mode else best_concurrency_within_slo(self.levels)
            ),
            best_request_rate_within_slo_rps=(
                self.search.best_rate_rps if self.search is not None else best_request_rate_within_slo(self.levels)
            ),
            rate_search=self.search,
            levels=self.levels,
            samples=self.samples,
            notes=self.notes,
        )


async def _preflight(client: AsyncOpenAI, settings: RunSettings) -> tuple[str | None, object]:
    """(None if the endpoint answers HTTP at all, any status, else why it cannot be reached; the model list).

    It goes through the SDK (GET /models), which also pays the SDK's one-time set-up before anything is timed.
    The model list is the answer's JSON when it was a 200 of reasonable size, else None.
    """
    listing: object = None
    limit_s = settings.timeouts.connect_s + settings.timeouts.ttft_s
    try:
        response = await asyncio.wait_for(client.models.with_raw_response.list(), limit_s)
        try:
            listing = await asyncio.wait_for(_json_body(response.http_response), limit_s)
        finally:
            await response.http_response.aclose()
    except (openai.APIConnectionError, httpx2.HTTPError, OSError) as exc:
        kind, message = classify_error(exc)
        if kind in CONNECTION_KINDS:
            return CANNOT_REACH.format(endpoint=settings.endpoint, kind=kind, reason=message), None
    except (openai.APIError, TimeoutError):
        return None, None
    return None, listing


async def _json_body(response: httpx2.Response) -> object:
    """A 200 answer's JSON (at most MAX_MODELS_BYTES), else None."""
    if response.status_code != 200:
        return None
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_MODELS_BYTES:
            return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _uncancel() -> None:
    """Clear the current task's cancel request: it was handled (the run ends CANCELLED with what finished)."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
