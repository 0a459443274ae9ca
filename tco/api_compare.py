"""Hosted APIs against self-hosting at the page's traffic, and the monthly volume from which self-hosting wins."""

import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from catalog.api_prices import API_PRICES_CSV, api_prices_for
from catalog.units import PCT, TOKENS_PER_MILLION
from tco.cost import SECONDS_PER_HOUR, Capacity, Fleet
from tco.inputs import TcoInputs
from tco.money import Currency, convert

_TOLERANCE = 1e-9


class ApiOption(BaseModel):
    """One hosted API priced at the page's traffic, amounts in the page's currency."""

    model_config = ConfigDict(frozen=True)

    provider: str
    api_model: str
    relation: str
    input_per_million: float
    cached_input_per_million: float | None
    output_per_million: float
    cost_per_request: float
    cost_per_month: float
    break_even_requests_per_month: float | None
    snapshot_date: str


class ApiComparison(BaseModel):
    """Every API entry of the model, the self-hosted fleet's month, and the cheapest API of the same model."""

    model_config = ConfigDict(frozen=True)

    options: list[ApiOption]
    self_hosted_per_month: float
    requests_per_month: float
    tokens_per_request: int

    @property
    def cheapest_same(self) -> ApiOption | None:
        same = [o for o in self.options if o.relation == "same"]
        return min(same, key=lambda o: o.cost_per_month) if same else None


def api_cost_per_request(
    in_tokens: int, out_tokens: int, cached_share: float, input_pm: float, cached_pm: float | None, output_pm: float
) -> float:
    """(uncached input x its price + cached input x the cached price + output x its price) / 10^6.

    An API without a cached-input price bills cached tokens as input.
    """
    cached = in_tokens * cached_share
    cached_price = input_pm if cached_pm is None else cached_pm
    return ((in_tokens - cached) * input_pm + cached * cached_price + out_tokens * output_pm) / TOKENS_PER_MILLION


def break_even_requests_per_month(
    replica_per_month: float,
    requests_per_s_per_replica: float,
    target_utilization: float,
    peak_to_average: float,
    hours_per_month: float,
    api_per_request: float,
) -> float | None:
    """The monthly requests from which self-hosting costs less than the API and stays so (None: never).

    Self-hosting costs ceil(V x k) replicas x C a month (k = peak / (hours x 3600 x rps x utilization)), at least one
    replica; the API costs V x a. Just after the n-th replica is added self-hosting is cheaper only when
    (n + 1) C <= a n / k, so the last crossing is at (n1 + 1) C / a with n1 the last n that fails.
    """
    cost, slope = replica_per_month, api_per_request
    k = peak_to_average / (hours_per_month * SECONDS_PER_HOUR * requests_per_s_per_replica * target_utilization)
    if slope <= cost * k * (1 + _TOLERANCE):
        return None
    ratio = cost * k / (slope - cost * k)
    last_failing = max(0, math.ceil(ratio - _TOLERANCE) - 1)
    return (last_failing + 1) * cost / slope


def compare_apis(inputs: TcoInputs, cap: Capacity, fleet: Fleet, prices_csv: Path = API_PRICES_CSV) -> ApiComparison:
    """Price each API entry of the inputs' model at the inputs' traffic beside the self-hosted fleet."""
    cached_share = (inputs.cached_pct if inputs.api_cached_pct is None else inputs.api_cached_pct) / PCT
    options = []
    for link, price in api_prices_for(inputs.model, prices_csv):

        def here(usd: float) -> float:
            return convert(usd, Currency.USD, inputs.currency, inputs.cny_per_usd)

        cached_pm = None if price.cached_input_per_million_usd is None else here(price.cached_input_per_million_usd)
        input_pm, output_pm = here(price.input_per_million_usd), here(price.output_per_million_usd)
        per_request = api_cost_per_request(
            inputs.in_tokens_per_request, inputs.out_tokens_per_request, cached_share, input_pm, cached_pm, output_pm
        )
        options.append(
            ApiOption(
                provider=price.provider,
                api_model=price.api_model,
                relation=link.relation,
                input_per_million=input_pm,
                cached_input_per_million=cached_pm,
                output_per_million=output_pm,
                cost_per_request=per_request,
                cost_per_month=per_request * fleet.requests_per_month,
                break_even_requests_per_month=break_even_requests_per_month(
                    cap.cost_per_replica_month,
                    cap.requests_per_s,
                    inputs.target_utilization,
                    inputs.peak_to_average,
                    inputs.hours_per_month,
                    per_request,
                ),
                snapshot_date=price.source_snapshot,
            )
        )
    return ApiComparison(
        options=options,
        self_hosted_per_month=fleet.fleet_cost_per_month,
        requests_per_month=fleet.requests_per_month,
        tokens_per_request=inputs.total_tokens_per_request,
    )
