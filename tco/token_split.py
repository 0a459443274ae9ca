"""The estimator's split of a request's GPU time for the cost page's inputs, when their split basis is the estimate."""

from collections.abc import Sequence

from perf import Calibration, PerfError
from perf.phases import PhaseSeconds
from tco.inputs import CUSTOM_GPU, SplitBasis, TcoInputs
from tco.throughput import estimate_tps


def phases_for(inputs: TcoInputs, calibrations: Sequence[Calibration] = ()) -> PhaseSeconds | str | None:
    """Per-request seconds of prefill, cached prefix and decode at the inputs' SLO operating point.

    None when the split is the assumed prefill share (`split=share`, or a throughput typed by hand); a message (why
    not) when the estimate was asked for but these inputs have none (a custom GPU, an NPU, a model that does not fit):
    the page then uses the prefill share and says so. A probe run's throughput is split at the estimate's operating
    point for the same configuration (the run's own concurrency is not in the link).
    """
    if inputs.split_basis != SplitBasis.ESTIMATE:
        return None
    if inputs.gpu == CUSTOM_GPU:
        return "a custom GPU has no step-time model"
    try:
        phases = estimate_tps(inputs, calibrations).estimate.phases
    except PerfError as exc:
        return str(exc)
    return phases if phases is not None else "the estimate has no split"
