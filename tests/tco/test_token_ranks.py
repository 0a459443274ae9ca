"""/compare's orders by kind of token follow each option's own prefill and decode times, not one shared share."""

import pytest

from tco import estimate
from tco.compare_inputs import CompareInputs, RankBy
from tco.inputs import SplitBasis
from tco.inverse import best_interactivity, cost_per_million_at
from tco.options import RankedOption
from tco.ranking import Ranking, rank, reordered
from tco.token_split import phases_for

# a compute-strong, bandwidth-poor GPU (L40S) against a bandwidth-strong one (A100), long prompts, short answers
RAG = {
    "engines": ("vllm",),
    "counts": (1,),
    "gpu_names": "L40S,A100 80GB SXM",
    "in_tokens": "8000",
    "out_tokens": "200",
}


def _order(ranking: Ranking, rank_by: RankBy) -> list[str]:
    ordered = reordered(ranking, ranking.inputs.model_copy(update={"rank_by": rank_by}))
    return [f"{o.gpu_id}/{o.quant}" for o in ordered.options if o.meets_slo]


def _best(ranking: Ranking, rank_by: RankBy) -> RankedOption:
    return reordered(ranking, ranking.inputs.model_copy(update={"rank_by": rank_by})).options[0]


@pytest.fixture(scope="module")
def rag() -> Ranking:
    return rank(CompareInputs.model_validate(RAG))


def test_by_input_the_compute_strong_gpu_wins_by_output_the_bandwidth_strong_one(rag: Ranking) -> None:
    assert rag.inputs.token_split == SplitBasis.ESTIMATE
    assert _best(rag, RankBy.INPUT).gpu_id == "l40s-48gb"
    assert _best(rag, RankBy.OUTPUT).gpu_id == "a100-80gb-sxm"
    assert _order(rag, RankBy.INPUT) != _order(rag, RankBy.OUTPUT)
    for option in rag.options:
        assert option.tokens is not None and option.tokens.split.basis == SplitBasis.ESTIMATE
        assert option.tokens.split.concurrency == option.concurrency  # read at the option's own operating point


def test_each_options_cost_page_link_carries_the_split_and_prices_the_same(rag: Ranking) -> None:
    for option in rag.options[:3]:
        inputs = option.tco_inputs
        assert inputs.token_split is None and inputs.split_basis == SplitBasis.ESTIMATE  # an estimate's default
        assert inputs.cached_pct == 0
        linked = estimate(inputs, phases=phases_for(inputs)).tokens  # what its /tco link shows
        assert option.tokens is not None
        assert linked.full_load.input_per_million == pytest.approx(option.tokens.full_load.input_per_million)
        assert linked.full_load.output_per_million == pytest.approx(option.tokens.full_load.output_per_million)


def test_with_one_assumed_share_the_input_order_is_the_per_million_order() -> None:
    shared = rank(CompareInputs.model_validate({**RAG, "split": "share"}))
    assert _order(shared, RankBy.INPUT) == _order(shared, RankBy.PER_MILLION)
    option = shared.options[0]
    assert option.tokens is not None and option.tokens.split.basis == SplitBasis.SHARE
    assert option.tco_inputs.token_split == SplitBasis.SHARE  # its /tco link says split=share


def test_a_cached_share_prices_cached_input_and_raises_throughput(rag: Ranking) -> None:
    warm = rank(CompareInputs.model_validate({**RAG, "cached": "50"}))
    cold_by_key = {(o.gpu_id, o.quant): o for o in rag.options}
    for option in warm.options:
        cold = cold_by_key[(option.gpu_id, option.quant)]
        assert option.tokens is not None and option.tokens.cached_share == 0.5
        cached = option.tokens.full_load.cached_input_per_million
        assert cached is not None and 0 < cached < (option.tokens.full_load.input_per_million or 0)
        assert option.tco_inputs.cached_pct == 50
        assert option.output_tok_s >= cold.output_tok_s  # half of each prompt no longer prefilled


def test_the_cost_ceiling_searches_each_options_estimated_load_curve(rag: Ranking) -> None:
    option = next(o for o in rag.options if o.meets_slo and o.concurrency >= 4)
    within = [lv for lv in option.levels if lv.meets_slo]
    assert len(within) > 2, "more loads than one user and the SLO point"
    assert {1, option.concurrency} <= {lv.concurrency for lv in within}
    # a ceiling between one user's cost and the SLO point's lands on a load in between, which streams faster than
    # the SLO point and costs less than one user
    one, top = within[0], max(within, key=lambda lv: lv.concurrency)
    middle = sorted(within, key=lambda lv: lv.concurrency)[len(within) // 2]
    price, gpus = option.price_per_gpu_hour, option.gpus_per_replica
    ceiling = cost_per_million_at(middle, price, gpus) * 1.0001
    best = best_interactivity([(option.label, price, gpus, option.levels)], ceiling)
    assert best is not None and 1 < best.concurrency < top.concurrency
    assert best.tok_s_per_user >= middle.tok_s_per_user > top.tok_s_per_user
    assert best.cost_per_million_output_tokens <= ceiling < cost_per_million_at(one, price, gpus)
