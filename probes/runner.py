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
from probes.deployment import Deployment
from probes.detect import detect
from probes.level import WARMUP_INDEX, Level, LevelPlan, SampleSink
from probes.metrics import best_concurrency_within_slo, summarize_level
from probes.models import CONNECTION_KINDS, LevelResult, RequestSample, RunResult, RunStatus, ServerMetrics
from probes.progress import Progress
from probes.prom import Scraper, exposition, metrics_url_for, server_metrics
from probes.transport import LeanTransport
from probes.workloads import Prompt, build_prompts
from settings import Settings

# Progress and the sinks stay importable from here (probes/worker.py and probes/__init__.py import them from runner).
__all__ = ["DeploymentSink", "LevelSink", "Progress", "SampleSink", "run_probe"]

LevelSink = Callable[[LevelResult], None]
DeploymentSink = Callable[[Deployment], None]
MAX_MODELS_BYTES = 4 << 20  # of a /v1/models answer read to tell the deployment


async def run_probe(
    settings: RunSettings,
    *,
    on_sample: SampleSink | None = None,
    on_level: LevelSink | None = None,
    progress: Progress | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    clock: Clock = time.perf_counter,
    limits: Settings | None = None,
    on_deployment: DeploymentSink | None = None,
) -> RunResult:
    """Run the sweep and return its result.

    Refused settings raise ProbeSettingsError and an unreadable workload WorkloadError, before anything is sent.
    An unreachable endpoint gives a FAILED result. Cancelling the task ends the run early: requests in flight are
    dropped, everything finished is kept, and the result is CANCELLED. Before the first request, blank fields of
    the deployment are filled from what the server tells (probes/detect.py); on_deployment gets the deployment
    when that changed it, and the result's settings carry it. Callbacks run inline on the event loop: keep them
    cheap (ProbeRun moves them to a thread of their own).
    """
    check_run_settings(settings, limits)
    prompts = build_prompts(settings, settings.requests_per_level)
    sweep = _Sweep(settings, prompts, progress or Progress(), transport, clock, on_sample, on_level, on_deployment)
    await sweep.run()
    return sweep.result()


class _Sweep:
    """One run: its client, what it collected so far, and how it ended."""

    def __init__(
        self,
        settings: RunSettings,
        prompts: list[Prompt],
        progress: Progress,
        transport: httpx2.AsyncBaseTransport | None,
        clock: Clock,
        on_sample: SampleSink | None,
        on_level: LevelSink | None,
        on_deployment: DeploymentSink | None = None,
    ) -> None:
        self.settings = settings
        self.prompts = prompts
        self.progress = progress
        self.clock = clock
        self.on_sample = on_sample
        self.on_level = on_level
        self.on_deployment = on_deployment
        self.lean = LeanTransport(clock=clock) if transport is None else None
        self.http = make_http(settings, max(settings.concurrency), self.lean or transport)
        self.client = make_client(settings, self.http)
        self.scraper = Scraper(
            self.http, settings.metrics_url or metrics_url_for(settings.base_url), settings.scrape_metrics
        )
        self.started_at = datetime.now(UTC)
        self.levels: list[LevelResult] = []
        self.samples: list[RequestSample] = []
        self.status = RunStatus.COMPLETED
        self.error: str | None = None
        progress.update(
            levels_total=len(settings.concurrency), requests_per_level=settings.requests_per_level, phase="connecting"
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
            for index, concurrency in enumerate(self.settings.concurrency):
                if not await self._level(index, concurrency):
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
            self.progress.update(message=f"could not tell the deployment: {type(exc).__name__}: {exc}")
            return
        if found == given:
            return
        self.settings = self.settings.model_copy(update={"deployment": found})
        if self.on_deployment is not None:
            self.on_deployment(found)

    async def _warmup(self) -> None:
        """Uncounted requests before the first level, if asked for."""
        count = self.settings.warmup_requests
        if not count:
            return
        self.progress.update(phase="warmup")
        plan = LevelPlan(WARMUP_INDEX, min(count, max(self.settings.concurrency)), count, counted=False)
        await self._new_level(plan).run()

    async def _level(self, index: int, concurrency: int) -> bool:
        """One level with its scrapes before and after; False when it was cancelled (its samples are kept)."""
        per_level = self.settings.requests_per_level
        self.progress.update(
            phase="level", level_index=index, concurrency=concurrency, sent=0, finished=0, ok=0, failed=0
        )
        before = await self.scraper.now()
        level = self._new_level(LevelPlan(index, concurrency, per_level, prompt_offset=index * per_level))
        started_at = datetime.now(UTC)
        completed = True
        try:
            await level.run()
        except asyncio.CancelledError:
            _uncancel()
            completed = False
        after = await self.scraper.now() if completed else None
        metrics = server_metrics(before[0], after[0], after[1]) if before and after else None
        self._keep(level, started_at, metrics)
        return completed

    def _new_level(self, plan: LevelPlan) -> Level:
        return Level(
            self.client,
            self.settings,
            self.prompts,
            plan,
            clock=self.clock,
            progress=self.progress,
            on_sample=self.on_sample if plan.counted else None,
            lean=self.lean,
        )

    def _keep(self, level: Level, started_at: datetime, metrics: ServerMetrics | None) -> None:
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
            request_rate_rps=self.settings.request_rate_rps,
            server_metrics=metrics,
        )
        self.levels.append(result)
        self.progress.level_done(result)
        if self.on_level is not None:
            self.on_level(result)

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
            best_concurrency_within_slo=best_concurrency_within_slo(self.levels),
            levels=self.levels,
            samples=self.samples,
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
            return f"cannot reach {settings.endpoint} ({kind}): {message}", None
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
