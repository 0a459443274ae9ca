"""Simulated load levels summarised: percentiles, throughput and the SLO check, and the searches over load."""

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from perf.hardware import model_facts
from perf.inputs import Slo
from perf.quantiles import weighted_percentiles
from perf.readout import NEUTRAL_READOUT, reported_ttft_s
from perf.replay import replayed_closed_loop
from perf.result import LevelEstimate, Percentiles
from perf.simulate import Engine, Workload, poisson

UNBOUNDED_MS = 1e12  # an SLO term a level is not judged by
_UNBOUNDED_SLO = Slo(ttft_p50_ms=UNBOUNDED_MS, ttft_p99_ms=UNBOUNDED_MS, tpot_p50_ms=UNBOUNDED_MS)

Array = npt.NDArray[np.float64]


def _sim_int(key: str) -> int:
    value = model_facts()["simulation"][key]
    assert isinstance(value, int)
    return value


def _quantiles(values: Array, *qs: float) -> list[float]:
    """Linear-interpolation percentiles (numpy's default) of one sorted copy, cheaper than np.percentile per call."""
    ordered = np.sort(values)
    last = len(ordered) - 1
    out = []
    for q in qs:
        pos = q / 100 * last
        lo = int(pos)
        hi = min(lo + 1, last)
        out.append(float(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)))
    return out


def summarise(
    times: tuple[Array, Array, Array],
    span_s: float,
    preemptions: int,
    workload: Workload,
    slo: Slo,
    *,
    concurrency: int | None,
    rate: float | None,
    readout: tuple[float, ...] = NEUTRAL_READOUT,
) -> LevelEstimate:
    """One level's figures from its requests' arrival, first-token and finish times (seconds).

    TTFT is read out of the simulated time to the first token (`readout`, perf.readout.TTFT_TERMS: the first wave,
    sent at time 0, and later requests each with their factor, plus time per request in flight: a closed loop's
    users, or open arrivals' mean in flight); the first token then starts the decode, so E2E and TPOT come from the
    simulated times and TTFT shifts E2E by its readout. A level is never a burst (that term reads sources only).
    """
    arrival, first, finish = times
    in_flight = concurrency if concurrency else len(arrival) / max(span_s, 1e-9) * float(np.mean(finish - arrival))
    waited = first - arrival
    first_wave = arrival == 0.0
    ttft_s = reported_ttft_s(
        readout,
        np.where(first_wave, waited, 0.0),
        np.where(first_wave, 0.0, waited),
        workload.input_tokens - workload.cached_tokens,
        in_flight=in_flight,
    )
    ttft = np.asarray(ttft_s, dtype=np.float64) * 1000
    e2e = ttft + (finish - first) * 1000
    per_token = max(workload.output_tokens - 1, 1)
    span = max(span_s, 1e-9)
    # a closed loop keeps every user busy, so it completes users / mean E2E requests a second (Little's law, the way
    # the measured points' throughput is computed), but never more than its simulated schedule completes: the readout
    # may report a shorter TTFT than the queue the requests waited in; open arrivals complete what arrived over the span
    served_ms = max(float(np.mean(e2e)), float(np.mean(finish - arrival)) * 1000)
    req_s = concurrency / (served_ms / 1000) if concurrency else len(arrival) / span
    ttft_p50, ttft_p99 = _quantiles(ttft, 50, 99)
    tpot_p50 = _quantiles((finish - first) * 1000 / per_token, 50)[0] if workload.output_tokens > 1 else 0.0
    e2e_p50 = _quantiles(e2e, 50)[0]
    meets = ttft_p50 <= slo.ttft_p50_ms and ttft_p99 <= slo.ttft_p99_ms and tpot_p50 <= slo.tpot_p50_ms
    return LevelEstimate(
        concurrency=concurrency,
        request_rate_rps=rate,
        output_tok_s=round(req_s * workload.output_tokens, 3),
        req_s=round(req_s, 4),
        ttft_ms=Percentiles(p50=round(ttft_p50, 3), p99=round(ttft_p99, 3), mean=round(float(np.mean(ttft)), 3)),
        tpot_ms=Percentiles(p50=round(tpot_p50, 3)),
        e2e_ms=Percentiles(p50=round(e2e_p50, 3)),
        mean_running=round(req_s * float(np.mean(e2e)) / 1000, 3),
        preemptions=preemptions,
        meets_slo=meets,
    )


def closed_loop_requests(concurrency: int) -> int:
    """Requests one closed-loop level simulates: a few rounds of every user, and enough for a p99."""
    return max(concurrency * _sim_int("closed_loop_waves"), _sim_int("min_requests"))


def closed_level(engine: Engine, workload: Workload, slo: Slo, concurrency: int) -> LevelEstimate:
    """`concurrency` users in a closed loop (all starting at once, as the probe does), every request counted."""
    run = replayed_closed_loop(engine, workload, concurrency, closed_loop_requests(concurrency))
    times = (run.arrival_s, run.first_s, run.finish_s)
    return summarise(
        times,
        run.span_s,
        run.preemptions,
        workload,
        slo,
        concurrency=concurrency,
        rate=None,
        readout=engine.ttft_readout,
    )


def poisson_level(engine: Engine, workload: Workload, slo: Slo, rate_rps: float) -> LevelEstimate:
    """Poisson arrivals at `rate_rps` (seeded)."""
    outcome = poisson(engine, workload, rate_rps, _sim_int("poisson_requests"), _sim_int("poisson_seed"))
    times = outcome.times_s()
    return summarise(
        times,
        outcome.span_s,
        outcome.preemptions,
        workload,
        slo,
        concurrency=None,
        rate=rate_rps,
        readout=engine.ttft_readout,
    )


def prompts_in_step(engine: Engine, workload: Workload, users: int, rate_rps: float) -> Percentiles:
    """TTFT of a replica that only prefills, sent prompts as a closed loop of `users` sends them (ms).

    The first wave arrives at once; the later prompts come as the users' answers end, taken here as Poisson arrivals
    at `rate_rps`. A closed-loop level has `closed_loop_requests(users)` requests, `users` of them in the first wave,
    so the two parts weigh in that proportion, each read out with its own factor, as a one-pool closed loop's are
    (perf.readout): the burst and the steady flow are judged as the one-pool copy is.
    """
    wave = replayed_closed_loop(engine, workload, users, users)
    flow = poisson(engine, workload, rate_rps, _sim_int("poisson_requests"), _sim_int("poisson_seed"))
    arrival, first, finish = flow.times_s()
    later = max(closed_loop_requests(users) - users, 1)
    in_flight = len(arrival) / max(flow.span_s, 1e-9) * float(np.mean(finish - arrival))
    prompt = workload.input_tokens - workload.cached_tokens
    waves, flows = wave.first_s - wave.arrival_s, first - arrival
    ttft = (
        np.concatenate(
            (
                reported_ttft_s(engine.ttft_readout, waves, np.zeros_like(waves), prompt, in_flight=in_flight),
                reported_ttft_s(engine.ttft_readout, np.zeros_like(flows), flows, prompt, in_flight=in_flight),
            )
        )
        * 1000
    )
    # the first wave holds users / (users + later) of the requests, the flow the rest
    weights = np.concatenate((np.full(len(waves), users / len(waves)), np.full(len(flows), later / len(flows))))
    p50, p99 = weighted_percentiles(list(ttft), list(weights), (50, 99))
    mean = float(np.average(ttft, weights=weights))
    return Percentiles(p50=round(p50, 3), p99=round(p99, 3), mean=round(mean, 3))


def search_concurrency(level: Callable[[int], LevelEstimate], ceiling: int) -> int | None:
    """The highest concurrency (up to `ceiling`) whose level meets the SLO: doubling, then bisection."""
    if not level(1).meets_slo:
        return None
    good, bad = 1, None
    c = 2
    while c <= ceiling:
        if level(c).meets_slo:
            good = c
            c *= 2
        else:
            bad = c
            break
    if bad is None:
        if good < ceiling and level(ceiling).meets_slo:
            return ceiling
        bad = min(good * 2, ceiling + 1)
    while bad - good > max(1, good // 8):  # to within about 12%
        mid = (good + bad) // 2
        if level(mid).meets_slo:
            good = mid
        else:
            bad = mid
    return good


def search_rate(level: Callable[[float], LevelEstimate], ceiling_rps: float) -> float | None:
    """The highest Poisson rate (up to `ceiling_rps`) whose level meets the SLO and is served, to within about 3%.

    Served: the level completes at least `stable_rate_share` of the offered rate. Past the replica's capacity the
    queue grows without end; a TTFT readout that does not see that queue must not count such a rate as taken.
    """
    share = model_facts()["simulation"]["stable_rate_share"]
    assert isinstance(share, float)

    def taken(rate: float) -> bool:
        found = level(rate)
        return found.meets_slo and found.req_s >= share * rate

    low, high = 0.0, ceiling_rps
    if not taken(ceiling_rps * 0.02):
        return None
    low = ceiling_rps * 0.02
    while high - low > 0.03 * high:
        mid = (low + high) / 2
        if taken(mid):
            low = mid
        else:
            high = mid
    return round(low, 4) if math.isfinite(low) else None
