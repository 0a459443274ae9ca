"""How fast a configuration will run: a fitted step-time model and a continuous-batching simulation, no Streamlit."""

from perf.errors import NoEstimateError, PerfError
from perf.estimate import estimate
from perf.inputs import ENGINE_FAMILIES, PerfRequest, Slo, request_from_advice
from perf.result import Band, Basis, Calibration, Estimate, Layout, LevelEstimate, MeasuredLevel, Percentiles

__all__ = [
    "ENGINE_FAMILIES",
    "Band",
    "Basis",
    "Calibration",
    "Estimate",
    "Layout",
    "LevelEstimate",
    "MeasuredLevel",
    "NoEstimateError",
    "Percentiles",
    "PerfError",
    "PerfRequest",
    "Slo",
    "estimate",
    "request_from_advice",
]
