"""Level metrics as vLLM's serving benchmark defines them: throughput over wall time, percentiles, SLO, goodput."""

import math
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from probes.config import SloTargets
from probes.models import (
    ErrorKind,
    LevelResult,
    RequestSample,
    RunResult,
    ServerMetrics,
    SloOutcome,
    Stats,
    TokenSource,
)
from probes.power import MeasuredEnergy, PowerSample, measured_energy
from probes.wording import NO_REQUEST_COMPLETED, NO_REQUESTS, TOO_MANY_FAILED


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """numpy.percentile's default (linear interpolation) on an already sorted, non-empty sequence."""
    n = len(sorted_values)
    pos = (n - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def stats(values: Sequence[float]) -> Stats:
    """Mean, p50, p90, p99, min, max; an empty Stats (None everywhere) without data."""
    if not values:
        return Stats()
    ordered = sorted(values)
    return Stats(
        count=len(ordered),
        mean=sum(ordered) / len(ordered),
        p50=percentile(ordered, 50),
        p90=percentile(ordered, 90),
        p99=percentile(ordered, 99),
        min=ordered[0],
        max=ordered[-1],
    )


def request_is_good(sample: RequestSample, slo: SloTargets) -> bool:
    """VLLM goodput: a completed request whose TTFT and TPOT are within the per-request targets."""
    if not sample.ok or sample.ttft_ms is None:
        return False
    if sample.ttft_ms > slo.request_ttft_ms:
        return False
    return sample.tpot_ms is None or sample.tpot_ms <= slo.request_tpot_ms


def percentile_violations(ttft: Stats, tpot: Stats, slo: SloTargets) -> list[str]:
    """The percentile targets a level missed ('no request completed' without a TTFT)."""
    if ttft.p50 is None:
        return [NO_REQUEST_COMPLETED]
    violations: list[str] = []
    if ttft.p50 > slo.ttft_p50_ms:
        violations.append(f"TTFT p50 {ttft.p50:.0f} ms > {slo.ttft_p50_ms:g} ms")
    if ttft.p99 is not None and ttft.p99 > slo.ttft_p99_ms:
        violations.append(f"TTFT p99 {ttft.p99:.0f} ms > {slo.ttft_p99_ms:g} ms")
    if tpot.p50 is not None and tpot.p50 > slo.tpot_p50_ms:
        violations.append(f"TPOT p50 {tpot.p50:.1f} ms > {slo.tpot_p50_ms:g} ms")
    return violations


def failure_violations(failed: int, sent: int, slo: SloTargets) -> list[str]:
    """The failure-ratio target, when more than its share of the sent requests failed."""
    if sent and failed / sent > slo.max_failed_ratio:
        return [TOO_MANY_FAILED.format(failed=failed, sent=sent, ratio=f"{slo.max_failed_ratio:.0%}")]
    return []


def slo_outcome(
    samples: Sequence[RequestSample], ttft: Stats, tpot: Stats, duration_s: float, slo: SloTargets
) -> SloOutcome:
    """Percentile targets and failure ratio decide `met`; attainment and goodput count good requests."""
    sent = len(samples)
    failed = sum(1 for s in samples if not s.ok)
    if sent == 0:
        return SloOutcome(met=False, attainment_ratio=None, goodput_req_s=None, violations=[NO_REQUESTS])
    violations = [*percentile_violations(ttft, tpot, slo), *failure_violations(failed, sent, slo)]
    good = sum(1 for s in samples if request_is_good(s, slo))
    return SloOutcome(
        met=not violations,
        attainment_ratio=good / sent,
        goodput_req_s=good / duration_s if duration_s > 0 else None,
        violations=violations,
    )


def summarize_level(
    index: int,
    concurrency: int,
    samples: Sequence[RequestSample],
    *,
    started_at: datetime,
    finished_at: datetime,
    duration_s: float,
    slo: SloTargets,
    request_rate_rps: float | None = None,
    server_metrics: ServerMetrics | None = None,
) -> LevelResult:
    """One level's result from its samples; rates are over the level's wall time (first send to last end)."""
    counted = [s for s in samples if s.error_kind != ErrorKind.CANCELLED]
    ok = [s for s in counted if s.ok]
    errors = Counter(str(s.error_kind) for s in counted if not s.ok)
    input_tokens = sum(s.input_tokens or 0 for s in ok)
    output_tokens = sum(s.output_tokens or 0 for s in ok)
    ttft = stats([s.ttft_ms for s in ok if s.ttft_ms is not None])
    tpot = stats([s.tpot_ms for s in ok if s.tpot_ms is not None])
    itl = stats([gap for s in ok for gap in s.itl_ms])
    e2e = stats([s.e2e_ms for s in ok if s.e2e_ms is not None])
    sources = {s.token_source for s in ok if s.token_source is not None}
    source = TokenSource.CHUNKS if TokenSource.CHUNKS in sources else (TokenSource.USAGE if sources else None)
    with_input = [s.input_tokens for s in ok if s.input_tokens is not None]
    rate = (lambda x: x / duration_s) if duration_s > 0 else (lambda _x: None)
    return LevelResult(
        index=index,
        concurrency=concurrency,
        request_rate_rps=request_rate_rps,
        started_at=started_at,
        finished_at=finished_at,
        duration_s=duration_s,
        requests=len(counted),
        completed=len(ok),
        failed=len(counted) - len(ok),
        errors=dict(sorted(errors.items())),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        input_tokens_per_request=sum(with_input) / len(with_input) if with_input else None,
        output_tokens_per_request=output_tokens / len(ok) if ok else None,
        token_source=source,
        req_s=rate(len(ok)),
        output_tok_s=rate(output_tokens),
        total_tok_s=rate(input_tokens + output_tokens),
        ttft_ms=ttft,
        tpot_ms=tpot,
        itl_ms=itl,
        e2e_ms=e2e,
        slo=slo_outcome(counted, ttft, tpot, duration_s, slo),
        server_metrics=server_metrics,
    )


def best_concurrency_within_slo(levels: Sequence[LevelResult]) -> int | None:
    """The highest concurrency whose level met the SLO (None if none did)."""
    met = [level.concurrency for level in levels if level.slo.met and level.request_rate_rps is None]
    return max(met) if met else None


def best_request_rate_within_slo(levels: Sequence[LevelResult]) -> float | None:
    """The highest request rate whose level met the SLO (None if none did, or no level had a rate)."""
    met = [level.request_rate_rps for level in levels if level.slo.met and level.request_rate_rps is not None]
    return max(met) if met else None


def peak_in_flight(samples: Sequence[RequestSample]) -> int:
    """The most requests in flight at once, from each request's send time and duration (open-loop levels)."""
    events = sorted(
        [(s.start_s, 1) for s in samples] + [(s.start_s + (s.e2e_ms or 0.0) / 1000.0, -1) for s in samples],
        key=lambda e: (e[0], e[1]),  # at a tie, a request ends before the next starts
    )
    peak = running = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def with_energy(result: RunResult, power: Sequence[PowerSample]) -> RunResult:
    """The run with its GPU power readings and the energy measured over its levels' window (first start, last end).

    Joules per output token count the output tokens of the requests that succeeded in those levels.
    """
    levels = [level for level in result.levels if level.index >= 0]
    start = min((level.started_at for level in levels), default=None)
    end = max((level.finished_at for level in levels), default=None)
    tokens = sum(level.output_tokens for level in levels)
    return result.model_copy(update={"power": list(power), "energy": measured_energy(power, start, end, tokens)})


def level_energy(result: RunResult) -> list[tuple[LevelResult, MeasuredEnergy | None]]:
    """Each counted level with the energy over its own time (the run's arithmetic, level by level)."""
    return [
        (level, measured_energy(result.power, level.started_at, level.finished_at, level.output_tokens))
        for level in result.levels
        if level.index >= 0
    ]
