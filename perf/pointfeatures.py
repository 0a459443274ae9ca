"""The feature sums behind each measured point: its closed loop simulated once, with the clock kept as features."""

import math

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from catalog import find_gpu
from catalog.models import find_model
from perf.features import FEATURES
from perf.fitset import Point
from perf.hardware import model_facts
from perf.levels import closed_loop_requests
from perf.replica import kv_capacity_tokens, replica_engine
from perf.simulate import Workload, closed_loop

Vector = npt.NDArray[np.float64]


class PointFeatures(BaseModel):
    """Mean TTFT and TPOT of a point's simulated requests, as feature sums (time = theta . these)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    ttft: tuple[float, ...]
    ttft_first: tuple[float, ...]  # the first wave's share of `ttft` (requests sent at the start, all at once)
    ttft_later: tuple[float, ...]  # the later requests' share (ttft = ttft_first + ttft_later)
    tpot: tuple[float, ...]
    span: tuple[float, ...]  # the whole run, first arrival to last finish (one-batch loads divide by it)
    preemptions: int


def _fit_int(key: str) -> int:
    value = model_facts()["fit"][key]
    assert isinstance(value, int)
    return value


def point_features(point: Point) -> PointFeatures | None:
    """The point's feature sums, or None for a maximum-load point (its batch is not published) or no room for one.

    Maximum-load points are compared with the estimate's maximum instead (perf.accuracy.max_load).
    """
    if not point.concurrency:
        return None
    model, gpu = find_model(point.model), find_gpu(point.gpu)
    context = point.input_tokens + point.output_tokens
    capacity = kv_capacity_tokens(model, gpu, point.quant, point.kv_dtype, point.shape, context, point.engine)
    if capacity < context:
        return None
    c = point.concurrency
    engine = replica_engine(
        model,
        gpu,
        quant=point.quant,
        kv_dtype=point.kv_dtype,
        shape=point.shape,
        theta=(1.0,) * len(FEATURES),
        max_seqs=max(_fit_int("default_max_num_seqs"), c),
        budget_tokens=_fit_int("default_max_num_batched_tokens"),
        context=context,
        kv_capacity=capacity,
    )
    workload = Workload(point.input_tokens, point.output_tokens)
    requests = c if point.load == "one-batch" else closed_loop_requests(c)
    outcome = closed_loop(engine, workload, c, requests, collect=True)
    first_wave, later = np.zeros(len(FEATURES)), np.zeros(len(FEATURES))
    tpot = np.zeros(len(FEATURES))
    per_token = max(point.output_tokens - 1, 1)
    for r in outcome.requests:  # every request counts, the first wave (all arriving at once) too, as in a probe
        assert r.phi_arrival is not None and r.phi_first is not None and r.phi_finish is not None
        if r.arrival == 0.0:
            first_wave += r.phi_first - r.phi_arrival
        else:
            later += r.phi_first - r.phi_arrival
        tpot += (r.phi_finish - r.phi_first) / per_token
    n = len(outcome.requests)
    last = max(outcome.requests, key=lambda r: r.finish)
    assert last.phi_finish is not None
    return PointFeatures(
        ttft=tuple(float(v) for v in (first_wave + later) / n),
        ttft_first=tuple(float(v) for v in first_wave / n),
        ttft_later=tuple(float(v) for v in later / n),
        tpot=tuple(float(v) for v in tpot / n),
        span=tuple(float(v) for v in last.phi_finish),
        preemptions=outcome.preemptions,
    )


def is_finite(values: tuple[float, ...]) -> bool:
    return all(math.isfinite(v) for v in values)
