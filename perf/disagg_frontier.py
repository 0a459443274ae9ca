"""Prefill interference and the frontier of tokens/s per GPU against tokens/s per user, for one pool and two."""

from pydantic import BaseModel, ConfigDict

from perf.disagg import estimate_topology
from perf.errors import PerfError
from perf.estimate import estimate
from perf.inputs import PerfRequest
from perf.levels import closed_level
from perf.resolve import resolve
from perf.simulate import Workload
from perf.topology import ServedTopology, TopologyOptions


def interference_ratio(request: PerfRequest) -> float | None:
    """Prefill interference: one pool's TPOT at the SLO's load over decode-only TPOT there (None: no such load)."""
    est = estimate(request)
    level = est.slo_level
    if level is None or not level.concurrency or level.tpot_ms.p50 <= 0:
        return None
    setup = resolve(request.model_copy(update={"gpus": est.layout.gpus}))
    work = Workload(request.input_tokens, request.output_tokens, cached_tokens=max(request.input_tokens - 1, 0))
    alone = closed_level(setup.base, work, request.slo, level.concurrency)
    return round(level.tpot_ms.p50 / alone.tpot_ms.p50, 3) if alone.tpot_ms.p50 > 0 else None


FRONTIER_TPOT_FACTORS = (0.5, 0.75, 1.0, 1.5, 2.0)
"""TPOT limits the frontier is drawn at, as multiples of the request's SLO TPOT."""


class FrontierPoint(BaseModel):
    """One topology's best output tokens/s per GPU within the SLO at one TPOT limit (an estimate)."""

    model_config = ConfigDict(frozen=True)

    topology: ServedTopology
    tpot_limit_ms: float
    tok_s_per_user: float
    output_tok_s_per_gpu: float


def frontier(request: PerfRequest, options: TopologyOptions) -> list[FrontierPoint]:
    """Tokens/s per GPU against tokens/s per user for one pool and two, at TPOT limits around the request's."""
    points: list[FrontierPoint] = []
    for factor in FRONTIER_TPOT_FACTORS:
        limit = round(request.slo.tpot_p50_ms * factor, 3)
        asked = request.model_copy(update={"slo": request.slo.model_copy(update={"tpot_p50_ms": limit})})
        try:
            result = estimate_topology(asked, options.model_copy(update={"topology": "best"}))
        except PerfError:
            continue
        for t in (result.chosen, result.alternative):
            if t is not None and t.meets_slo and t.output_tok_s_per_gpu > 0:
                points.append(
                    FrontierPoint(
                        topology=t.topology,
                        tpot_limit_ms=limit,
                        tok_s_per_user=t.tok_s_per_user,
                        output_tok_s_per_gpu=t.output_tok_s_per_gpu,
                    )
                )
    return points
