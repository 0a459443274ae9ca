"""Estimated against measured, level by level, for a stored run of a known configuration."""

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from perf.estimate import estimate
from perf.inputs import PerfRequest
from perf.result import Calibration, Estimate, LevelEstimate, MeasuredLevel


class LevelPair(BaseModel):
    """One level of a run beside the estimate of the same load (None where either side has no figure)."""

    model_config = ConfigDict(frozen=True)

    measured: MeasuredLevel
    estimated: LevelEstimate | None

    @property
    def tok_s_ratio(self) -> float | None:
        """Measured / estimated output tokens/s."""
        m, e = self.measured.output_tok_s, self.estimated.output_tok_s if self.estimated else None
        return m / e if m and e else None


def _mean(values: Sequence[float], fallback: int) -> int:
    return max(round(sum(values) / len(values)), 1) if values else fallback


def side_by_side(
    request: PerfRequest, measured: Sequence[MeasuredLevel], calibrations: Sequence[Calibration] = ()
) -> tuple[Estimate, list[LevelPair]]:
    """Estimate the run's own loads (closed-loop concurrencies and Poisson rates) at its mean request lengths.

    `request` names the configuration; its lengths and loads are replaced by the run's. Pass the calibrations of
    other runs only: a run calibrating its own comparison would compare with itself.
    """
    closed = tuple(sorted({m.concurrency for m in measured if m.concurrency and not m.request_rate_rps}))
    rates = tuple(sorted({m.request_rate_rps for m in measured if m.request_rate_rps}))
    asked = request.model_copy(
        update={
            "input_tokens": _mean([m.input_tokens for m in measured if m.input_tokens], request.input_tokens),
            "output_tokens": _mean([m.output_tokens for m in measured if m.output_tokens], request.output_tokens),
            "concurrency": closed or (1,),
            "request_rates_rps": rates,
            "max_throughput": False,
        }
    )
    result = estimate(PerfRequest.model_validate(asked.model_dump()), calibrations)
    by_c = {lv.concurrency: lv for lv in result.levels if lv.concurrency}
    by_rate = {lv.request_rate_rps: lv for lv in result.levels if lv.request_rate_rps}
    pairs = [
        LevelPair(
            measured=m,
            estimated=by_rate.get(m.request_rate_rps) if m.request_rate_rps else by_c.get(m.concurrency or 0),
        )
        for m in measured
    ]
    return result, pairs
