"""Closed loops replayed: a schedule does not depend on how long a step takes, so one simulation serves many GPUs.

In a closed loop every decision the scheduler makes (what to admit, chunk, preempt, jump) depends on token counts,
the sequence limit, the token budget and the KV capacity, never on time. A ranking asks the same loop of hundreds
of configurations that differ only in their step cost, so the first simulation of a loop keeps its trace and the
others replay it: every step's features at once (numpy), times as a cumulative sum. A trace is reused only for a
capacity that gives the same schedule: at least the most KV the run ever compared with its capacity, or that very
capacity.
"""

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perf.features import STEP_INPUTS, step_columns
from perf.simulate import Engine, Trace, Workload, traced_closed_loop

Array = npt.NDArray[np.float64]
Key = tuple[object, ...]
MAX_TRACES = 256


@dataclass(frozen=True)
class Replayed:
    """Arrival, first-token and finish times of a closed loop's requests (finish order), and what it did."""

    arrival_s: Array
    first_s: Array
    finish_s: Array
    span_s: float
    preemptions: int


@dataclass(frozen=True)
class _Stored:
    trace: Trace
    steps: Array  # one row per step or jump, one column per STEP_INPUTS name
    repeats: Array  # the steps each row stands for
    arrival_step: npt.NDArray[np.int64]
    first_step: npt.NDArray[np.int64]
    finish_step: npt.NDArray[np.int64]
    preemptions: int


_traces: OrderedDict[Key, list[_Stored]] = OrderedDict()


def _key(engine: Engine, workload: Workload, concurrency: int, requests: int) -> Key:
    return (
        engine.max_seqs,
        engine.budget_tokens,
        engine.accepted_per_step,
        engine.computed_per_step,
        workload,
        concurrency,
        requests,
    )


def _usable(stored: _Stored, capacity: int) -> bool:
    return capacity == stored.trace.capacity_tokens or capacity >= stored.trace.need_tokens


def _record(engine: Engine, workload: Workload, concurrency: int, requests: int) -> _Stored:
    outcome, trace = traced_closed_loop(engine, workload, concurrency, requests, clock=False)
    reqs = outcome.requests
    return _Stored(
        trace=trace,
        steps=np.asarray(trace.steps, dtype=np.float64).reshape(-1, len(STEP_INPUTS)),
        repeats=np.asarray(trace.repeats, dtype=np.float64),
        arrival_step=np.fromiter((r.arrival_step for r in reqs), np.int64, len(reqs)),
        first_step=np.fromiter((r.first_step for r in reqs), np.int64, len(reqs)),
        finish_step=np.fromiter((r.finish_step for r in reqs), np.int64, len(reqs)),
        preemptions=outcome.preemptions,
    )


def replayed_closed_loop(engine: Engine, workload: Workload, concurrency: int, requests: int) -> Replayed:
    """closed_loop's request times, from a stored trace of the same schedule when there is one."""
    key = _key(engine, workload, concurrency, requests)
    stored = next((s for s in _traces.get(key, []) if _usable(s, engine.kv_capacity_tokens)), None)
    if stored is None:
        stored = _record(engine, workload, concurrency, requests)
        _traces.setdefault(key, []).append(stored)
        while len(_traces) > MAX_TRACES:
            _traces.popitem(last=False)
    _traces.move_to_end(key)
    features = engine.cost.features_matrix(step_columns(stored.steps))
    step_s = features @ np.asarray(engine.theta) * stored.repeats
    clock = np.concatenate(([0.0], np.cumsum(step_s)))
    return Replayed(
        arrival_s=clock[stored.arrival_step],
        first_s=clock[stored.first_step],
        finish_s=clock[stored.finish_step],
        span_s=float(clock[-1]),
        preemptions=stored.preemptions,
    )
