"""A run's levels beside the estimate of the same load."""

import pytest

from perf import MeasuredLevel, PerfRequest, estimate
from perf.measured import side_by_side


def test_each_measured_level_meets_the_estimate_of_its_own_load_and_lengths() -> None:
    request = PerfRequest(gpu="h100", model="llama3.1-8b", engine="sglang", quant="fp8")
    measured = (
        MeasuredLevel(
            concurrency=4, input_tokens=300, output_tokens=120, ttft_p50_ms=30, tpot_p50_ms=6, output_tok_s=600
        ),
        MeasuredLevel(
            concurrency=32, input_tokens=320, output_tokens=130, ttft_p50_ms=80, tpot_p50_ms=9, output_tok_s=3000
        ),
        MeasuredLevel(
            concurrency=8,
            request_rate_rps=5.0,
            input_tokens=310,
            output_tokens=125,
            ttft_p50_ms=40,
            tpot_p50_ms=7,
            output_tok_s=620,
        ),
    )
    est, pairs = side_by_side(request, measured)
    assert (est.request.input_tokens, est.request.output_tokens) == (310, 125)
    assert [p.estimated.concurrency if p.estimated else None for p in pairs] == [4, 32, None]
    assert pairs[2].estimated is not None and pairs[2].estimated.request_rate_rps == 5.0
    same = estimate(
        request.model_copy(
            update={"input_tokens": 310, "output_tokens": 125, "concurrency": (4, 32), "request_rates_rps": (5.0,)}
        )
    )
    assert pairs[1].estimated == same.levels[1]
    assert pairs[0].tok_s_ratio == pytest.approx(600 / same.levels[0].output_tok_s)
