"""Held-out validation: each (model, GPU, engine) group predicted by a fit that never saw it."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from catalog import find_gpu
from perf.fit import POOLED, Row, fit_theta
from perf.fitset import Point

FitFn = Callable[[Sequence[Row]], tuple[float, ...]]


@dataclass(frozen=True)
class Prediction:
    """One held-out point: measured and predicted TPOT, TTFT and output tokens/s."""

    row: Row
    tpot_ms: float
    ttft_ms: float
    tok_s: float

    @property
    def tok_s_ratio(self) -> float:
        """Measured / predicted output tokens/s."""
        measured = self.row.point.measured_tok_s
        return measured / self.tok_s if measured and self.tok_s else float("nan")

    def ape(self) -> tuple[float, float, float]:
        """Absolute percentage errors of TPOT, TTFT and tokens/s (NaN where not measured)."""
        p = self.row.point
        nan = float("nan")
        tpot = abs(self.tpot_ms / p.tpot_ms - 1) if p.tpot_ms else nan
        ttft = abs(self.ttft_ms / p.ttft_ms - 1) if p.ttft_ms else nan
        measured = p.measured_tok_s
        tok_s = abs(self.tok_s / measured - 1) if measured else nan
        return tpot, ttft, tok_s


def predict(theta: Sequence[float], row: Row) -> Prediction:
    """A point's TPOT, TTFT and closed-loop tokens/s under theta."""
    p, f = row.point, row.features
    tpot_ms = float(np.dot(theta, f.tpot)) * 1000.0
    ttft_ms = float(np.dot(theta, f.ttft)) * 1000.0
    e2e_ms = ttft_ms + (p.output_tokens - 1) * tpot_ms
    tok_s = (p.concurrency or 0) * p.output_tokens / e2e_ms * 1000.0 if e2e_ms > 0 else 0.0
    return Prediction(row=row, tpot_ms=tpot_ms, ttft_ms=ttft_ms, tok_s=tok_s)


def training_family(engine: str, families: Sequence[str]) -> str:
    """The family whose coefficients an engine uses: its own when fitted, else the pooled fit."""
    return engine if engine in families else POOLED


def by_group(point: Point) -> str:
    """The usual held-out unit: one (model, GPU, engine)."""
    return point.group


def by_architecture(point: Point) -> str:
    """A harder unit: every point of one engine on one GPU architecture (a GPU the fit has never seen)."""
    return f"{point.engine} | {find_gpu(point.gpu).arch}"


def leave_one_group_out(
    rows: Sequence[Row], families: Sequence[str], fit: FitFn = fit_theta, unit: Callable[[Point], str] = by_group
) -> list[Prediction]:
    """Every row predicted with its unit (by default its (model, GPU, engine) group) held out of its family's fit."""
    groups = sorted({unit(r.point) for r in rows})
    out: list[Prediction] = []
    for group in groups:
        test = [r for r in rows if unit(r.point) == group]
        family = training_family(test[0].point.engine, families)
        train = [r for r in rows if unit(r.point) != group and (family == POOLED or r.point.engine == family)]
        if not train:
            continue
        theta = fit(train)
        out.extend(predict(theta, r) for r in test)
    return out


def median_ape(predictions: Sequence[Prediction]) -> tuple[float, float, float]:
    """Median absolute percentage error over the points (TPOT, TTFT, tokens/s), NaNs left out."""
    errors = np.array([p.ape() for p in predictions], dtype=float)
    medians = [float(np.median(col[~np.isnan(col)])) if (~np.isnan(col)).any() else float("nan") for col in errors.T]
    return medians[0], medians[1], medians[2]
