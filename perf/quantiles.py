"""Percentiles of values that count unequally: held-out sources in the bands, a closed loop's two parts in a level."""

from collections.abc import Sequence

import numpy as np


def weighted_percentiles(values: Sequence[float], weights: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Percentiles of `values` where each value counts `weights` times (midpoint interpolation)."""
    order = np.argsort(values)
    v = np.asarray(values, dtype=float)[order]
    w = np.asarray(weights, dtype=float)[order]
    cum = (np.cumsum(w) - w / 2) / w.sum()
    return [float(np.interp(q / 100, cum, v)) for q in qs]
