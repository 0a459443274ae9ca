"""One Ray worker of a --workers run: it sends its share of each level with the probe's own transport.

The driver (probes/ray_fleet.py) creates it, gets it ready for a level, starts it at a shared wall-clock instant and
drains its finished requests in batches; the worker never sees the database. It stops sending when the driver has
been silent for DRIVER_SILENCE_S while a level runs (the driver died), and Ray ends it with its driver's job.
Imported only when a run has --workers (it imports ray).
"""

import asyncio
import contextlib
import os
import socket
import time
from dataclasses import replace
from typing import Any

import ray
from pydantic import SecretStr

from probes.client import close_quietly, make_client, make_http
from probes.config import RunSettings
from probes.level import Level
from probes.models import RequestSample
from probes.progress import Progress
from probes.ray_batch import Batch
from probes.ray_split import Order
from probes.replay import TraceLevel
from probes.session_level import SessionLevel, conversations_of
from probes.trace_prompts import TracePromptBuilder
from probes.transport import LeanTransport
from probes.workloads import build_prompts

DRIVER_SILENCE_S = 5.0  # a level stops when the driver has not drained for this long (it died)
WATCH_EVERY_S = 0.5


class ProbeWorker:
    """The worker's state: its settings (the key restored inside it), its client, and the level it runs."""

    def __init__(self, worker: int, settings: RunSettings, key: list[Any], pool: int) -> None:
        # The key comes as an object reference inside a list, so Ray neither resolves it into the arguments it
        # shows nor logs it; it is fetched here and kept in memory only.
        secret = ray.get(key[0]) if key else None
        self.settings = settings.model_copy(update={"api_key": SecretStr(secret) if secret else None})
        self.worker = worker
        self.pool = max(1, pool)
        self.clock = time.perf_counter
        self.lean: LeanTransport | None = None
        self.client: Any = None
        self.level: Level | None = None
        self.task: asyncio.Task[None] | None = None
        self.progress = Progress()
        self.pending: list[RequestSample] = []
        self.counted = True
        self.cpu0_s = self.wall0_s = 0.0
        self.contact_s = time.monotonic()
        self.watch: asyncio.Task[None] | None = None

    async def hello(self) -> dict[str, object]:
        """Its node, process and clock; builds its client on its own event loop."""
        self._touch()
        if self.client is None:
            self.lean = LeanTransport(clock=self.clock)
            self.client = make_client(self.settings, make_http(self.settings, self.pool, self.lean))
            self.watch = asyncio.create_task(self._watch())
        node = ray.get_runtime_context().get_node_id()
        return {"node": f"{socket.gethostname()}/{node[:8]}", "pid": os.getpid()}

    async def wall(self) -> float:
        """Its wall clock now (the driver measures the offset by round trip)."""
        self._touch()
        return time.time()

    async def prepare(self, order: Order) -> None:
        """Build the level of the order and get it ready (bodies encoded, connections open) before the start."""
        self._touch()
        self.progress = Progress()
        self.counted = order.plan.counted
        level = self._level(order)
        await level.prepare()
        self.level = level

    async def go(self, start_wall_s: float) -> None:
        """Wait for the shared start (its own wall clock), run the level, and return when it ended."""
        self._touch()
        level = self.level
        if level is None:
            return
        delay_s = start_wall_s - time.time()
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        self.cpu0_s, self.wall0_s = time.process_time(), time.time()
        self.task = asyncio.create_task(level.run())
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    async def drain(self) -> Batch:
        """The requests finished since the last drain, and the level's counters."""
        self._touch()
        samples, self.pending = self.pending, []
        p = self.progress
        level = self.level
        ended = level is not None and level.samples
        return Batch(
            samples=samples,
            sent=p.sent,
            finished=p.finished,
            errors=p.failed,
            cpu_s=time.process_time() - self.cpu0_s if self.wall0_s else 0.0,
            wall_s=time.time() - self.wall0_s if self.wall0_s else 0.0,
            end_wall_s=self._end_wall_s() if ended else None,
            running=self.task is not None and not self.task.done(),
        )

    async def stop(self) -> Batch:
        """Stop sending: requests in flight are dropped; those finished come back in the same answer (a drain).

        One round trip, so a worker that answers the stop in time never loses what it finished to a second call.
        """
        self._touch()
        task = self.task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return await self.drain()

    async def close(self) -> None:
        """Close its client."""
        await self.stop()
        if self.client is not None:
            await close_quietly(self.client)
        if self.watch is not None:
            self.watch.cancel()

    def _level(self, order: Order) -> Level:
        settings, plan, client, clock, lean = self.settings, order.plan, self.client, self.clock, self.lean
        on_sample = self._keep if plan.counted else None
        if order.kind == "sessions":
            mine = [c for c in conversations_of(settings) if c.index % plan.of_workers == plan.worker]
            level: Level = SessionLevel(
                client, settings, mine, clock=clock, progress=self.progress, on_sample=on_sample, lean=lean
            )
            level.plan = replace(level.plan, index=plan.index, worker=plan.worker)
            return level
        if order.kind == "trace":
            assert isinstance(order.builder, TracePromptBuilder)
            trace = TraceLevel(
                client,
                settings,
                [],
                plan,
                clock=self.clock,
                progress=self.progress,
                on_sample=on_sample,
                lean=self.lean,
            )
            return trace.use(order.builder)
        prompts = build_prompts(settings, settings.requests_per_level)
        return Level(
            client,
            settings,
            prompts,
            plan,
            clock=self.clock,
            progress=self.progress,
            on_sample=on_sample,
            lean=self.lean,
        )

    def _keep(self, sample: RequestSample) -> None:
        self.pending.append(sample)

    def _end_wall_s(self) -> float:
        """Its wall clock at its level's last finished request."""
        level = self.level
        assert level is not None
        return time.time() - (self.clock() - level.end_s)

    def _touch(self) -> None:
        self.contact_s = time.monotonic()

    async def _watch(self) -> None:
        """Stop the level, then the process, when the driver fell silent while a level runs (the driver died)."""
        while True:
            await asyncio.sleep(WATCH_EVERY_S)
            running = self.task is not None and not self.task.done()
            if running and time.monotonic() - self.contact_s > DRIVER_SILENCE_S:
                await self.stop()
                os._exit(3)  # no orphan load: nothing of this worker outlives a dead driver


def remote_worker(**options: Any) -> Any:
    """The Ray actor class of ProbeWorker with these actor options (resources, scheduling)."""
    return ray.remote(**options)(ProbeWorker)
