"""Which input moves the cost per request most: each input at -20% and +20%, and cost against throughput."""

from pydantic import BaseModel, ConfigDict

from i18n import N_
from tco.cost import capacity_of, fleet_of
from tco.inputs import TcoInputs

DEFAULT_SWING = 0.20
THROUGHPUT_CURVE_FACTORS = (0.25, 0.35, 0.5, 0.7, 0.85, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0)

# field -> (label, integer?, lower bound, upper bound)
_SWUNG: dict[str, tuple[str, bool, float, float]] = {
    "price_per_gpu_hour": (N_("Price per GPU-hour"), False, 1e-9, float("inf")),
    "output_tok_s_per_replica": (N_("Throughput"), False, 1e-9, float("inf")),
    "out_tokens_per_request": (N_("Output tokens per request"), True, 1, float("inf")),
    "gpus_per_replica": (N_("GPUs per replica"), True, 1, float("inf")),
    "traffic_requests_per_day": (N_("Traffic"), False, 0, float("inf")),
    "peak_to_average": (N_("Peak-to-average"), False, 1, float("inf")),
    "target_utilization_pct": (N_("Target utilization"), False, 1e-9, 100),
}


class SensitivityBar(BaseModel):
    """Cost per request with one input lowered and raised."""

    model_config = ConfigDict(frozen=True)

    field: str
    label: str
    low_value: float
    high_value: float
    cost_low: float
    cost_high: float
    base_cost: float

    @property
    def spread(self) -> float:
        return abs(self.cost_high - self.cost_low)


class CurvePoint(BaseModel):
    """Cost per request at one throughput."""

    model_config = ConfigDict(frozen=True)

    output_tok_s: float
    cost_per_request: float
    effective_cost_per_request: float | None


def _cost(inputs: TcoInputs) -> float:
    """Effective cost per request (idle capacity paid for) when there is traffic, else the full-load cost."""
    cap = capacity_of(inputs)
    fl = fleet_of(inputs, cap)
    return fl.effective_cost_per_request if fl.effective_cost_per_request is not None else cap.cost_per_request


def _swung(inputs: TcoInputs, field: str, factor: float) -> tuple[TcoInputs, float]:
    _, integer, low, high = _SWUNG[field]
    value = getattr(inputs, field) * factor
    value = min(max(value, low), high)
    if integer:
        value = max(round(value), int(low))
    return inputs.model_copy(update={field: value}), float(value)


def sensitivity(inputs: TcoInputs, swing: float = DEFAULT_SWING) -> list[SensitivityBar]:
    """Each input at (1 - swing) and (1 + swing), largest effect first."""
    base = _cost(inputs)
    bars = []
    for field, (label, _, _, _) in _SWUNG.items():
        low_inputs, low_value = _swung(inputs, field, 1 - swing)
        high_inputs, high_value = _swung(inputs, field, 1 + swing)
        bars.append(
            SensitivityBar(
                field=field,
                label=label,
                low_value=low_value,
                high_value=high_value,
                cost_low=_cost(low_inputs),
                cost_high=_cost(high_inputs),
                base_cost=base,
            )
        )
    return sorted(bars, key=lambda b: b.spread, reverse=True)


def throughput_curve(inputs: TcoInputs, factors: tuple[float, ...] = THROUGHPUT_CURVE_FACTORS) -> list[CurvePoint]:
    """Cost per request as throughput varies around the entered value."""
    points = []
    for factor in factors:
        tok_s = inputs.output_tok_s_per_replica * factor
        cap = capacity_of(inputs, output_tok_s=tok_s)
        fl = fleet_of(inputs, cap)
        points.append(
            CurvePoint(
                output_tok_s=tok_s,
                cost_per_request=cap.cost_per_request,
                effective_cost_per_request=fl.effective_cost_per_request,
            )
        )
    return points
