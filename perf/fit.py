"""Fitting theta per engine family on the public points (non-negative, median-unbiased), and the TTFT readout."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from catalog import find_gpu
from perf.features import FEATURES
from perf.fitset import Point
from perf.hardware import model_facts
from perf.nnls import nnls
from perf.pointfeatures import PointFeatures
from perf.readout import CONSTANT, NEUTRAL_READOUT, TTFT_TERMS, ttft_terms

Array = npt.NDArray[np.float64]
POOLED = "all"
ROOF, ROCM = FEATURES.index("roof"), FEATURES.index("roof_rocm")


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


def fit_theta(rows: Sequence[Row], pooled_rows: Sequence[Row] = ()) -> tuple[float, ...]:
    """Non-negative theta whose relative TPOT errors over `rows` are smallest in absolute value, median zero.

    ROCm's efficiency is the `roof_rocm` term, learned from AMD runs. A family whose AMD runs come from fewer than
    `rocm_min_sources` sources is fitted on its other runs, and its ROCm roof is its roof times the ratio that
    `pooled_rows` (every engine) fit: one source cannot tell ROCm's cost from its own setup's (dstack's early-2025
    SGLang ran 2.4x the estimated TPOT on H200 and 2.7x on MI300X; fitted alone, SGLang's ROCm roof came out 6.5
    times its roof on NVIDIA GPUs).
    """
    if not pooled_rows or rocm_sources(rows) >= _fit_fact("rocm_min_sources"):
        return _fit(rows)
    pooled = _fit(pooled_rows)
    ratio = pooled[ROCM] / pooled[ROOF] if pooled[ROOF] > 0 else 0.0
    theta = list(_fit([r for r in rows if find_gpu(r.point.gpu).vendor != "AMD"]))
    theta[ROCM] = theta[ROOF] * ratio
    return tuple(theta)


def _fit(rows: Sequence[Row]) -> tuple[float, ...]:
    a, b = design(rows)
    if not len(b):
        raise ValueError("nothing to fit")
    return tuple(float(v) for v in _median_unbiased(a, b))


def rocm_sources(rows: Sequence[Row]) -> int:
    """How many sources (publisher x release) the rows' AMD runs come from."""
    return len({r.point.source_key for r in rows if find_gpu(r.point.gpu).vendor == "AMD"})


def row_ttft_terms(row: "Row", theta: Sequence[float]) -> tuple[float, ...]:
    """A point's mean TTFT readout inputs under theta (each wave's share of the mean simulated TTFT).

    A one-batch point (every request sent at once) is a burst: its simulated TTFT, all first wave, is also the
    burst term. Its requests in flight are its users (the batch).
    """
    f, p = row.features, row.point
    first = float(np.dot(theta, f.ttft_first))
    burst = first if p.load == "one-batch" else 0.0
    return ttft_terms(
        first, float(np.dot(theta, f.ttft_later)), p.input_tokens, in_flight=p.concurrency or 1, burst_s=burst
    )


def idle_points(rows: Sequence[Row]) -> int:
    """Points with a mean TTFT measured at concurrency 1: the only ones that show the readout's constant alone."""
    return sum(1 for r in rows if r.point.ttft_ms and r.point.ttft_stat == "mean" and r.point.concurrency == 1)


def fit_ttft(rows: Sequence[Row], theta: Sequence[float], constant_s: float | None = None) -> tuple[float, ...]:
    """The TTFT readout (TTFT_TERMS) fitted on the measured TTFTs of `rows` under theta.

    The simulated TTFT is a mean over the closed loop's requests; what it leaves out (the HTTP and tokenizer path
    before the first step, work per prompt token outside the step model) is the readout's constant and its
    per-prompt-token term. Fitted like theta: absolute relative errors, median zero. With `constant_s` given, the
    constant is held there and only the other two terms are fitted.
    """
    measured = [r for r in rows if r.point.ttft_ms and r.point.ttft_stat == "mean"]
    if not measured:
        return NEUTRAL_READOUT
    terms = np.asarray([row_ttft_terms(r, theta) for r in measured])
    ttft_s = np.asarray([(r.point.ttft_ms or 0.0) / 1e3 for r in measured])
    if constant_s is None:
        return tuple(float(v) for v in _median_unbiased(terms / ttft_s[:, None], np.ones(len(measured))))
    free = [i for i in range(len(TTFT_TERMS)) if i != CONSTANT]
    fitted = _median_unbiased(terms[:, free] / ttft_s[:, None], 1.0 - constant_s / ttft_s)
    out = [float(v) for v in fitted]
    out.insert(CONSTANT, constant_s)
    return tuple(out)


def readout(family_rows: Sequence[Row], theta: Sequence[float], pooled_rows: Sequence[Row]) -> tuple[float, ...]:
    """A family's TTFT readout; its constant is the pooled one when the family has too few idle points to show it.

    Busy points alone cannot tell a per-request constant from queueing the simulation underestimates: SGLang's
    public points (none at concurrency 1) fitted a 0.38 s constant, so every small model read >= 0.4 s at one user.
    """
    if idle_points(family_rows) >= _fit_fact("ttft_constant_min_idle_points"):
        return fit_ttft(family_rows, theta)
    pooled = fit_ttft(pooled_rows, fit_theta(pooled_rows))
    return fit_ttft(family_rows, theta, constant_s=pooled[CONSTANT])


def family_rows(rows: Sequence[Row], family: str) -> list[Row]:
    """The rows of one engine family (all of them for the pooled fit)."""
    return list(rows) if family == POOLED else [r for r in rows if r.point.engine == family]
