"""A probe run spread over Ray workers (--workers): the driver runs the sweep, the workers send the requests.

The driver checks the endpoint, tells the deployment, scrapes the server's metrics and runs the levels, the warm-up,
the rate search, the trace replay and the sessions as one process would (probes/runner.py); only each level's
requests are dealt out to the workers (probes/ray_split.py) and started at one instant (probes/ray_fleet.py).
Their samples come back in batches and go to the run's sink as they arrive: the driver alone writes the run, and
every level's figures are computed from all its samples merged. Imported only when a run has --workers.
"""

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from probes.config import RunSettings
from probes.errors import ProbeError
from probes.level import Level, LevelPlan
from probes.models import RequestSample, RunResult, RunStatus
from probes.progress import CLIENT_BOUND_CPU_PERCENT, Progress
from probes.ray_fleet import Fleet
from probes.ray_split import Order, split_pinned, split_plan
from probes.runner import Sweep, run_probe
from probes.sessions import Conversation
from probes.sink import RunSink
from probes.trace_prompts import TracePromptBuilder
from probes.turn_stats import level_turn_stats
from probes.wording import CLIENT_BOUND
from settings import Settings


async def run_spread(
    settings: RunSettings,
    *,
    sink: RunSink | None = None,
    progress: Progress | None = None,
    limits: Settings | None = None,
    **_: Any,
) -> RunResult:
    """run_probe with every level's requests sent by settings.workers Ray workers (the same result model)."""
    return await run_probe(settings, sink=sink, progress=progress, limits=limits, sweep_type=SpreadSweep)


class SpreadLevel(Level):
    """A level whose requests the workers send; its samples are theirs, merged as they are drained."""

    def __init__(self, sweep: "SpreadSweep", plan: LevelPlan, kind: str = "level", builder: object = None) -> None:
        on_sample = sweep._on_sample if plan.counted else None
        super().__init__(
            sweep.client, sweep.settings, sweep.prompts, plan, clock=sweep.clock, progress=sweep.progress,
            on_sample=on_sample,
        )  # fmt: skip
        self.fleet = sweep.fleet
        self.kind = kind
        self.builder = builder
        self.sent = 0

    async def run(self) -> None:
        """Deal the level out, run it on the workers from one instant, and keep their samples as they come."""
        fleet = self.fleet
        assert fleet is not None
        live = fleet.live()
        if not live:
            raise RuntimeError("every Ray worker was lost")  # the run ends FAILED with what finished
        if self.kind == "level":
            plans = split_plan(self.plan, live, self.settings.seed)
        else:
            plans = split_pinned(self.plan, live, len(fleet.workers))
        orders = {w: Order(self.kind, plan, self.builder) for w, plan in plans.items()}
        start_wall_s, end_wall_s = await fleet.run_level(orders, self._merge, self._started)
        self.end_s = self.start_s + max(0.0, (end_wall_s or start_wall_s) - start_wall_s)

    def _started(self, start_wall_s: float) -> None:
        """The shared start on the driver's clock (a cancelled level's duration runs from it)."""
        self.start_s = self.end_s = self.clock() + (start_wall_s - time.time())

    def _merge(self, samples: Sequence[RequestSample]) -> None:
        if not self.plan.counted:
            return
        for sample in samples:
            self._record(sample)
        self.progress.update(sent=sum(w.sent for w in self.progress.workers))


class SpreadSweep(Sweep):
    """The sweep with each level sent by the Ray workers (the driver's own client checks, detects and scrapes)."""

    fleet: Fleet | None = None

    async def run(self) -> None:
        """Start the workers, then the sweep; the workers end with it."""
        self.progress.update(phase="starting workers")
        try:
            self.fleet = await Fleet.start(self.settings, self.pool, self.progress)
        except asyncio.CancelledError:
            self.status = RunStatus.CANCELLED
            self.progress.update(status=self.status, phase="finished")
            return
        except ProbeError as exc:
            self.status, self.error = RunStatus.FAILED, str(exc)
            self.progress.update(status=self.status, phase="finished", message=self.error)
            return
        try:
            await super().run()
        finally:
            await asyncio.shield(self.fleet.close())

    def _new_level(self, plan: LevelPlan) -> Level:
        return SpreadLevel(self, plan)

    def _trace_level(self, builder: TracePromptBuilder) -> tuple[Level, Callable[[], list[float]]]:
        """The replay's level spread over the workers (each its fixed share at the trace's times), and its lags."""
        level = SpreadLevel(self, LevelPlan(0, self.pool, 0), "trace", builder)
        return level, lambda: _lags_ms(level.samples)

    async def _sessions(self, conversations: list[Conversation]) -> bool:
        """Every session at once, each pinned to one worker; figures per turn from all their samples."""
        self._level_progress(0, len(conversations), None)
        before = await self.scraper.now()
        plan = LevelPlan(0, len(conversations), sum(c.turns for c in conversations))
        level = SpreadLevel(self, plan, "sessions")
        return await self._run_and_keep(level, before, lambda: {"turns": level_turn_stats(level.samples)})

    def result(self) -> RunResult:
        """The run with its workers, whether one was lost, and a note per client-bound worker."""
        result = super().result()
        if self.fleet is None:
            return result
        workers = self.fleet.stats()
        bound = [
            CLIENT_BOUND.format(worker=w.id, cpu=f"{w.cpu_percent:.0f}", limit=f"{CLIENT_BOUND_CPU_PERCENT:.0f}")
            for w in workers
            if w.cpu_percent is not None and w.cpu_percent > CLIENT_BOUND_CPU_PERCENT
        ]
        lost = self.fleet.lost
        return result.model_copy(
            update={
                "workers": workers,
                "partial": bool(lost),
                "partial_reason": "; ".join(lost) or None,
                "notes": [*result.notes, *bound],
            }
        )


def _lags_ms(samples: Sequence[RequestSample]) -> list[float]:
    return [(s.start_s - s.scheduled_s) * 1000 for s in samples if s.scheduled_s is not None]
