"""The handbook's cost arithmetic (section 2.4): one replica's capacity and cost, and the fleet a traffic needs."""

import math

from pydantic import BaseModel, ConfigDict

from catalog.units import TOKENS_PER_MILLION
from tco.inputs import TcoInputs

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
HOURS_PER_DAY = 24.0
MONTHS_PER_YEAR = 12
_CEIL_TOLERANCE = 1e-9


class Capacity(BaseModel):
    """What one replica does and costs at full load."""

    model_config = ConfigDict(frozen=True)

    seconds_of_output_per_request: float
    requests_per_s: float
    requests_per_day: float
    cost_per_replica_hour: float
    cost_per_request: float
    cost_per_million_output_tokens: float
    cost_per_million_total_tokens: float
    cost_per_replica_month: float
    cost_per_replica_year: float
    output_tok_s_per_gpu: float


class Fleet(BaseModel):
    """The replicas a traffic needs at its peak, and what idle capacity costs."""

    model_config = ConfigDict(frozen=True)

    average_requests_per_s: float
    peak_requests_per_s: float
    replicas: int
    gpus: int
    fleet_cost_per_month: float
    fleet_cost_per_year: float
    requests_per_month: float
    utilization_at_average: float | None
    effective_cost_per_request: float | None


def capacity(
    output_tok_s: float, out_tokens: int, in_tokens: int, price_per_gpu_hour: float, gpus: int, hours_per_month: float
) -> Capacity:
    """One replica at full load: the handbook's 588 tok/s / 200 tokens -> 2.94 req/s -> 0.0014 CNY per request."""
    requests_per_s = output_tok_s / out_tokens
    replica_hour = price_per_gpu_hour * gpus
    cost_per_request = replica_hour / (requests_per_s * SECONDS_PER_HOUR)
    return Capacity(
        seconds_of_output_per_request=out_tokens / output_tok_s,
        requests_per_s=requests_per_s,
        requests_per_day=requests_per_s * SECONDS_PER_DAY,
        cost_per_replica_hour=replica_hour,
        cost_per_request=cost_per_request,
        cost_per_million_output_tokens=replica_hour / (output_tok_s * SECONDS_PER_HOUR) * TOKENS_PER_MILLION,
        cost_per_million_total_tokens=cost_per_request / (in_tokens + out_tokens) * TOKENS_PER_MILLION,
        cost_per_replica_month=replica_hour * hours_per_month,
        cost_per_replica_year=replica_hour * hours_per_month * MONTHS_PER_YEAR,
        output_tok_s_per_gpu=output_tok_s / gpus,
    )


def fleet(
    cap: Capacity,
    traffic_requests_per_day: float,
    peak_to_average: float,
    target_utilization: float,
    gpus_per_replica: int,
    hours_per_month: float,
) -> Fleet:
    """Size for the peak at the target utilization; the average then sets how much of what is paid for is used."""
    average = traffic_requests_per_day / SECONDS_PER_DAY
    peak = average * peak_to_average
    usable_per_replica = cap.requests_per_s * target_utilization
    replicas = math.ceil(peak / usable_per_replica - _CEIL_TOLERANCE) if peak > 0 else 0
    month = replicas * cap.cost_per_replica_month
    requests_per_month = traffic_requests_per_day * hours_per_month / HOURS_PER_DAY
    return Fleet(
        average_requests_per_s=average,
        peak_requests_per_s=peak,
        replicas=replicas,
        gpus=replicas * gpus_per_replica,
        fleet_cost_per_month=month,
        fleet_cost_per_year=month * MONTHS_PER_YEAR,
        requests_per_month=requests_per_month,
        utilization_at_average=average / (replicas * cap.requests_per_s) if replicas else None,
        effective_cost_per_request=month / requests_per_month if requests_per_month > 0 else None,
    )


def capacity_of(
    inputs: TcoInputs, output_tok_s: float | None = None, price_per_gpu_hour: float | None = None
) -> Capacity:
    """Capacity for the inputs, optionally with throughput or price replaced (as a lever does)."""
    return capacity(
        output_tok_s if output_tok_s is not None else inputs.output_tok_s_per_replica,
        inputs.out_tokens_per_request,
        inputs.in_tokens_per_request,
        price_per_gpu_hour if price_per_gpu_hour is not None else inputs.price_per_gpu_hour,
        inputs.gpus_per_replica,
        inputs.hours_per_month,
    )


def fleet_of(inputs: TcoInputs, cap: Capacity) -> Fleet:
    """The fleet the inputs' traffic needs with this capacity."""
    return fleet(
        cap,
        inputs.traffic_requests_per_day,
        inputs.peak_to_average,
        inputs.target_utilization,
        inputs.gpus_per_replica,
        inputs.hours_per_month,
    )
