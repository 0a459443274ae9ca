"""The request-rate search: the highest Poisson (or gamma) arrival rate whose level meets the SLO, within budgets.

Pure pieces; the caller runs the levels.

- ``find_max_rate(measure, *, start_rps, max_levels, max_requests, max_duration_s, precision=0.1, clock)``:
  ``await measure(rate_rps)`` runs one open-loop level at that rate and returns a ``RateOutcome`` (did it meet the
  SLO, how many requests it sent, how long it took; ``RateOutcome.of_level(level_result)`` builds one from a
  ``LevelResult``). The search grows the rate (start, x2, x4, ...) until a level misses the SLO, then bisects
  between the highest rate that met it and the lowest that missed until ``(bad - good) / good <= precision``.
  It returns a ``RateSearch``: every level measured, in order, with its rate, phase and outcome; the best rate
  (``None`` when even the first rate missed); the lowest rate that missed; and why it stopped (``StopReason``).
- Budgets: at most ``max_levels`` levels; no new level once ``max_requests`` requests were sent or
  ``max_duration_s`` seconds (by ``clock``, from the search's start) went by, nor when the levels so far show the
  next one would overrun what is left. A level is taken to end by a count or by a duration, so at rate r it sends
  at most ``requests_i * max(1, r / rate_i)`` and lasts at most ``duration_s_i * max(1, rate_i / r)`` for every
  level i measured before (the search uses the tightest of these). The first level always runs: size a level
  (its request count and duration) well below the budgets. A budget stop keeps the best rate found so far.
- ``parse_rates("1,2,4,8")``: a sweep's rates in the order given; ValueError with a readable message otherwise.
- ``arrival_gaps(rate_rps, n, *, burstiness=1.0, seed)``: seconds between arrivals, gamma with shape
  1/burstiness and mean 1/rate (coefficient of variation sqrt(burstiness)). Burstiness 1 draws exactly what
  ``random.Random(seed).expovariate(rate_rps)`` draws, so it replaces probes/level.py's Poisson draws without
  changing a seeded schedule.

JSON (the probe's result): ``best_request_rate_within_slo_rps`` is ``RateSearch.best_rate_rps``, and
``RateSearch.model_dump(mode="json")`` gives the levels that led to it. The search's result types (``RateSearch``,
``RateLevel``, ``RateOutcome``, ``StopReason``) are part of the run's result, in probes/models.py.
"""

import math
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Literal

from probes.models import LevelResult, RateLevel, RateOutcome, RateSearch, StopReason
from probes.wording import CONVERGED, FIRST_RATE_MISSED, MAX_DURATION, MAX_LEVELS, MAX_REQUESTS, RATE_CAP

__all__ = [
    "MAX_RATE_RPS",
    "arrival_gaps",
    "find_max_rate",
    "parse_rates",
    "search_of_levels",
]

MAX_RATE_RPS = 1e6  # a sweep's rates stay at or below this (requests per second)


Measure = Callable[[float], Awaitable[RateOutcome]]


async def find_max_rate(
    measure: Measure,
    *,
    start_rps: float,
    max_levels: int,
    max_requests: int,
    max_duration_s: float,
    precision: float = 0.1,
    clock: Callable[[], float] = time.perf_counter,
) -> RateSearch:
    """Grow from start_rps (doubling) until a level misses, then bisect; see the module docstring."""
    if not 0 < start_rps <= MAX_RATE_RPS:
        raise ValueError(f"the start rate must be above 0 and at most {MAX_RATE_RPS:g} requests/s")
    if max_levels < 1 or max_requests < 1 or not max_duration_s > 0:
        raise ValueError("the level, request and time budgets must each be above 0")
    if not 0 < precision < math.inf:
        raise ValueError("the precision must be above 0 (0.1: within 10%)")
    start_s = clock()
    levels: list[RateLevel] = []
    good: float | None = None
    bad: float | None = None
    rate = start_rps
    phase: Literal["grow", "bisect"] = "grow"

    def done(reason: StopReason, detail: str) -> RateSearch:
        return RateSearch(
            best_rate_rps=good,
            lowest_missed_rate_rps=bad,
            stop_reason=reason,
            stop_detail=detail,
            precision=precision,
            requests=sum(lv.requests for lv in levels),
            duration_s=max(0.0, clock() - start_s),
            levels=tuple(levels),
        )

    while True:
        if levels:
            over = _over_budget(levels, rate, max_levels, max_requests, max_duration_s, clock() - start_s)
            if over is not None:
                return done(*over)
        outcome = await measure(rate)
        levels.append(RateLevel(index=len(levels), rate_rps=rate, phase=phase, **outcome.model_dump()))
        if outcome.met_slo:
            good = rate if good is None else max(good, rate)
        else:
            bad = rate if bad is None else min(bad, rate)
        if good is None:
            assert bad is not None
            return done(StopReason.FIRST_RATE_MISSED, FIRST_RATE_MISSED.format(rate=f"{bad:g}"))
        if bad is None:
            if rate * 2 > MAX_RATE_RPS:
                return done(StopReason.RATE_CAP, RATE_CAP.format(rate=f"{good:g}"))
            rate *= 2
            continue
        if (bad - good) / good <= precision:
            return done(StopReason.CONVERGED, _converged(good, bad, precision))
        phase = "bisect"
        rate = (good + bad) / 2


def _over_budget(
    levels: list[RateLevel], rate: float, max_levels: int, max_requests: int, max_duration_s: float, elapsed_s: float
) -> tuple[StopReason, str] | None:
    """Why the next level at `rate` must not run, or None when the budgets allow it."""
    if len(levels) >= max_levels:
        return StopReason.MAX_LEVELS, MAX_LEVELS.format(levels=max_levels)
    sent = sum(lv.requests for lv in levels)
    need = math.ceil(min(lv.requests * max(1.0, rate / lv.rate_rps) for lv in levels))
    if sent + need > max_requests:
        return StopReason.MAX_REQUESTS, MAX_REQUESTS.format(sent=sent, budget=max_requests, rate=f"{rate:g}", need=need)
    takes_s = min(lv.duration_s * max(1.0, lv.rate_rps / rate) for lv in levels)
    if elapsed_s + takes_s > max_duration_s:
        return StopReason.MAX_DURATION, MAX_DURATION.format(
            elapsed=f"{elapsed_s:.1f}", budget=f"{max_duration_s:g}", rate=f"{rate:g}", takes=f"{takes_s:.1f}"
        )
    return None


def _converged(good: float, bad: float, precision: float) -> str:
    return CONVERGED.format(good=f"{good:g}", bad=f"{bad:g}", precision=f"{precision * 100:g}")


def parse_rates(text: str) -> tuple[float, ...]:
    """Comma-separated request rates ("1,2,4,8", "0.5, 1.5") in the order given; ValueError saying what is wrong."""
    rates: list[float] = []
    parts = text.split(",")
    for i, part in enumerate(parts, 1):
        item = part.strip()
        if not item:
            if len(parts) == 1:
                raise ValueError("give at least one request rate in requests/s, e.g. 1,2,4,8")
            raise ValueError(f"request rate {i} of {len(parts)} is empty: give rates like 1,2,4,8")
        try:
            rate = float(item)
        except ValueError:
            raise ValueError(f"request rate {item!r} is not a number of requests/s (e.g. 1,2,4,8)") from None
        if not 0 < rate <= MAX_RATE_RPS:  # also refuses nan and inf
            raise ValueError(f"request rate {item} must be above 0 and at most {MAX_RATE_RPS:,.0f} requests/s")
        if rate in rates:
            raise ValueError(f"request rate {item} repeats: give each rate once")
        rates.append(rate)
    return tuple(rates)


def arrival_gaps(rate_rps: float, n: int | None = None, *, burstiness: float = 1.0, seed: int) -> Iterator[float]:
    """Seconds between consecutive arrivals (n of them, or endless with None): gamma, mean 1/rate_rps.

    Shape 1/burstiness and scale burstiness/rate_rps: the coefficient of variation is sqrt(burstiness); 1 is
    Poisson (exactly random.Random(seed).expovariate's draws), below 1 more regular, above 1 burstier.
    """
    if not 0 < rate_rps < math.inf:
        raise ValueError("the request rate must be above 0")
    if not 0 < burstiness < math.inf:
        raise ValueError("the burstiness must be above 0 (1: Poisson)")
    if n is not None and n < 0:
        raise ValueError("the number of gaps must be 0 or more")
    return _gaps(random.Random(seed), rate_rps, n, burstiness)


def _gaps(rng: random.Random, rate_rps: float, n: int | None, burstiness: float) -> Iterator[float]:
    shape, scale = 1.0 / burstiness, burstiness / rate_rps
    i = 0
    while n is None or i < n:
        yield rng.expovariate(rate_rps) if burstiness == 1.0 else rng.gammavariate(shape, scale)
        i += 1


def search_of_levels(
    measured: list[LevelResult],
    *,
    max_levels: int,
    max_requests: int,
    max_duration_s: float,
    precision: float = 0.1,
) -> RateSearch | None:
    """A finished search rebuilt from its stored levels (in order), for a run read back from the database.

    The levels, best rate and bracket are exact; the stop reason is the one the budgets give for those levels (the
    time budget judged by the levels' own wall time). None when no level has a rate, or the levels do not show why
    the search stopped (a cancelled run).
    """
    rated = [lv for lv in sorted(measured, key=lambda lv: lv.index) if lv.request_rate_rps]
    if not rated:
        return None
    levels: list[RateLevel] = []
    missed = False
    for lv in rated:
        outcome = RateOutcome.of_level(lv)
        phase: Literal["grow", "bisect"] = "bisect" if missed else "grow"
        levels.append(RateLevel(index=len(levels), rate_rps=lv.request_rate_rps, phase=phase, **outcome.model_dump()))
        missed = missed or not outcome.met_slo
    good = max((lv.rate_rps for lv in levels if lv.met_slo), default=None)
    bad = min((lv.rate_rps for lv in levels if not lv.met_slo), default=None)
    elapsed_s = sum(lv.duration_s for lv in levels)
    if good is None:
        reason, detail = StopReason.FIRST_RATE_MISSED, FIRST_RATE_MISSED.format(rate=f"{levels[0].rate_rps:g}")
    elif bad is not None and (bad - good) / good <= precision:
        reason = StopReason.CONVERGED
        detail = _converged(good, bad, precision)
    else:
        next_rate = good * 2 if bad is None else (good + bad) / 2
        if bad is None and next_rate > MAX_RATE_RPS:
            return _rebuilt(
                levels,
                good,
                bad,
                StopReason.RATE_CAP,
                RATE_CAP.format(rate=f"{good:g}"),
                precision,
                elapsed_s,
            )
        over = _over_budget(levels, next_rate, max_levels, max_requests, max_duration_s, elapsed_s)
        if over is None:
            return None
        reason, detail = over
    return _rebuilt(levels, good, bad, reason, detail, precision, elapsed_s)


def _rebuilt(
    levels: list[RateLevel],
    good: float | None,
    bad: float | None,
    reason: StopReason,
    detail: str,
    precision: float,
    elapsed_s: float,
) -> RateSearch:
    return RateSearch(
        best_rate_rps=good,
        lowest_missed_rate_rps=bad,
        stop_reason=reason,
        stop_detail=detail,
        precision=precision,
        requests=sum(lv.requests for lv in levels),
        duration_s=elapsed_s,
        levels=tuple(levels),
    )
