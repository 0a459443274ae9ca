"""The driver's Ray workers (--workers): started, clocks measured, levels dealt and drained, losses and cancels.

They are started spread over the nodes; each level is dealt to them and started at one instant, their batches are
drained as it runs, a lost worker is recorded, and all of them are stopped on cancel.

Imported only when a run has --workers. The API key reaches the workers as a Ray object reference held inside a
list: Ray passes such a reference through unresolved, so the key is in no actor argument, runtime environment,
environment variable or log; each worker fetches it once in its constructor, and the driver drops its reference
(the object is then freed) as soon as every worker is ready.
"""

import asyncio
import importlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import ModuleType
from typing import Any, Literal

from probes.config import RunSettings
from probes.errors import ProbeSettingsError
from probes.metrics import percentile
from probes.models import RequestSample, ScheduleLag, WorkerStats
from probes.progress import Progress, WorkerProgress
from probes.ray_split import Order
from probes.wording import RAY_MISSING, WORKER_LOST

READY_TIMEOUT_S = 180.0  # for every worker to start (a busy machine starts Ray's worker processes slowly)
DRAIN_EVERY_S = 0.25  # the driver drains each worker this often while a level runs (also its heartbeat)
DRAIN_TIMEOUT_S = 5.0  # a drain not answered by then is tried again at the next round
STOP_TIMEOUT_S = 1.0  # a worker that does not stop by then is killed
START_LEAD_S = 0.2  # the shared start: this long after every worker is ready (plus the slowest round trip)
CLOCK_ROUND_TRIPS = 5
SampleSink = Callable[[Sequence[RequestSample]], None]


def import_ray() -> ModuleType:
    """The ray module, or ProbeSettingsError saying how to install it."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ProbeSettingsError(RAY_MISSING) from None


@dataclass
class _Worker:
    """What the driver knows of one worker."""

    id: int
    handle: Any
    node: str = ""
    pid: int | None = None
    offset_s: float = 0.0  # its wall clock minus the driver's
    rtt_s: float = 0.0
    alive: bool = True
    requests: int = 0
    errors: int = 0
    cpu_s: float = 0.0  # over the levels it ran
    wall_s: float = 0.0
    lags_ms: list[float] = field(default_factory=list)
    last: WorkerProgress | None = None


class Fleet:
    """The run's workers; start() them, run_level() each level, close() at the end."""

    def __init__(self, ray: ModuleType, workers: list[_Worker], progress: Progress) -> None:
        self.ray = ray
        self.workers = {worker.id: worker for worker in workers}
        self.progress = progress
        self.lost: list[str] = []  # why each lost worker was lost, and when
        self.level_index = 0

    @classmethod
    async def start(cls, settings: RunSettings, pool: int, progress: Progress) -> "Fleet":
        """Join (or start) Ray, start settings.workers workers spread over the nodes, and measure their clocks."""
        ray = import_ray()
        count = settings.workers or 1
        address = settings.ray_address or os.environ.get("RAY_ADDRESS") or None
        if not ray.is_initialized():
            await asyncio.to_thread(_init, ray, address, count)
        from probes.ray_actor import remote_worker  # imports ray: only here

        actor = remote_worker(num_cpus=1, scheduling_strategy="SPREAD", max_restarts=0)
        key = settings.api_key.get_secret_value() if settings.api_key else ""
        key_box = [ray.put(key)] if key else []
        bare = settings.model_copy(update={"api_key": None})
        per_worker = -(-pool // count)
        handles = [actor.remote(i, bare, key_box, per_worker) for i in range(count)]
        fleet = cls(ray, [_Worker(i, handle) for i, handle in enumerate(handles)], progress)
        try:
            hellos = await asyncio.wait_for(
                asyncio.gather(*(_awaited(h.hello.remote()) for h in handles)), READY_TIMEOUT_S
            )
        except TimeoutError:
            await fleet.close()
            cpus = ray.cluster_resources().get("CPU", 0)
            raise ProbeSettingsError(
                f"{count} Ray workers were not ready within {READY_TIMEOUT_S:g} s: the cluster has {cpus:g} CPUs and "
                "each worker takes one (give fewer --workers, or add nodes)"
            ) from None
        except BaseException:
            await fleet.close()
            raise
        del key_box  # every worker holds the key now; the object is freed with the driver's reference
        for worker, hello in zip(fleet.workers.values(), hellos, strict=True):
            worker.node, worker.pid = str(hello["node"]), int(str(hello["pid"]))
            await fleet._clock(worker)
        fleet._show()
        return fleet

    def live(self) -> list[int]:
        """The workers still alive, by id."""
        return [worker.id for worker in self.workers.values() if worker.alive]

    async def run_level(
        self, orders: dict[int, Order], on_samples: SampleSink, started: Callable[[float], None]
    ) -> tuple[float, float | None]:
        """Run one level on the workers of `orders`: ready, one start instant, drained until every one ended.

        Returns the driver's wall clock at the shared start and when the last request finished (None: none did);
        `started` hears the start instant as soon as it is set.
        Cancelled, every worker is stopped (killed if it does not stop within STOP_TIMEOUT_S) and what finished
        is drained before the cancel goes on.
        """
        self.level_index = next(iter(orders.values())).plan.index if orders else self.level_index
        ready = await self._each(list(orders), lambda w: w.handle.prepare.remote(orders[w.id]), READY_TIMEOUT_S)
        go = [w for w in ready if self.workers[w].alive]
        start_wall_s = time.time() + START_LEAD_S + max((self.workers[w].rtt_s for w in go), default=0.0)
        started(start_wall_s)
        runs = {
            w: asyncio.ensure_future(
                _awaited(self.workers[w].handle.go.remote(start_wall_s + self.workers[w].offset_s))
            )
            for w in go
        }
        ends: dict[int, float] = {}
        drain: asyncio.Future[list[int]] | None = None
        try:
            while True:
                pending = [run for run in runs.values() if not run.done()]
                if pending:
                    await asyncio.wait(pending, timeout=DRAIN_EVERY_S)
                for w, run in runs.items():
                    if run.done() and run.exception() is not None:
                        self._lose(w, run.exception())
                drain = asyncio.ensure_future(self._drain(go, on_samples, ends, final=not pending))
                await asyncio.shield(drain)  # a cancel must not drop a batch the workers have already handed over
                if not pending:
                    break
        except asyncio.CancelledError:
            for run in runs.values():
                run.cancel()
            # The stop goes out at once; a drain under way finishes beside it, and its samples are kept.
            under_way = [drain] if drain is not None and not drain.done() else []
            await asyncio.gather(self.halt(go, on_samples), *under_way)
            raise
        end = max((end - self.workers[w].offset_s for w, end in ends.items()), default=None)
        return start_wall_s, end

    async def _go(self, w: int, start_wall_s: float) -> None:
        """Worker w's level, started at the shared instant read on its own clock."""
        worker = self.workers[w]
        await _awaited(worker.handle.go.remote(start_wall_s + worker.offset_s))

    async def halt(self, ids: list[int], on_samples: SampleSink) -> None:
        """Stop these workers and keep what they finished (the stop answers with it); kill those not answering."""
        answered = await self._drain(ids, on_samples, {}, final=True, timeout_s=STOP_TIMEOUT_S, call="stop")
        for w in ids:
            if self.workers[w].alive and w not in answered:
                self.ray.kill(self.workers[w].handle, no_restart=True)
                self._lose(w, RuntimeError("did not stop when asked; killed"), record=False)

    async def close(self) -> None:
        """End every worker (their clients closed when they answer in time) and leave Ray."""
        await self._each(self.live(), lambda w: w.handle.close.remote(), STOP_TIMEOUT_S)
        for worker in self.workers.values():
            try:
                self.ray.kill(worker.handle, no_restart=True)
            except Exception:  # already gone
                logging.getLogger(__name__).debug("worker %s already gone", worker.id)
        await asyncio.to_thread(self.ray.shutdown)

    def stats(self) -> list[WorkerStats]:
        """Each worker's figures over the run (its samples as drained: a lost worker's up to its last batch)."""
        out = []
        for worker in self.workers.values():
            lags = sorted(worker.lags_ms)
            out.append(
                WorkerStats(
                    id=worker.id,
                    node=worker.node,
                    requests=worker.requests,
                    errors=worker.errors,
                    cpu_percent=round(100 * worker.cpu_s / worker.wall_s, 1) if worker.wall_s > 0 else None,
                    clock_offset_ms=round(worker.offset_s * 1000, 3),
                    schedule_lag_ms=ScheduleLag(
                        p50=round(percentile(lags, 50), 3) if lags else None,
                        p99=round(percentile(lags, 99), 3) if lags else None,
                    ),
                )
            )
        return out

    async def _clock(self, worker: _Worker) -> None:
        """Its clock offset from the round trip with the least delay (the midpoint rule)."""
        best: tuple[float, float] | None = None
        for _ in range(CLOCK_ROUND_TRIPS):
            sent = time.time()
            theirs = await _awaited(worker.handle.wall.remote())
            back = time.time()
            if best is None or back - sent < best[0]:
                best = (back - sent, float(theirs) - (sent + back) / 2)
        assert best is not None
        worker.rtt_s, worker.offset_s = best

    async def _each(self, ids: list[int], call: Callable[[_Worker], Any], timeout_s: float) -> list[int]:
        """Call each live worker at once; the ids that answered in time (a dead one is recorded as lost)."""
        live = [w for w in ids if self.workers[w].alive]
        answers = await asyncio.gather(
            *(asyncio.wait_for(_awaited(call(self.workers[w])), timeout_s) for w in live), return_exceptions=True
        )
        ok = []
        for w, answer in zip(live, answers, strict=True):
            if isinstance(answer, TimeoutError):
                continue
            if isinstance(answer, BaseException):
                self._lose(w, answer)
            else:
                ok.append(w)
        return ok

    async def _drain(
        self,
        ids: list[int],
        on_samples: SampleSink,
        ends: dict[int, float],
        *,
        final: bool,
        timeout_s: float = DRAIN_TIMEOUT_S,
        call: Literal["drain", "stop"] = "drain",
    ) -> list[int]:
        """Keep each live worker's finished samples, asked by `call` ("drain", or "stop", which also stops it).

        Returns the workers that answered in time (one that failed is recorded as lost).
        """
        live = [w for w in ids if self.workers[w].alive]
        batches = await asyncio.gather(
            *(asyncio.wait_for(_awaited(getattr(self.workers[w].handle, call).remote()), timeout_s) for w in live),
            return_exceptions=True,
        )
        answered: list[int] = []
        for w, batch in zip(live, batches, strict=True):
            if isinstance(batch, TimeoutError):
                continue
            if isinstance(batch, BaseException):
                self._lose(w, batch)
                continue
            worker = self.workers[w]
            self._count(worker, batch.samples)
            on_samples(batch.samples)
            if batch.end_wall_s is not None:
                ends[w] = batch.end_wall_s
            cpu = 100 * batch.cpu_s / batch.wall_s if batch.wall_s > 0 else None
            worker.last = WorkerProgress(w, worker.node, batch.sent, batch.finished, batch.errors, cpu)
            if final:
                worker.cpu_s += batch.cpu_s
                worker.wall_s += batch.wall_s
            answered.append(w)
        self._show()
        return answered

    def _count(self, worker: _Worker, samples: Sequence[RequestSample]) -> None:
        for sample in samples:
            worker.requests += 1
            worker.errors += 0 if sample.ok else 1
            if sample.scheduled_s is not None:
                worker.lags_ms.append((sample.start_s - sample.scheduled_s) * 1000)

    def _lose(self, w: int, error: BaseException | None, *, record: bool = True) -> None:
        worker = self.workers[w]
        if not worker.alive:
            return
        worker.alive = False
        if record:
            at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
            self.lost.append(
                WORKER_LOST.format(
                    worker=w, node=worker.node or "?", at=at, level=self.level_index, reason=reason[:300]
                )
            )
        self._show()

    def _show(self) -> None:
        rows = []
        for worker in self.workers.values():
            last = worker.last or WorkerProgress(worker.id, worker.node)
            rows.append(replace(last, node=worker.node, alive=worker.alive, pid=worker.pid))
        self.progress.update(workers=rows)


def _init(ray: ModuleType, address: str | None, count: int) -> None:
    """Join the cluster at address, else start a local Ray with room for `count` workers (one core each)."""
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING, "configure_logging": False}
    if address:
        ray.init(address=address, **quiet)
    else:
        ray.init(address="local", num_cpus=max(count, os.cpu_count() or 1), include_dashboard=False, **quiet)


async def _awaited(ref: Any) -> Any:
    """A Ray object reference awaited on this event loop."""
    return await ref
