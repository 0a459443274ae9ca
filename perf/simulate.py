"""A continuous-batching engine, simulated step by step: sequence limit, chunked-prefill budget, KV capacity.

Each step serves the running decodes first (one token each, or a speculative step's accepted tokens), then the
prefills already under way, then admits waiting requests first come, first served, while the token budget, the
sequence limit and the KV cache allow. When the cache cannot hold the next decode tokens, the newest decoding
sequence is preempted and recomputed later (vLLM's default). Stretches of pure decode between events are
advanced in one jump, so a level costs a few thousand events, not one per token.

The clock is theta . features: in fitting mode the simulator also sums the feature vectors, so any request's
TTFT or TPOT is a linear function of theta (closed-loop schedules do not depend on time).
"""

import gc
import heapq
import math
import random
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from perf.errors import PerfError
from perf.features import FEATURES, StepCost, StepInputs
from perf.readout import NEUTRAL_READOUT

Vector = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Engine:
    """The scheduler's limits and the cost of a step."""

    cost: StepCost
    theta: tuple[float, ...]
    max_seqs: int
    budget_tokens: int
    kv_capacity_tokens: int
    accepted_per_step: float = 1.0  # output tokens a decode step yields (speculation: the expected accepted length)
    computed_per_step: float = 1.0  # tokens a decode step computes per sequence (speculation: drafts + 1)
    ttft_readout: tuple[float, ...] = NEUTRAL_READOUT  # reported TTFT from simulated TTFT (perf.readout.TTFT_TERMS)

    def step_s(self, step: StepInputs) -> float:
        """Seconds one step takes: theta . features(step)."""
        return sum(t * f for t, f in zip(self.theta, self.cost.features(step), strict=True))


@dataclass(frozen=True)
class Workload:
    """Identical requests: prompt tokens (of which `cached_tokens` hit the prefix cache) and output tokens."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0


@dataclass(slots=True)
class Request:
    """One simulated request and its timeline (seconds, plus feature sums when fitting)."""

    arrival: float
    context: float  # tokens in the KV cache once prefilled (cached prefix included)
    to_prefill: float  # tokens still to compute before the next token can come out
    decode_steps: int  # decode steps still to run after the first token
    first: float = math.nan
    finish: float = math.nan
    phi_arrival: Vector | None = None
    phi_first: Vector | None = None
    phi_finish: Vector | None = None
    prefilled: float = 0.0  # of the current prefill pass
    arrival_step: int = 0  # steps (or jumps) run before it arrived, reached its first token, finished
    first_step: int = 0
    finish_step: int = 0
    join_order: int = 0  # while decoding: its current join (1, 2, ...; 0 when not decoding), step and context then
    join_step: int = 0
    join_ctx: float = 0.0


@dataclass
class Outcome:
    """Every request's timeline, the preemptions and the span of the run."""

    requests: list[Request]
    preemptions: int
    span_s: float
    theta: tuple[float, ...] = field(default=())

    def times_s(self) -> tuple[Vector, Vector, Vector]:
        """Arrival, first-token and finish times of the requests, in finish order."""
        reqs = self.requests
        return (
            np.fromiter((r.arrival for r in reqs), float, len(reqs)),
            np.fromiter((r.first for r in reqs), float, len(reqs)),
            np.fromiter((r.finish for r in reqs), float, len(reqs)),
        )


@dataclass
class Trace:
    """What a closed loop did, independent of how long a step takes (see perf/replay.py).

    `steps` holds one entry per step or decode jump: what it ran (StepInputs), and `repeats` how many steps it
    stands for (a decode jump runs many alike).
    `need_tokens` is the most KV the run ever compared against the capacity: any capacity at least this large
    (or the capacity it ran with) gives the same schedule.
    """

    steps: list[StepInputs]
    repeats: list[float]
    need_tokens: float
    capacity_tokens: int


def _decode_steps(workload: Workload, accepted: float) -> int:
    return math.ceil(max(workload.output_tokens - 1, 0) / accepted)


class _Sim:
    def __init__(self, engine: Engine, workload: Workload, collect: bool, clock: bool = True) -> None:
        self.e, self.collect, self.clock = engine, collect, clock or collect
        self.theta = np.asarray(engine.theta, dtype=np.float64)
        self.theta_values = tuple(engine.theta)
        self.time = 0.0
        self.phi: Vector = np.zeros(len(FEATURES)) if collect else np.zeros(0)
        self.waiting: deque[Request] = deque()
        self.prefilling: list[Request] = []
        self.heap: list[tuple[int, int, Request]] = []  # (finish step, join order, request)
        self.joined: list[tuple[int, Request]] = []  # decoders in join order (for preemption), stale ones skipped
        self.context = float(workload.input_tokens)  # every request starts alike
        self.to_prefill = float(workload.input_tokens - workload.cached_tokens)
        self.decode_steps = _decode_steps(workload, engine.accepted_per_step)
        self.step_no = 0
        self.n_dec = 0
        self.ctx_dec = 0.0
        self.used = 0.0
        self.preemptions = 0
        self.done: list[Request] = []
        self.order = 0
        self.trace: list[StepInputs] = []
        self.repeats: list[float] = []
        self.need = 0.0

    # -- the clock ---------------------------------------------------------------------------------------------
    def _advance(self, inputs: StepInputs, steps: int = 1) -> None:
        if self.clock:
            feats = self.e.cost.features(inputs)
            self.time += steps * sum(t * f for t, f in zip(self.theta_values, feats, strict=True))
            if self.collect:
                self.phi += steps * np.asarray(feats, dtype=np.float64)
        self.trace.append(inputs)
        self.repeats.append(float(steps))

    def _needs(self, tokens: float) -> None:
        """The KV the scheduler is about to compare with the capacity (for Trace.need_tokens)."""
        if tokens > self.need:
            self.need = tokens

    # -- requests ----------------------------------------------------------------------------------------------
    def new_request(self, arrival: float) -> Request:
        return Request(
            arrival,
            self.context,
            self.to_prefill,
            self.decode_steps,
            phi_arrival=self.phi.copy() if self.collect else None,
            arrival_step=len(self.trace),
        )

    def _ctx_of(self, r: Request) -> float:
        return r.join_ctx + self.e.accepted_per_step * (self.step_no - r.join_step)

    def _join(self, r: Request) -> None:
        self.order += 1
        r.join_order = self.order
        r.join_step = self.step_no
        r.join_ctx = r.context
        heapq.heappush(self.heap, (self.step_no + r.decode_steps, self.order, r))
        self.joined.append((self.order, r))
        self.n_dec += 1
        self.ctx_dec += r.context

    def _finish(self, r: Request) -> None:
        r.finish = self.time
        r.phi_finish = self.phi.copy() if self.collect else None
        r.finish_step = len(self.trace)
        self.done.append(r)

    def _pop_finished(self) -> list[Request]:
        out = []
        heap, step_no = self.heap, self.step_no
        while heap and heap[0][0] <= step_no:
            _, order, r = heapq.heappop(heap)
            if r.join_order != order:
                continue
            ctx = self._ctx_of(r)
            r.join_order = 0
            self.n_dec -= 1
            self.ctx_dec -= ctx
            self.used -= ctx
            r.decode_steps = 0
            self._finish(r)
            out.append(r)
        if not self.n_dec:
            self.ctx_dec = 0.0
        return out

    def _preempt_for(self, growth: float) -> None:
        """Preempt the newest decoders until the cache can take `growth` more tokens."""
        self._needs(self.used + growth * self.n_dec)
        while self.n_dec and self.used + growth * self.n_dec > self.e.kv_capacity_tokens:
            order, r = self.joined.pop()
            if r.join_order != order:
                continue
            ctx = self._ctx_of(r)
            steps_run = self.step_no - r.join_step
            r.join_order = 0
            self.n_dec -= 1
            self.ctx_dec -= ctx
            self.used -= ctx
            r.decode_steps -= steps_run
            r.context = ctx
            r.to_prefill = ctx  # recompute: prompt and the tokens generated so far
            r.prefilled = 0.0
            self.preemptions += 1
            self.waiting.appendleft(r)

    # -- one step or one jump ------------------------------------------------------------------------------------
    def step(self, next_arrival: float) -> list[Request]:
        """Run one mixed step or one decode jump; returns the requests that finished."""
        e = self.e
        if self.n_dec:
            self._preempt_for(e.accepted_per_step)
        budget = e.budget_tokens - self.n_dec * e.computed_per_step
        chunks: list[tuple[Request, float]] = []
        for r in self.prefilling:
            if budget <= 0:
                break
            take = min(r.to_prefill - r.prefilled, budget)
            chunks.append((r, take))
            budget -= take
        seats = e.max_seqs - self.n_dec - len(self.prefilling)
        while self.waiting and budget > 0 and seats > 0:
            r = self.waiting[0]
            take = min(r.to_prefill, budget)
            if self.n_dec or self.prefilling:
                self._needs(self.used + r.context)
            if self.used + r.to_prefill + (r.context - r.to_prefill) > e.kv_capacity_tokens and (
                self.n_dec or self.prefilling
            ):
                break
            self.waiting.popleft()
            self.prefilling.append(r)
            self.used += r.context - r.to_prefill  # the cached prefix is already resident
            chunks.append((r, take))
            budget -= take
            seats -= 1
        if chunks:
            return self._mixed_step(chunks)
        if self.n_dec:
            return self._decode_jump(next_arrival)
        return []

    def _mixed_step(self, chunks: list[tuple[Request, float]]) -> list[Request]:
        e = self.e
        tokens = pairs = pctx = 0.0
        for r, take in chunks:
            before = r.context - r.to_prefill + r.prefilled
            tokens += take
            pairs += take * (before + take / 2)
            pctx += before
        self._advance(
            StepInputs(
                decode_seqs=self.n_dec,
                decode_ctx=self.ctx_dec,
                prefill_tokens=tokens,
                prefill_pairs=pairs,
                prefill_ctx=pctx,
                prefill_seqs=len(chunks),
                tokens_per_decode=e.computed_per_step,
            )
        )
        if self.n_dec:
            self.step_no += 1
            grow = self.n_dec * e.accepted_per_step
            self.ctx_dec += grow
            self.used += grow
        finished = self._pop_finished()
        for r, take in chunks:
            r.prefilled += take
            self.used += take
            if r.prefilled < r.to_prefill:
                continue
            self.prefilling.remove(r)
            r.to_prefill = r.prefilled = 0.0
            if r.first != r.first:  # NaN: its first token comes now (not after a preemption's recompute)
                r.first = self.time
                r.phi_first = self.phi.copy() if self.collect else None
                r.first_step = len(self.trace)
            if r.decode_steps <= 0:
                self.used -= r.context
                self._finish(r)
                finished.append(r)
            else:
                self._join(r)
        return finished

    def _decode_jump(self, next_arrival: float) -> list[Request]:
        e = self.e
        k = max(self.heap[0][0] - self.step_no, 1)
        growth = self.n_dec * e.accepted_per_step
        self._needs(self.used + growth * k)
        room = math.floor((e.kv_capacity_tokens - self.used) / growth) if growth else k
        k = max(1, min(k, room))
        cost = e.cost
        if next_arrival < math.inf and self.waiting == deque() and self._could_admit():
            first = float(
                self.theta @ np.asarray(cost.features(StepInputs(decode_seqs=self.n_dec, decode_ctx=self.ctx_dec)))
            )
            last_ctx = self.ctx_dec + growth * (k - 1)
            last = float(
                self.theta @ np.asarray(cost.features(StepInputs(decode_seqs=self.n_dec, decode_ctx=last_ctx)))
            )
            k = min(k, _steps_to_reach(next_arrival - self.time, first, last, k))
        mid = self.ctx_dec + growth * (k - 1) / 2
        self._advance(StepInputs(decode_seqs=self.n_dec, decode_ctx=mid, tokens_per_decode=e.computed_per_step), k)
        self.step_no += k
        self.ctx_dec += growth * k
        self.used += growth * k
        return self._pop_finished()

    def _could_admit(self) -> bool:
        return self.n_dec + len(self.prefilling) < self.e.max_seqs


def _steps_to_reach(gap: float, first: float, last: float, k: int) -> int:
    """The fewest steps (at most k) whose time, rising linearly from `first` to `last`, covers `gap` seconds."""
    if gap <= 0:
        return 1
    slope = (last - first) / (k - 1) if k > 1 else 0.0
    if slope <= 1e-15:
        return max(1, min(k, math.ceil(gap / first))) if first > 0 else k
    # j * first + slope * j (j - 1) / 2 >= gap
    a, b = slope / 2, first - slope / 2
    j = (-b + math.sqrt(b * b + 4 * a * gap)) / (2 * a)
    return max(1, min(k, math.ceil(j)))


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a loop runs, and restore it after.

    A loop allocates thousands of short-lived requests; each 700 allocations start a collection, and every few
    of those a full one over the whole process (catalogs, pydantic models, kept traces), tens of milliseconds in
    a running app. The simulation makes no reference cycles, so reference counting frees all of it. Only the
    caller that found the collector on turns it back on, so overlapping loops in threads leave it on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _check(engine: Engine, workload: Workload) -> None:
    final_context = workload.input_tokens + engine.accepted_per_step * _decode_steps(workload, engine.accepted_per_step)
    if engine.kv_capacity_tokens < max(final_context, workload.input_tokens + workload.output_tokens):
        raise PerfError(
            f"one request of {workload.input_tokens} + {workload.output_tokens} tokens does not fit the KV cache "
            f"({engine.kv_capacity_tokens:,} tokens): shorten the request or add GPUs"
        )


def closed_loop(
    engine: Engine, workload: Workload, concurrency: int, requests: int, *, collect: bool = False
) -> Outcome:
    """`concurrency` users, each sending its next request when the last one ends, until `requests` are done."""
    return traced_closed_loop(engine, workload, concurrency, requests, collect=collect)[0]


def traced_closed_loop(
    engine: Engine, workload: Workload, concurrency: int, requests: int, *, collect: bool = False, clock: bool = True
) -> tuple[Outcome, Trace]:
    """closed_loop, and the trace of its schedule for replaying it at another step cost.

    Without `clock` no step is timed (a closed loop's schedule never reads the clock): every time in the outcome is
    0 and only its steps, the trace and the preemptions mean anything, which is all a replay needs.
    """
    _check(engine, workload)
    sim = _Sim(engine, workload, collect, clock)
    with _without_cycle_collection():
        issued = 0
        for _ in range(min(concurrency, requests)):
            sim.waiting.append(sim.new_request(0.0))
            issued += 1
        while len(sim.done) < requests:
            finished = sim.step(math.inf)
            if not finished and not (sim.n_dec or sim.prefilling or sim.waiting):
                raise PerfError("the simulation stalled: nothing running and nothing waiting")  # pragma: no cover
            for _ in finished:
                if issued < requests:
                    sim.waiting.append(sim.new_request(sim.time))
                    issued += 1
    outcome = Outcome(requests=sim.done, preemptions=sim.preemptions, span_s=sim.time, theta=engine.theta)
    trace = Trace(steps=sim.trace, repeats=sim.repeats, need_tokens=sim.need, capacity_tokens=engine.kv_capacity_tokens)
    return outcome, trace


def poisson(engine: Engine, workload: Workload, rate_rps: float, requests: int, seed: int) -> Outcome:
    """Requests arriving at random (exponential gaps, mean 1/rate), from a seeded generator."""
    _check(engine, workload)
    rng = random.Random(seed)
    arrivals, t = [], 0.0
    for _ in range(requests):
        t += rng.expovariate(rate_rps)
        arrivals.append(t)
    sim = _Sim(engine, workload, collect=False)
    nxt = 0
    with _without_cycle_collection():
        while len(sim.done) < requests:
            while nxt < requests and arrivals[nxt] <= sim.time:
                sim.waiting.append(sim.new_request(arrivals[nxt]))
                nxt += 1
            if not (sim.n_dec or sim.prefilling or sim.waiting):
                sim.time = arrivals[nxt]  # idle until the next arrival
                continue
            sim.step(arrivals[nxt] if nxt < requests else math.inf)
    return Outcome(requests=sim.done, preemptions=sim.preemptions, span_s=sim.time - arrivals[0], theta=engine.theta)
