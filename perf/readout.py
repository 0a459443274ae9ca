"""The TTFT readout: a reported TTFT read out of the simulated time to the first token, term by term."""

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

Num = TypeVar("Num", float, npt.NDArray[np.float64])  # one request's seconds, or a numpy column over many requests

TTFT_TERMS = (
    "simulated_first_wave",
    "simulated_later",
    "request_s",
    "per_1k_prompt_s",
    "burst_simulated",
    "per_in_flight_s",
)
"""Reported TTFT (seconds) = a1 x simulated (first wave) + a2 x simulated (later requests) + b + c x prompt tokens
/ 1000 + d x simulated (a burst) + e x requests in flight.

The first wave (every user of a closed loop arriving at once) waits behind every other prompt; later requests arrive
staggered, as nearly all of a long benchmark's do, so each has its factor. A burst is a measurement that sends every
request at once and times only them (a source's method, never an estimate's load). The last term is time per request
in flight that the step model does not see (the server's work per open stream)."""
CONSTANT = TTFT_TERMS.index("request_s")
NEUTRAL_READOUT = (1.0, 1.0, 0.0, 0.0, 0.0, 0.0)
"""The readout that reports the simulated TTFT unchanged."""


def ttft_terms(
    first_wave_s: Num, later_s: Num, input_tokens: float, *, in_flight: float, burst_s: float = 0.0
) -> tuple[Num | float, ...]:
    """The readout's inputs, in the order of TTFT_TERMS (floats for one request, or numpy columns for many)."""
    return first_wave_s, later_s, 1.0, input_tokens / 1000.0, burst_s, in_flight


def reported_ttft_s(
    readout: Sequence[float], first_wave_s: Num, later_s: Num, input_tokens: float, *, in_flight: float
) -> Num:
    """The TTFT a benchmark would report (seconds), read out of simulated first-wave and later-request times.

    An estimate's load is never a burst, so that term reads nothing here (it is fitted on sources' bursts only).
    """
    total = first_wave_s * 0.0
    for coefficient, term in zip(
        readout, ttft_terms(first_wave_s, later_s, input_tokens, in_flight=in_flight), strict=True
    ):
        total = total + coefficient * term
    return total
