"""Trace replay (workload trace): check the slice, calibrate the prompt builder, then one open-loop level.

Each request of the slice is sent at its trace time (relative to the first kept request, divided by the speed), with
a prompt of its input length (probes/trace_prompts.py's TracePromptBuilder, sized by two calibration requests) and
``max_tokens`` = its output length. At most ``max_in_flight`` requests are in flight when it is set. Every request's
send lag (actual send time minus scheduled time) is measured; the level reports its p50 and p99.
"""

import asyncio
import contextlib
import gc
from collections.abc import Generator

from openai import AsyncOpenAI

from probes.client import Clock, send_request
from probes.config import RunSettings
from probes.errors import ProbeSettingsError
from probes.level import Level
from probes.metrics import percentile
from probes.models import ScheduleLag
from probes.sdk import encode_body, request_body
from probes.trace_prompts import CALIBRATION_WORDS, TracePromptBuilder
from probes.traces import (
    TraceError,
    TraceRequest,
    TraceSummary,
    check_trace,
    read_trace,
    resolve_trace,
)
from probes.transport import SEND_AT, sleep_until
from probes.wording import UNCALIBRATED, UNCALIBRATED_BECAUSE
from probes.workloads import Prompt
from settings import Settings, get_settings

# On the lean transport a request's task starts this early, and the transport writes it at its due time (SEND_AT):
# the SDK's work per request (about 0.4 ms) is then done before, not after, the due time. docs/bench.md, send lag.
LEAD_S = 0.01


def check_replay(settings: RunSettings, limits: Settings | None = None) -> TraceSummary:
    """The slice's summary; TraceError (with line numbers) or ProbeSettingsError (over the cap) when it cannot run."""
    limits = limits or get_settings()
    if not settings.trace:
        raise ProbeSettingsError("the trace workload needs a trace: a file or a built-in name (azure-code, azure-conv)")
    path, fmt = resolve_trace(settings.trace, settings.trace_format)
    summary = check_trace(
        path,
        fmt,
        start_s=settings.trace_start_s,
        duration_s=settings.trace_duration_s,
        limit=settings.trace_limit,
        speed=settings.trace_speed,
    )
    if summary.requests < 1:
        raise TraceError("the slice selects no request; give an earlier start or a longer duration")
    total = summary.requests + settings.warmup_requests
    if total > limits.probe_max_requests_per_run:
        raise ProbeSettingsError(
            f"this replay would send {total} requests, over the cap of {limits.probe_max_requests_per_run}; "
            "give a --trace-duration or a --trace-limit (or raise PROBE_MAX_REQUESTS_PER_RUN)"
        )
    return summary


def trace_requests(settings: RunSettings) -> Generator[TraceRequest]:
    """The slice, streamed from the file (close it when stopping early)."""
    if not settings.trace:
        raise ProbeSettingsError("the trace workload needs a trace")
    path, fmt = resolve_trace(settings.trace, settings.trace_format)
    return read_trace(
        path,
        fmt,
        start_s=settings.trace_start_s,
        duration_s=settings.trace_duration_s,
        limit=settings.trace_limit,
        speed=settings.trace_speed,
    )


async def calibrate(client: AsyncOpenAI, settings: RunSettings, clock: Clock) -> tuple[TracePromptBuilder, str | None]:
    """A builder sized by two short requests (max_tokens 1) and the server's usage.prompt_tokens; a note if not."""
    builder = TracePromptBuilder(seed=settings.seed)
    short = settings.model_copy(update={"max_tokens": 1, "ignore_eos": False, "include_usage": True})
    points: list[tuple[int, int]] = []
    for words in CALIBRATION_WORDS:
        prompt = Prompt(builder.calibration_prompt(words))
        sample = await send_request(
            client, short, prompt, level_index=-1, concurrency=1, index=0, level_start_s=clock(), clock=clock
        )
        if sample.ok and sample.input_tokens:
            points.append((words, sample.input_tokens))
    if len(points) < len(CALIBRATION_WORDS):
        return builder, UNCALIBRATED
    try:
        builder.calibrate(*points[0], *points[1:])
    except TraceError as exc:
        return TracePromptBuilder(seed=settings.seed), UNCALIBRATED_BECAUSE.format(reason=exc)
    return builder, None


def schedule_lag(lags_ms: list[float]) -> ScheduleLag | None:
    """p50 and p99 of the send lags, None without any."""
    if not lags_ms:
        return None
    ordered = sorted(lags_ms)
    return ScheduleLag(p50=round(percentile(ordered, 50), 3), p99=round(percentile(ordered, 99), 3))


class TraceLevel(Level):
    """The replay's one level: the slice streamed from the file, each request at its arrival time."""

    builder: TracePromptBuilder
    lags_ms: list[float]

    def use(self, builder: TracePromptBuilder) -> "TraceLevel":
        """Build the prompts with this (calibrated) builder."""
        self.builder = builder
        self.lags_ms = []
        return self

    async def run(self) -> None:
        """The level, the objects alive before it frozen out of the collector's full passes (a 55 ms pause each)."""
        gc.freeze()
        try:
            await super().run()
        finally:
            gc.unfreeze()

    async def _prepare(self) -> None:
        """Connections open and idle before the level's clock (prompts are built as the trace is read)."""
        if self.lean is not None:
            await self.lean.warm(
                self.settings.base_url, min(self.plan.concurrency, 64), self.settings.timeouts.connect_s
            )

    async def _dispatch(self) -> None:
        free = asyncio.Semaphore(self.plan.concurrency)
        with contextlib.closing(trace_requests(self.settings)) as requests:
            for i, req in enumerate(requests):
                if self.plan.worker is not None and i % self.plan.of_workers != self.plan.worker:
                    continue  # another worker's request (--workers): the trace is dealt out by its order
                prompt = Prompt(self.builder.prompt(req))
                body = request_body(self.settings, prompt, max_tokens=req.output_tokens)
                encoded = encode_body(body)
                lead_s = LEAD_S if self.lean is not None else 0.0  # another transport writes when it is called
                await sleep_until(self.start_s + req.arrival_s - lead_s, self.clock)
                await free.acquire()
                task = asyncio.create_task(self._replay_one(i, req, prompt, encoded))
                self.tasks.add(task)
                task.add_done_callback(self._slot_freer(free))
                self.progress.update(sent=i + 1)

    async def _replay_one(self, i: int, req: TraceRequest, prompt: Prompt, body: bytes) -> None:
        SEND_AT.set(self.start_s + req.arrival_s)  # this task's context only
        sample = await send_request(
            self.client,
            self.settings,
            prompt,
            level_index=self.plan.index,
            concurrency=self.plan.concurrency,
            index=i,
            level_start_s=self.start_s,
            clock=self.clock,
            body=body,
            max_tokens=req.output_tokens,
        )
        self.lags_ms.append((sample.start_s - req.arrival_s) * 1000)
        sample = sample.model_copy(update={"trace_line": req.line})
        self._record(sample, req.arrival_s)
