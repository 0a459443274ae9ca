"""Cost per million tokens by kind: input, cached input, output and blended, at full load and at the traffic.

A replica's GPU time per request is split between its uncached input tokens (prefill), its cached input tokens and
its output tokens (decode) in one of two ways (`SplitBasis`):

- *estimate*: perf's step-time model at the operating point the throughput is for (perf/phases.py): the seconds
  prefill, the cached prefix (its KV read and the attention over it) and decode take per request;
- *share*: the prefill share of GPU time (`prefill_share`, the handbook's implied 68% unless set, the figure the
  prefix-caching lever uses); a cached token then costs no GPU time (its prefill is skipped).

At the traffic, the fleet's monthly cost (idle headroom included) is spread the same way over the tokens actually
served. Method and how it differs from dividing the whole cost by each count: docs/token-costs.md.
"""

from pydantic import BaseModel, ConfigDict

from catalog.units import TOKENS_PER_MILLION
from perf.phases import PhaseSeconds
from tco.cost import Capacity, Fleet
from tco.inputs import SplitBasis, TcoInputs

CACHED_INPUT_GPU_TIME = 0.0  # under an assumed share, a prefix-cache hit skips its prefill: no GPU time on it


class TokenSplit(BaseModel):
    """Shares of one request's GPU time: per token of each kind, and the input's in all."""

    model_config = ConfigDict(frozen=True)

    basis: SplitBasis
    prefill_share: float  # share of the request's GPU time its input tokens take (uncached and cached)
    per_input_token: float | None  # share one uncached input token takes (None: requests carry no uncached input)
    per_cached_token: float | None  # share one cached input token takes (None: requests carry no input)
    per_output_token: float
    concurrency: int | None = None  # the operating point an estimated split is read at


class TokenCosts(BaseModel):
    """Cost per million tokens of each kind, at one load (full load, or the traffic's)."""

    model_config = ConfigDict(frozen=True)

    input_per_million: float | None  # None: requests have no (uncached) input tokens
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
    split: TokenSplit
    cached_share: float = 0.0  # of the input tokens, the share that hits the prefix cache


def prefill_share_of(in_tokens: int, prefill_share: float) -> float:
    """The share of GPU time input tokens take: the given share, or none when requests carry no input."""
    return prefill_share if in_tokens > 0 else 0.0


def assumed_split(in_tokens: int, out_tokens: int, prefill_share: float, cached_share: float = 0.0) -> TokenSplit:
    """The prefill share on the uncached input tokens, the rest on the output tokens; cached tokens cost nothing."""
    share = prefill_share_of(in_tokens, prefill_share)
    uncached = in_tokens * (1 - cached_share)
    return TokenSplit(
        basis=SplitBasis.SHARE,
        prefill_share=share,
        per_input_token=share / uncached if uncached > 0 else None,
        per_cached_token=CACHED_INPUT_GPU_TIME if in_tokens > 0 else None,
        per_output_token=(1 - share) / out_tokens,
    )


def estimated_split(phases: PhaseSeconds) -> TokenSplit:
    """The estimator's seconds per phase as shares of the request's GPU time, per token of each kind."""
    total = phases.total_s
    if total <= 0:  # pragma: no cover - a step always takes time
        raise ValueError("the estimate gives no GPU time per request")
    uncached, ins = phases.uncached_tokens, phases.input_tokens
    return TokenSplit(
        basis=SplitBasis.ESTIMATE,
        prefill_share=(phases.prefill_s + phases.cached_s) / total,
        per_input_token=phases.prefill_s / total / uncached if uncached > 0 else None,
        per_cached_token=phases.cached_s_per_token / total if ins > 0 else None,
        per_output_token=phases.decode_s / total / phases.output_tokens,
        concurrency=phases.concurrency,
    )


def _per_million(cost_per_request: float, share: float | None) -> float | None:
    return None if share is None else cost_per_request * share * TOKENS_PER_MILLION


def split_costs(cost_per_request: float, split: TokenSplit, in_tokens: int, out_tokens: int) -> TokenCosts:
    """One request's cost over its tokens by the split, per million of each kind."""
    return TokenCosts(
        input_per_million=_per_million(cost_per_request, split.per_input_token),
        cached_input_per_million=_per_million(cost_per_request, split.per_cached_token),
        output_per_million=cost_per_request * split.per_output_token * TOKENS_PER_MILLION,
        blended_per_million=cost_per_request / (in_tokens + out_tokens) * TOKENS_PER_MILLION,
    )


def token_costs(cost_per_request: float, in_tokens: int, out_tokens: int, prefill_share: float) -> TokenCosts:
    """Split one request's cost between its input (prefill) and output (decode) tokens by an assumed share.

    The handbook's 0.00142 CNY per request with 500 input and 200 output tokens and a 68% prefill share gives
    0.00142 x 0.68 / 500 x 10^6 = 1.93 CNY per million input tokens and 0.00142 x 0.32 / 200 x 10^6 = 2.27 per
    million output tokens (tests/tco/test_tokens.py works it through).
    """
    return split_costs(cost_per_request, assumed_split(in_tokens, out_tokens, prefill_share), in_tokens, out_tokens)


def tokens_by_kind(inputs: TcoInputs, cap: Capacity, fleet: Fleet, phases: PhaseSeconds | None = None) -> TokensByKind:
    """The by-kind costs of one scenario: one replica at full load, and the fleet the traffic needs.

    `phases` is the estimator's split of the request (tco/token_split.py); without it the prefill share is used.
    """
    ins, outs = inputs.in_tokens_per_request, inputs.out_tokens_per_request
    if phases is None or ins == 0:
        split = assumed_split(ins, outs, inputs.prefill_time_pct / 100, inputs.cached_share)
    else:
        split = estimated_split(phases)
    effective = fleet.effective_cost_per_request
    return TokensByKind(
        prefill_share=split.prefill_share,
        full_load=split_costs(cap.cost_per_request, split, ins, outs),
        at_traffic=None if effective is None else split_costs(effective, split, ins, outs),
        idle_factor=None if effective is None else effective / cap.cost_per_request,
        split=split,
        cached_share=inputs.cached_share,
    )
