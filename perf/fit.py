"""Fitting theta per engine family on the public points (non-negative, median-unbiased), and the TTFT readout."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perf.fitset import Point
from perf.hardware import model_facts
from perf.nnls import nnls
from perf.pointfeatures import PointFeatures

Array = npt.NDArray[np.float64]
POOLED = "all"
TTFT_TERMS = ("simulated", "request_s", "per_1k_prompt_s")
"""The TTFT readout's terms: reported TTFT = simulated x a + b + c x prompt tokens / 1000 (seconds)."""


@dataclass(frozen=True)
class Row:
    """A point with its feature sums."""

    point: Point
    features: PointFeatures


def _fit_fact(key: str) -> float:
    value = model_facts()["fit"][key]
    assert isinstance(value, int | float)
    return float(value)


def _equation(row: Row) -> Array | None:
    """One point as a relative equation theta . phi / y = 1: its TPOT, else the time its throughput implies."""
    p, f = row.point, row.features
    if p.tpot_ms:
        return np.asarray(f.tpot) / (p.tpot_ms / 1000.0)
    if not (p.output_tok_s and p.concurrency):
        return None
    seconds = p.concurrency * p.output_tokens / p.output_tok_s  # the run's span, or one user's mean E2E
    span = np.asarray(f.span, dtype=np.float64)
    e2e = np.asarray(f.ttft, dtype=np.float64) + (p.output_tokens - 1) * np.asarray(f.tpot, dtype=np.float64)
    out: Array = (span if p.load == "one-batch" else e2e) / seconds
    return out


def design(rows: Sequence[Row]) -> tuple[Array, Array]:
    """Each point as a relative equation (see _equation); points that give neither TPOT nor throughput are left out."""
    a = [e for e in map(_equation, rows) if e is not None]
    return np.asarray(a), np.ones(len(a))


def _median_unbiased(a: Array, b: Array) -> Array:
    """The x >= 0 with the smallest absolute relative errors (reweighted least squares), scaled to a median of 0.

    Least squares on relative error punishes over-estimates more than under-estimates, so its estimates ran fast
    (held out, measured / estimated throughput had a median near 0.9); absolute errors and a median scale do not.
    """
    scale = np.maximum(np.abs(a).max(axis=0), 1e-30)  # columns of very different size: solve in scaled units
    scaled = a / scale
    weights = np.ones(len(b))
    floor = _fit_fact("irls_floor")
    for _ in range(int(_fit_fact("irls_iterations"))):
        x = nnls(scaled * weights[:, None], b * weights)
        weights = 1.0 / np.sqrt(np.maximum(np.abs(scaled @ x - b), floor))
    x = x / scale
    ratio = float(np.median(a @ x / b))
    out: Array = x / ratio if ratio > 0 else x
    return out


def fit_theta(rows: Sequence[Row]) -> tuple[float, ...]:
    """Non-negative theta whose relative TPOT errors over `rows` are smallest in absolute value, median zero."""
    a, b = design(rows)
    if not len(b):
        raise ValueError("nothing to fit")
    return tuple(float(v) for v in _median_unbiased(a, b))


def ttft_terms(simulated_s: float, input_tokens: float) -> tuple[float, float, float]:
    """The TTFT readout's inputs for one request (see TTFT_TERMS)."""
    return simulated_s, 1.0, input_tokens / 1000.0


def fit_ttft(rows: Sequence[Row], theta: Sequence[float]) -> tuple[float, ...]:
    """The TTFT readout (TTFT_TERMS) fitted on the measured TTFTs of `rows` under theta.

    The simulated TTFT is a mean over the closed loop's requests; what it leaves out (the HTTP and tokenizer path
    before the first step, work per prompt token outside the step model) is the readout's constant and its
    per-prompt-token term. Fitted like theta: absolute relative errors, median zero.
    """
    a = [
        np.asarray(ttft_terms(float(np.dot(theta, r.features.ttft)), r.point.input_tokens)) / (r.point.ttft_ms / 1e3)
        for r in rows
        if r.point.ttft_ms and r.point.ttft_stat == "mean"
    ]
    if not a:
        return (1.0, 0.0, 0.0)
    return tuple(float(v) for v in _median_unbiased(np.asarray(a), np.ones(len(a))))


def family_rows(rows: Sequence[Row], family: str) -> list[Row]:
    """The rows of one engine family (all of them for the pooled fit)."""
    return list(rows) if family == POOLED else [r for r in rows if r.point.engine == family]
