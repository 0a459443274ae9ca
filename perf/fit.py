"""Fitting theta per engine family on the public points (non-negative, relative error), and held-out validation."""

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


@dataclass(frozen=True)
class Row:
    """A point with its feature sums."""

    point: Point
    features: PointFeatures


def _ttft_weight() -> float:
    value = model_facts()["fit"]["ttft_weight"]
    assert isinstance(value, int | float)
    return float(value)


def design(rows: Sequence[Row]) -> tuple[Array, Array]:
    """The weighted system: each TPOT (and, at half weight, TTFT) as a relative equation theta . phi / y = 1."""
    weight = _ttft_weight()
    a, b = [], []
    for row in rows:
        p, f = row.point, row.features
        if p.tpot_ms:
            a.append(np.asarray(f.tpot) / (p.tpot_ms / 1000.0))
            b.append(1.0)
        if p.ttft_ms:
            a.append(weight * np.asarray(f.ttft) / (p.ttft_ms / 1000.0))
            b.append(weight)
    return np.asarray(a), np.asarray(b)


def fit_theta(rows: Sequence[Row]) -> tuple[float, ...]:
    """Non-negative theta minimising the squared relative errors of `rows`."""
    a, b = design(rows)
    if not len(b):
        raise ValueError("nothing to fit")
    scale = np.maximum(np.abs(a).max(axis=0), 1e-30)  # columns of very different size: solve in scaled units
    x = nnls(a / scale, b) / scale
    return tuple(float(v) for v in x)


def family_rows(rows: Sequence[Row], family: str) -> list[Row]:
    """The rows of one engine family (all of them for the pooled fit)."""
    return list(rows) if family == POOLED else [r for r in rows if r.point.engine == family]
