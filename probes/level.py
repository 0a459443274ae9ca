"""One level's dispatch: at most `concurrency` requests in flight, closed loop or gamma arrivals, time-bounded."""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from openai import AsyncOpenAI

from probes.client import Clock, encode_body, request_body, send_request
from probes.config import RunSettings
from probes.models import RequestSample
from probes.progress import Progress
from probes.ratesearch import arrival_gaps
from probes.transport import LeanTransport
from probes.workloads import Prompt

SampleSink = Callable[[RequestSample], None]
WARMUP_INDEX = -1  # the level index of the uncounted warm-up


@dataclass(frozen=True)
class LevelPlan:
    """What one level sends: `count` requests at most `concurrency` at a time, prompts from `prompt_offset` on."""

    index: int
    concurrency: int
    count: int
    prompt_offset: int = 0
    counted: bool = True  # False for the warm-up: no samples reported, no progress
    rate_rps: float | None = None  # open loop: arrivals at this rate (at most `concurrency` in flight)
    # --workers: this worker's number, its first request's number in the level and its arrivals' own seed; its
    # samples then carry the worker and their scheduled send time (probes/ray_split.py splits a level into plans).
    worker: int | None = None
    of_workers: int = 1  # a trace replay's fixed assignment: this worker sends the requests i with i % of_workers
    index_offset: int = 0
    arrival_seed: int | None = None


class Level:
    """Runs one LevelPlan; `samples`, `start_s` and `end_s` (the last request finished) are its result."""

    def __init__(
        self,
        client: AsyncOpenAI,
        settings: RunSettings,
        prompts: list[Prompt],
        plan: LevelPlan,
        *,
        clock: Clock,
        progress: Progress,
        on_sample: SampleSink | None = None,
        lean: LeanTransport | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.prompts = prompts
        self.plan = plan
        self.clock = clock
        self.progress = progress
        self.on_sample = on_sample
        self.lean = lean
        self.bodies: dict[int, bytes] = {}
        self.samples: list[RequestSample] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.start_s = 0.0
        self.end_s = 0.0
        self.prepared = False

    async def prepare(self) -> None:
        """Get ready before the level's clock starts (run() does it when not done before)."""
        await self._prepare()
        self.prepared = True

    async def run(self) -> None:
        """Dispatch every request and wait for them; on cancellation, cancel those in flight and re-raise."""
        if not self.prepared:
            await self.prepare()
        self.start_s = self.end_s = self.clock()
        try:
            await self._dispatch()
            while self.tasks:
                await asyncio.wait(set(self.tasks))
        except asyncio.CancelledError:
            for task in self.tasks:
                task.cancel()
            if self.tasks:
                await asyncio.wait(set(self.tasks))
            raise

    async def _prepare(self) -> None:
        """Before the level's clock: every request body encoded, and `concurrency` connections open and idle."""
        for i in range(self.plan.count):
            k = self._prompt_index(i)
            if k not in self.bodies:
                self.bodies[k] = encode_body(request_body(self.settings, self.prompts[k]))
        if self.lean is not None:
            await self.lean.warm(self.settings.base_url, self.plan.concurrency, self.settings.timeouts.connect_s)

    async def _dispatch(self) -> None:
        """Start each request when a slot is free (and its arrival time came), until the count or the duration."""
        settings, plan = self.settings, self.plan
        free = asyncio.Semaphore(plan.concurrency)
        seed = settings.seed * 7919 + plan.index if plan.arrival_seed is None else plan.arrival_seed
        arrivals = _Arrivals(plan.rate_rps, settings.burstiness, seed, self.start_s, self.clock)
        for i in range(plan.count):
            if settings.duration_s is not None and self.clock() - self.start_s >= settings.duration_s:
                break
            await arrivals.next()
            await free.acquire()
            # Due at its arrival (open loop), or when its slot came free (closed loop).
            due_s = (arrivals.next_s if arrivals.gaps is not None else self.clock()) - self.start_s
            task = asyncio.create_task(self._one(i, due_s))
            self.tasks.add(task)
            task.add_done_callback(self._slot_freer(free))
            if plan.counted:
                self.progress.update(sent=i + 1)

    def _slot_freer(self, free: asyncio.Semaphore) -> Callable[[asyncio.Task[None]], None]:
        def done(task: asyncio.Task[None]) -> None:
            self.tasks.discard(task)
            free.release()

        return done

    def _prompt_index(self, i: int) -> int:
        return (self.plan.prompt_offset + i) % len(self.prompts)

    async def _one(self, i: int, due_s: float) -> None:
        k = self._prompt_index(i)
        sample = await send_request(
            self.client,
            self.settings,
            self.prompts[k],
            level_index=self.plan.index,
            concurrency=self.plan.concurrency,
            index=self.plan.index_offset + i,
            level_start_s=self.start_s,
            clock=self.clock,
            body=self.bodies.get(k),
        )
        self._record(sample, due_s)

    def _record(self, sample: RequestSample, due_s: float | None = None) -> None:
        """Keep a finished request: the level's end, its samples, the progress and the sink (counted levels).

        A worker's level (--workers) marks it with the worker and its scheduled send time.
        """
        if self.plan.worker is not None:
            sample = sample.model_copy(update={"worker": self.plan.worker, "scheduled_s": due_s})
        self.end_s = self.clock()
        self.samples.append(sample)
        if self.plan.counted:
            self.progress.count(sample)
            if self.on_sample is not None:
                self.on_sample(sample)


class _Arrivals:
    """Gamma (burstiness 1: Poisson) arrival times at `rate_rps`, seeded; without a rate, all at once (closed loop)."""

    def __init__(self, rate_rps: float | None, burstiness: float, seed: int, start_s: float, clock: Clock) -> None:
        self.gaps = arrival_gaps(rate_rps, burstiness=burstiness, seed=seed) if rate_rps is not None else None
        self.next_s = start_s
        self.clock = clock

    async def next(self) -> None:
        """Until the next arrival is due."""
        if self.gaps is None:
            return
        self.next_s += next(self.gaps)
        delay_s = self.next_s - self.clock()
        if delay_s > 0:
            await asyncio.sleep(delay_s)
