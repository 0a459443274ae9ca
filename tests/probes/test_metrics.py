"""Metric formulas on hand-computed cases: TTFT, TPOT, ITL, E2E per request; level throughput, percentiles, SLO."""

import random
from datetime import UTC, datetime

import numpy as np
import pytest

from probes import ErrorKind, RequestSample, SloTargets, TokenSource
from probes.metrics import best_concurrency_within_slo, peak_in_flight, percentile, stats, summarize_level
from probes.timing import StreamTrace, account, chunk_token_counts


def trace(chunks_s: list[float], end_s: float, **kw) -> StreamTrace:
    n = len(chunks_s)
    return StreamTrace(
        sent_s=0.0,
        chunk_s=chunks_s,
        chunk_chars=kw.pop("chars", [5] * n),
        chunk_reasoning=kw.pop("reasoning", [False] * n),
        chunk_cum_tokens=kw.pop("cum", [None] * n),
        end_s=end_s,
        **kw,
    )


def test_one_token_per_chunk_with_usage() -> None:
    acc = account(trace([0.100, 0.120, 0.140, 0.160], 0.170, completion_tokens=4, prompt_tokens=9), ok=True)
    assert acc.ttft_ms == pytest.approx(100)
    assert acc.e2e_ms == pytest.approx(170)
    assert acc.tpot_ms == pytest.approx((170 - 100) / 3)  # vLLM: (E2E - TTFT) / (out - 1)
    assert acc.itl_ms == pytest.approx([20, 20, 20])
    assert acc.output_tokens == 4 and acc.token_source == TokenSource.USAGE
    assert acc.chunk_tokens == [1, 1, 1, 1]


def test_without_usage_chunks_are_counted_and_flagged() -> None:
    acc = account(trace([0.1, 0.2, 0.3], 0.3), ok=True)
    assert acc.output_tokens == 3 and acc.token_source == TokenSource.CHUNKS
    assert acc.tpot_ms == pytest.approx(100)


def test_multi_token_chunks_with_continuous_usage_are_accounted_per_token() -> None:
    # three chunks of two tokens each, 40 ms apart: each gap is split over the two tokens it carried
    acc = account(trace([0.1, 0.14, 0.18], 0.18, cum=[2, 4, 6], completion_tokens=6), ok=True)
    assert acc.chunk_tokens == [2, 2, 2]
    assert acc.output_tokens == 6
    assert acc.itl_ms == pytest.approx([20, 20, 20, 20])  # out - tokens of the first chunk
    assert acc.tpot_ms == pytest.approx(80 / 5)


def test_final_usage_is_spread_over_chunks_by_characters() -> None:
    counts, total, source = chunk_token_counts(trace([0.1, 0.2, 0.3], 0.3, chars=[10, 30, 20], completion_tokens=9))
    assert total == 9 and source == TokenSource.USAGE
    assert counts == [2, 4, 3] and sum(counts) == 9
    counts, total, _ = chunk_token_counts(trace([0.1, 0.2], 0.2, completion_tokens=1))
    assert counts == [1, 1] and total == 1  # fewer tokens than chunks: usage still gives the count


def test_reasoning_is_timed_separately() -> None:
    acc = account(
        trace([0.05, 0.07, 0.2, 0.22], 0.22, reasoning=[True, True, False, False], completion_tokens=4), ok=True
    )
    assert acc.ttft_ms == pytest.approx(50)  # vLLM: the first output token, reasoning included
    assert acc.first_content_ms == pytest.approx(200)
    assert acc.reasoning_ms == pytest.approx(70)
    assert acc.reasoning_tokens == 2


def test_single_token_and_failed_requests_have_no_tpot() -> None:
    assert account(trace([0.1], 0.1, completion_tokens=1), ok=True).tpot_ms is None
    failed = account(trace([0.1, 0.2], 0.25), ok=False)
    assert failed.tpot_ms is None and failed.ttft_ms == pytest.approx(100)  # partial timings kept
    empty = account(trace([], None), ok=False)
    assert empty.ttft_ms is None and empty.output_tokens is None and empty.token_source is None


def test_percentiles_match_numpy() -> None:
    rng = random.Random(3)
    for n in (1, 2, 7, 100):
        values = sorted(rng.uniform(0, 100) for _ in range(n))
        for q in (50, 90, 99):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    assert stats([]).p50 is None and stats([]).count == 0


def sample(
    i: int,
    ttft: float | None,
    tpot: float | None,
    out: int | None,
    kind: ErrorKind | None = None,
    e2e: float | None = None,
) -> RequestSample:
    return RequestSample(
        level_index=0,
        concurrency=4,
        index=i,
        start_s=0.0,
        ttft_ms=ttft,
        tpot_ms=tpot,
        e2e_ms=e2e,
        output_tokens=out,
        input_tokens=10 if kind is None else None,
        error_kind=kind,
        token_source=TokenSource.USAGE if kind is None else None,
    )


def test_level_throughput_counts_and_slo() -> None:
    now = datetime.now(UTC)
    samples = [
        sample(0, 100, 20, 50, e2e=1100),
        sample(1, 300, 40, 30, e2e=1500),
        sample(2, None, None, None, ErrorKind.RATE_LIMITED),
    ]
    slo = SloTargets(
        ttft_p50_ms=300, ttft_p99_ms=1000, tpot_p50_ms=50, request_ttft_ms=200, request_tpot_ms=50, max_failed_ratio=0.5
    )
    level = summarize_level(0, 4, samples, started_at=now, finished_at=now, duration_s=2.0, slo=slo)
    assert (level.requests, level.completed, level.failed) == (3, 2, 1)
    assert level.errors == {"rate_limited": 1}
    assert level.req_s == pytest.approx(1.0)  # completed / wall time
    assert level.output_tok_s == pytest.approx(40.0)  # (50 + 30) / 2 s
    assert level.total_tok_s == pytest.approx(50.0)  # (20 input + 80 output) / 2 s
    assert level.ttft_ms.p50 == pytest.approx(200) and level.ttft_ms.mean == pytest.approx(200)
    assert level.tpot_ms.p99 == pytest.approx(20 + 0.99 * 20)
    assert level.output_tokens_per_request == pytest.approx(40)
    assert level.slo.met  # p50 200 <= 300, p99 298 <= 1000, TPOT p50 30 <= 50, 1/3 failed <= 0.5
    assert level.slo.attainment_ratio == pytest.approx(1 / 3)  # only request 0 meets TTFT <= 200 ms
    assert level.slo.goodput_req_s == pytest.approx(0.5)
    strict = summarize_level(
        0,
        4,
        samples,
        started_at=now,
        finished_at=now,
        duration_s=2.0,
        slo=slo.model_copy(update={"max_failed_ratio": 0.0, "ttft_p50_ms": 150}),
    )
    assert not strict.slo.met and len(strict.slo.violations) == 2


def test_highest_concurrency_within_slo() -> None:
    now = datetime.now(UTC)
    slo = SloTargets(ttft_p50_ms=150)
    levels = [
        summarize_level(
            i, c, [sample(0, ttft, 10, 5, e2e=ttft + 50)], started_at=now, finished_at=now, duration_s=1.0, slo=slo
        )
        for i, (c, ttft) in enumerate([(1, 50), (4, 100), (16, 200)])
    ]
    assert [lv.slo.met for lv in levels] == [True, True, False]
    assert best_concurrency_within_slo(levels) == 4
    assert best_concurrency_within_slo(levels[2:]) is None


def test_peak_in_flight_counts_overlapping_requests_from_send_times_and_durations() -> None:
    def sample(start_s: float, e2e_ms: float | None) -> RequestSample:
        return RequestSample(level_index=0, concurrency=512, index=0, start_s=start_s, e2e_ms=e2e_ms)

    # 0-1 s, 0.5-1.5 s, 1.0-2.0 s (starts as the first ends), 1.2-1.3 s: at most three at once (1.2-1.3 s).
    samples = [sample(0.0, 1000), sample(0.5, 1000), sample(1.0, 1000), sample(1.2, 100)]
    assert peak_in_flight(samples) == 3
    assert peak_in_flight([sample(0.0, 100), sample(0.2, 100)]) == 1
    assert peak_in_flight([]) == 0
