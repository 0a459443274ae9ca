"""The TTFT readout: time per request in flight reaches every level; the burst factor reads burst sources only."""

import numpy as np
import pytest

from perf.fit import Row, row_ttft_terms
from perf.fitset import load_points
from perf.inputs import Slo
from perf.levels import summarise
from perf.pointfeatures import point_features
from perf.readout import NEUTRAL_READOUT, TTFT_TERMS
from perf.simulate import Workload

PER_IN_FLIGHT_S = 0.002
WORKLOAD = Workload(input_tokens=1000, output_tokens=100)


def _readout(**terms: float) -> tuple[float, ...]:
    values = dict(zip(TTFT_TERMS, NEUTRAL_READOUT, strict=True))
    values.update(terms)
    return tuple(values[t] for t in TTFT_TERMS)


def _times(n: int, spacing_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arrival = np.arange(n) * spacing_s
    first = arrival + 0.1
    return arrival, first, first + 1.0


def test_a_closed_loop_waits_per_user_in_flight() -> None:
    times = _times(200, 0.0)
    plain = summarise(times, 1.1, 0, WORKLOAD, Slo(), concurrency=100, rate=None)
    busy = summarise(
        times, 1.1, 0, WORKLOAD, Slo(), concurrency=100, rate=None, readout=_readout(per_in_flight_s=PER_IN_FLIGHT_S)
    )
    assert busy.ttft_ms.mean == pytest.approx(plain.ttft_ms.mean + 100 * PER_IN_FLIGHT_S * 1000)


def test_open_arrivals_wait_per_request_in_flight_on_average() -> None:
    # 100 arrivals 0.1 s apart, each 1.1 s in the engine: about 11 in flight (Little's law over the span)
    times = _times(100, 0.1)
    span_s = float(times[2][-1])
    busy = summarise(
        times, span_s, 0, WORKLOAD, Slo(), concurrency=None, rate=10.0, readout=_readout(per_in_flight_s=1.0)
    )
    in_flight = 100 / span_s * 1.1
    assert busy.ttft_ms.mean == pytest.approx(100 + in_flight * 1000)


def test_an_estimate_is_never_read_as_a_burst() -> None:
    times = _times(50, 0.0)
    plain = summarise(times, 1.1, 0, WORKLOAD, Slo(), concurrency=50, rate=None)
    burst = summarise(times, 1.1, 0, WORKLOAD, Slo(), concurrency=50, rate=None, readout=_readout(burst_simulated=5.0))
    assert burst.ttft_ms == plain.ttft_ms


def test_only_a_source_that_sends_every_request_at_once_feeds_the_burst_term() -> None:
    points, _ = load_points()
    burst_index = TTFT_TERMS.index("burst_simulated")
    seen = set()
    for point in points:
        if point.load in seen or not point.concurrency or point.concurrency > 64:
            continue
        features = point_features(point)
        if features is None:
            continue
        terms = row_ttft_terms(Row(point=point, features=features), (1.0,) * len(features.ttft))
        if point.load == "one-batch":
            first_wave = terms[TTFT_TERMS.index("simulated_first_wave")]
            assert first_wave > 0 and terms[burst_index] == pytest.approx(first_wave)
        else:
            assert terms[burst_index] == 0
        assert terms[TTFT_TERMS.index("per_in_flight_s")] == point.concurrency
        seen.add(point.load)
        if seen == {"one-batch", "closed-loop"}:
            break
    assert seen == {"one-batch", "closed-loop"}
