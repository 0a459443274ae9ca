"""The driver's side of a cancel, with stand-in workers: a batch a worker has handed over is never dropped.

Nothing here imports ray (the worker's Batch lives in the ray-free probes/ray_batch.py): imported while pytest
collects, ray would read its auth settings before the cluster fixture of test_ray_cluster.py sets them, and that
module's driver could no longer join its cluster.
"""

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest

from probes.models import RequestSample
from probes.progress import Progress
from probes.ray_batch import Batch
from probes.ray_fleet import Fleet, _Worker


def sample(index: int) -> RequestSample:
    return RequestSample(level_index=0, concurrency=2, index=index, start_s=0.0, e2e_ms=30.0, worker=0)


class _Call:
    """`handle.method.remote(...)` as Ray spells an actor call: here a coroutine the driver awaits."""

    def __init__(self, method: Callable[..., Awaitable[Any]]) -> None:
        self.method = method

    def remote(self, *args: Any) -> Awaitable[Any]:
        return self.method(*args)


class SlowToAnswerWorker:
    """A worker whose level runs until stopped, and whose drain takes its finished samples, then answers late."""

    def __init__(self, finished: int) -> None:
        self.finished = [sample(i) for i in range(finished)]
        self.draining = asyncio.Event()
        self.stopped = asyncio.Event()
        self.prepare, self.go = _Call(self._prepare), _Call(self._go)
        self.drain, self.stop = _Call(self._drain), _Call(self._stop)

    async def _prepare(self, order: object) -> None:
        return None

    async def _go(self, start_wall_s: float) -> None:
        await self.stopped.wait()

    async def _drain(self) -> Batch:
        taken, self.finished = self.finished, []  # off the worker, as ProbeWorker.drain does
        self.draining.set()
        await asyncio.sleep(0.5)  # a busy machine: the answer is on its way when the cancel lands
        return Batch(samples=taken, running=True)

    async def _stop(self) -> Batch:
        self.stopped.set()
        return Batch(samples=[sample(100)])  # what finished after the drain


def test_a_cancel_while_a_worker_is_drained_keeps_the_batch_it_handed_over() -> None:
    async def cancelled_during_a_drain() -> list[RequestSample]:
        worker = SlowToAnswerWorker(finished=30)
        fleet = Fleet(SimpleNamespace(kill=lambda *a, **k: None), [_Worker(0, worker)], Progress())
        kept: list[RequestSample] = []
        order = SimpleNamespace(plan=SimpleNamespace(index=0))
        level = asyncio.ensure_future(fleet.run_level({0: order}, kept.extend, lambda start_s: None))  # type: ignore[dict-item]
        await asyncio.wait_for(worker.draining.wait(), 10)
        level.cancel()
        with pytest.raises(asyncio.CancelledError):
            await level
        return kept

    kept = asyncio.run(cancelled_during_a_drain())
    assert sorted(s.index for s in kept) == [*range(30), 100]  # the drained 30 and the stop's one, each once
