"""How a level is dealt out over Ray workers (--workers): exact shares, remainders spread, arrivals thinned."""

from dataclasses import dataclass, replace

from probes.level import LevelPlan


def shares(total: int, parts: int) -> list[int]:
    """`total` split into `parts` whole shares that differ by at most one, the larger ones first."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


@dataclass(frozen=True)
class Order:
    """What one worker runs of a level: a plain level (a LevelPlan), a trace replay's share or its sessions.

    `kind` is "level", "trace" or "sessions"; `builder` is the driver's calibrated trace prompt builder.
    """

    kind: str
    plan: LevelPlan
    builder: object | None = None


def split_plan(plan: LevelPlan, workers: list[int], seed: int) -> dict[int, LevelPlan]:
    """One plan per worker that sends any of the level; their union is the level.

    Closed loop: the concurrency is split with the remainder spread over the first workers (a worker with no share
    of it sits the level out), then the requests over those that take part. Open loop (a rate): the in-flight cap
    is split the same way, and each worker that takes part draws its own arrivals at rate / k, so k independent
    processes at λ/k add up to arrivals at λ (Poisson thinning; bursty gamma arrivals are split the same way).
    Each worker's prompts and request numbers are the next block of the level's, so together they send exactly the
    prompts one process would.
    """
    slots = [(worker, c) for worker, c in zip(workers, shares(plan.concurrency, len(workers)), strict=True) if c > 0]
    counts = shares(plan.count, len(slots))
    rate = plan.rate_rps / len(slots) if plan.rate_rps is not None else None
    plans: dict[int, LevelPlan] = {}
    first = 0
    for (worker, concurrency), count in zip(slots, counts, strict=True):
        plans[worker] = replace(
            plan,
            concurrency=concurrency,
            count=count,
            prompt_offset=plan.prompt_offset + first,
            rate_rps=rate,
            worker=worker,
            index_offset=first,
            arrival_seed=(seed * 7919 + plan.index) * 10_007 + worker,
        )
        first += count
    return plans


def split_pinned(plan: LevelPlan, workers: list[int], of_workers: int) -> dict[int, LevelPlan]:
    """A trace replay's or the sessions' level: every worker takes part with its part of the in-flight cap.

    The trace's requests (and the sessions) are dealt by their order: worker w sends those whose number modulo
    of_workers is w, at the trace's own times from the shared start (each session stays on its worker).
    """
    caps = shares(max(plan.concurrency, len(workers)), len(workers))
    return {
        worker: replace(plan, concurrency=cap, worker=worker, of_workers=of_workers)
        for worker, cap in zip(workers, caps, strict=True)
    }
