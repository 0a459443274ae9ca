"""/compare's orders by kind of token: which figure of an option's by-kind costs each RankBy takes."""

from tco.compare_inputs import RankBy
from tco.tokens import TokenCosts, TokensByKind

# RankBy -> (at the traffic?, the TokenCosts field)
TOKEN_RANKS: dict[RankBy, tuple[bool, str]] = {
    RankBy.INPUT: (False, "input_per_million"),
    RankBy.OUTPUT: (False, "output_per_million"),
    RankBy.BLENDED: (False, "blended_per_million"),
    RankBy.INPUT_AT_TRAFFIC: (True, "input_per_million"),
    RankBy.OUTPUT_AT_TRAFFIC: (True, "output_per_million"),
    RankBy.BLENDED_AT_TRAFFIC: (True, "blended_per_million"),
}


def token_rank_cost(tokens: TokensByKind | None, rank_by: RankBy) -> float:
    """The figure `rank_by` orders by; infinity when there is none (no input tokens, no traffic): ranked last."""
    at_traffic, field = TOKEN_RANKS[rank_by]
    costs: TokenCosts | None = None if tokens is None else (tokens.at_traffic if at_traffic else tokens.full_load)
    value = None if costs is None else getattr(costs, field)
    return float("inf") if value is None else float(value)
