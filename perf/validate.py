"""Held-out validation: points predicted by a fit that never saw their group, their GPU architecture or their source."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from catalog import find_gpu
from perf.fit import POOLED, Row, fit_theta, readout, row_ttft_terms
from perf.fitset import Point
from perf.readout import NEUTRAL_READOUT, ttft_terms

FitFn = Callable[[Sequence[Row], Sequence[Row]], tuple[float, ...]]  # (the family's rows, every engine's rows)
METRICS = ("output_tok_s", "tpot_ms", "ttft_ms")
"""The three figures every estimate gives and every band covers."""
METRIC_LABELS = {"output_tok_s": "tok/s", "tpot_ms": "TPOT", "ttft_ms": "TTFT"}
"""Their short names where a line of text shows all three."""


@dataclass(frozen=True)
class Prediction:
    """One held-out point: measured and predicted TPOT, TTFT and output tokens/s."""

    row: Row
    tpot_ms: float
    ttft_ms: float
    tok_s: float

    def estimated(self, metric: str) -> float:
        """The predicted figure of one of METRICS."""
        return {"output_tok_s": self.tok_s, "tpot_ms": self.tpot_ms, "ttft_ms": self.ttft_ms}[metric]

    def measured(self, metric: str) -> float | None:
        """The measured figure of one of METRICS (None where the source gives none; TTFT only as a mean)."""
        p = self.row.point
        if metric == "output_tok_s":
            return p.measured_tok_s
        if metric == "tpot_ms":
            return p.tpot_ms
        return p.ttft_ms if p.ttft_stat == "mean" else None

    def ratio(self, metric: str) -> float:
        """Measured / predicted (NaN where either is missing)."""
        m, e = self.measured(metric), self.estimated(metric)
        return m / e if m and e and e > 0 else float("nan")

    @property
    def tok_s_ratio(self) -> float:
        """Measured / predicted output tokens/s."""
        return self.ratio("output_tok_s")

    def ape(self) -> tuple[float, float, float]:
        """Absolute percentage errors of TPOT, TTFT and tokens/s (NaN where not measured)."""
        return tuple(abs(1 / r - 1) if r == r else r for r in map(self.ratio, ("tpot_ms", "ttft_ms", "output_tok_s")))  # type: ignore[return-value]


def predict(theta: Sequence[float], row: Row, ttft: Sequence[float] = NEUTRAL_READOUT) -> Prediction:
    """A point's TPOT, TTFT (through the TTFT readout) and closed-loop tokens/s under theta."""
    p, f = row.point, row.features
    tpot_ms = float(np.dot(theta, f.tpot)) * 1000.0
    ttft_ms = float(np.dot(ttft, row_ttft_terms(row, theta))) * 1000.0
    if p.load == "one-batch":  # every request at once: all the output over the whole run
        shift_s = float(np.dot(ttft, ttft_terms(0.0, 0.0, p.input_tokens, in_flight=p.concurrency or 1)))
        span_ms = (float(np.dot(theta, f.span)) + shift_s) * 1000.0
        tok_s = (p.concurrency or 0) * p.output_tokens / span_ms * 1000.0 if span_ms > 0 else 0.0
    else:  # a closed loop: users / mean E2E, as the measured throughput is computed, capped by the schedule's own
        simulated_ms = (float(np.dot(theta, f.ttft)) + (p.output_tokens - 1) * float(np.dot(theta, f.tpot))) * 1000.0
        e2e_ms = max(ttft_ms + (p.output_tokens - 1) * tpot_ms, simulated_ms)
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


def by_source(point: Point) -> str:
    """The unit an unseen benchmark is: every point of one publisher's measurements of one engine release."""
    return point.source_key


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
        rest = [r for r in rows if unit(r.point) != group]
        theta = fit(train, rest)
        ttft = readout(train, theta, rest)
        out.extend(predict(theta, r, ttft) for r in test)
    return out


def median_ape(predictions: Sequence[Prediction]) -> tuple[float, float, float]:
    """Median absolute percentage error over the points (TPOT, TTFT, tokens/s), NaNs left out."""
    if not predictions:
        return float("nan"), float("nan"), float("nan")
    errors = np.array([p.ape() for p in predictions], dtype=float)
    medians = [float(np.median(col[~np.isnan(col)])) if (~np.isnan(col)).any() else float("nan") for col in errors.T]
    return medians[0], medians[1], medians[2]
