"""Simulated load levels summarised: percentiles, throughput and the SLO check, and the searches over load."""

import math
from collections.abc import Callable

import numpy as np

from perf.hardware import model_facts
from perf.inputs import Slo
from perf.result import LevelEstimate, Percentiles
from perf.simulate import Engine, Outcome, Workload, closed_loop, poisson


def _sim_int(key: str) -> int:
    value = model_facts()["simulation"][key]
    assert isinstance(value, int)
    return value


def summarise(
    outcome: Outcome, workload: Workload, slo: Slo, *, concurrency: int | None, rate: float | None
) -> LevelEstimate:
    """One level's figures from its simulated requests."""
    reqs = outcome.requests
    ttft = np.array([(r.first - r.arrival) * 1000 for r in reqs])
    per_token = max(workload.output_tokens - 1, 1)
    tpot = np.array([(r.finish - r.first) * 1000 / per_token for r in reqs]) if workload.output_tokens > 1 else None
    e2e = np.array([(r.finish - r.arrival) * 1000 for r in reqs])
    span = max(outcome.span_s, 1e-9)
    req_s = len(reqs) / span
    ttft_p50, ttft_p99 = (float(v) for v in np.percentile(ttft, [50, 99]))
    tpot_p50 = float(np.median(tpot)) if tpot is not None else 0.0
    e2e_p50 = float(np.median(e2e))
    meets = ttft_p50 <= slo.ttft_p50_ms and ttft_p99 <= slo.ttft_p99_ms and tpot_p50 <= slo.tpot_p50_ms
    return LevelEstimate(
        concurrency=concurrency,
        request_rate_rps=rate,
        output_tok_s=round(req_s * workload.output_tokens, 3),
        req_s=round(req_s, 4),
        ttft_ms=Percentiles(p50=round(ttft_p50, 3), p99=round(ttft_p99, 3)),
        tpot_ms=Percentiles(p50=round(tpot_p50, 3)),
        e2e_ms=Percentiles(p50=round(e2e_p50, 3)),
        mean_running=round(req_s * float(np.mean(e2e)) / 1000, 3),
        preemptions=outcome.preemptions,
        meets_slo=meets,
    )


def closed_loop_requests(concurrency: int) -> int:
    """Requests one closed-loop level simulates: a few rounds of every user, and enough for a p99."""
    return max(concurrency * _sim_int("closed_loop_waves"), _sim_int("min_requests"))


def closed_level(engine: Engine, workload: Workload, slo: Slo, concurrency: int) -> LevelEstimate:
    """`concurrency` users in a closed loop (all starting at once, as the probe does), every request counted."""
    outcome = closed_loop(engine, workload, concurrency, closed_loop_requests(concurrency))
    return summarise(outcome, workload, slo, concurrency=concurrency, rate=None)


def poisson_level(engine: Engine, workload: Workload, slo: Slo, rate_rps: float) -> LevelEstimate:
    """Poisson arrivals at `rate_rps` (seeded)."""
    outcome = poisson(engine, workload, rate_rps, _sim_int("poisson_requests"), _sim_int("poisson_seed"))
    return summarise(outcome, workload, slo, concurrency=None, rate=rate_rps)


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
    """The highest Poisson rate (up to `ceiling_rps`) whose level meets the SLO, to within about 3%."""
    low, high = 0.0, ceiling_rps
    if not level(ceiling_rps * 0.02).meets_slo:
        return None
    low = ceiling_rps * 0.02
    while high - low > 0.03 * high:
        mid = (low + high) / 2
        if level(mid).meets_slo:
            low = mid
        else:
            high = mid
    return round(low, 4) if math.isfinite(low) else None
