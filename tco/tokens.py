"""Cost per million tokens by kind: input, cached input, output and blended, at full load and at the traffic.

A replica's GPU time per request is split between prefill (the input tokens) and decode (the output tokens) by the
prefill share of GPU time (`prefill_share`, the handbook's implied 68% unless set, the same figure the prefix
caching lever uses). A cached input token skips its prefill: it costs no GPU time here (the KV memory it holds is
not priced). At the traffic, the fleet's monthly cost (idle headroom included) is spread the same way over the
tokens actually served. Method and how it differs from dividing the whole cost by each count: docs/token-costs.md.
"""

from pydantic import BaseModel, ConfigDict

from catalog.units import TOKENS_PER_MILLION
from tco.cost import Capacity, Fleet
from tco.inputs import TcoInputs

CACHED_INPUT_GPU_TIME = 0.0  # a prefix-cache hit skips its prefill: no GPU time is attributed to it


class TokenCosts(BaseModel):
    """Cost per million tokens of each kind, at one load (full load, or the traffic's)."""

    model_config = ConfigDict(frozen=True)

    input_per_million: float | None  # None: requests have no input tokens
    cached_input_per_million: float | None
    output_per_million: float
    blended_per_million: float  # every token of a request, at the request's own mix of input and output


class TokensByKind(BaseModel):
    """The by-kind costs at full load and at the traffic, and the split of GPU time they rest on."""

    model_config = ConfigDict(frozen=True)

    prefill_share: float  # share of a request's GPU time attributed to its input tokens
    full_load: TokenCosts
    at_traffic: TokenCosts | None  # None: no traffic (nothing served to divide over)
    idle_factor: float | None  # effective cost per request / cost per request at full load


def prefill_share_of(in_tokens: int, prefill_share: float) -> float:
    """The share of GPU time input tokens take: the given share, or none when requests carry no input."""
    return prefill_share if in_tokens > 0 else 0.0


def token_costs(cost_per_request: float, in_tokens: int, out_tokens: int, prefill_share: float) -> TokenCosts:
    """Split one request's cost between its input (prefill) and output (decode) tokens, per million of each.

    The handbook's 0.00142 CNY per request with 500 input and 200 output tokens and a 68% prefill share gives
    0.00142 x 0.68 / 500 x 10^6 = 1.93 CNY per million input tokens and 0.00142 x 0.32 / 200 x 10^6 = 2.27 per
    million output tokens (tests/tco/test_tokens.py works it through).
    """
    share = prefill_share_of(in_tokens, prefill_share)
    per_input = cost_per_request * share / in_tokens * TOKENS_PER_MILLION if in_tokens > 0 else None
    return TokenCosts(
        input_per_million=per_input,
        cached_input_per_million=None if per_input is None else CACHED_INPUT_GPU_TIME,
        output_per_million=cost_per_request * (1 - share) / out_tokens * TOKENS_PER_MILLION,
        blended_per_million=cost_per_request / (in_tokens + out_tokens) * TOKENS_PER_MILLION,
    )


def tokens_by_kind(inputs: TcoInputs, cap: Capacity, fleet: Fleet) -> TokensByKind:
    """The by-kind costs of one scenario: one replica at full load, and the fleet the traffic needs."""
    share = inputs.prefill_time_pct / 100
    ins, outs = inputs.in_tokens_per_request, inputs.out_tokens_per_request
    effective = fleet.effective_cost_per_request
    return TokensByKind(
        prefill_share=prefill_share_of(ins, share),
        full_load=token_costs(cap.cost_per_request, ins, outs, share),
        at_traffic=None if effective is None else token_costs(effective, ins, outs, share),
        idle_factor=None if effective is None else effective / cap.cost_per_request,
    )
