"""/compare's disaggregated twins: ranked beside the one-pool options, marked, with their pools, only where they pay."""

from tco.compare_inputs import CompareInputs
from tco.ranking import rank

LONG_TIGHT = {
    "model": "qwen3-32b",
    "gpu_names": ("h200-141gb-sxm",),
    "engines": ("tensorrt-llm",),
    "counts": (4,),
    "in_tokens_per_request": 4000,
    "out_tokens_per_request": 500,
    "ttft_p50_ms": 300,
    "ttft_p99_ms": 2000,
    "tpot_p50_ms": 10,
}


def test_long_prompts_and_a_tight_tpot_rank_a_marked_disaggregated_option_with_its_pools() -> None:
    ranking = rank(CompareInputs.model_validate(LONG_TIGHT))
    twins = [o for o in ranking.options if o.topology == "disagg"]
    assert 1 <= len(twins) <= 2  # the two cheapest one-pool options get a twin at most (tco/disagg_options.py)
    twin = twins[0]
    one_pool = next(o for o in ranking.options if o.topology == "agg" and o.quant == twin.quant)
    assert "disaggregated" in twin.label and "P" in twin.pools and "D" in twin.pools
    assert twin.basis_kind == "extrapolated" and twin.meets_slo
    assert twin.tpot_p50_ms <= 10 and twin.ttft_p50_ms <= 300
    assert twin.tco_inputs.gpus_per_replica == twin.gpus_per_replica  # its /tco link carries the whole xPyD unit
    per_gpu_twin = twin.output_tok_s / twin.gpus_per_replica
    per_gpu_one = one_pool.output_tok_s / one_pool.gpus_per_replica
    assert per_gpu_twin > per_gpu_one
    assert twin.tco_inputs.output_tok_s_per_replica == twin.output_tok_s
    assert twin.cost_per_million_output_tokens < one_pool.cost_per_million_output_tokens
    assert [o.rank for o in ranking.options] == list(range(1, len(ranking.options) + 1))


def test_short_prompts_get_no_disaggregated_option() -> None:
    ranking = rank(CompareInputs.model_validate({**LONG_TIGHT, "in_tokens_per_request": 200}))
    assert ranking.options and all(o.topology == "agg" for o in ranking.options)


def test_frontier_figure_draws_one_line_per_topology_ordered_by_speed_per_user() -> None:
    from perf.disagg_frontier import FrontierPoint
    from tco.disagg_figures import frontier_figure

    points = [
        FrontierPoint(topology="disagg", tpot_limit_ms=20, tok_s_per_user=50, output_tok_s_per_gpu=900),
        FrontierPoint(topology="disagg", tpot_limit_ms=10, tok_s_per_user=100, output_tok_s_per_gpu=600),
        FrontierPoint(topology="agg", tpot_limit_ms=10, tok_s_per_user=102, output_tok_s_per_gpu=350),
    ]
    fig = frontier_figure(points)
    names = [t.name for t in fig.data]
    assert names == ["one pool (estimate)", "prefill and decode pools (estimate, extrapolated)"]
    assert list(fig.data[1].x) == [50, 100] and list(fig.data[1].y) == [900, 600]
    assert fig.layout.xaxis.title.text == "tokens/s per user"


def test_a_mixture_of_experts_that_needs_a_whole_node_is_ranked_as_pools_over_several_nodes() -> None:
    """DeepSeek-R1 on H20s: the cheapest option is wide expert parallelism in separate pools, not one node's copy.

    With a 2 s TTFT limit. At the handbook's 300 ms the twin is 4P1D of one-node replicas and costs more than one
    pool: each prefill replica takes its users' first wave of 1,500-token prompts at once
    (perf.levels.prompts_in_step), and a 37-billion-active-parameter model on H20s prefills them slowly.
    """
    inputs = {
        "model": "deepseek-r1",
        "gpu_names": ("h20-96gb",),
        "engines": ("vllm",),
        "counts": (8,),
        "in_tokens_per_request": 1500,
        "out_tokens_per_request": 300,
        "ttft_p50_ms": 2000,
        "ttft_p99_ms": 10000,
    }
    ranking = rank(CompareInputs.model_validate(inputs))
    twin = next(o for o in ranking.options if o.topology == "disagg")
    one_pool = next(o for o in ranking.options if o.topology == "agg" and o.quant == twin.quant)
    widest = max(int(part.split(" GPU")[0]) for part in twin.pools.split(" x ")[1:])
    assert widest > one_pool.gpus_per_replica == 8  # a pool replica spans nodes
    assert twin.gpus_per_replica > 8 and twin.tco_inputs.gpus_per_replica == twin.gpus_per_replica
    assert twin.meets_slo and twin.basis_kind == "extrapolated"
    assert twin.cost_per_million_output_tokens < one_pool.cost_per_million_output_tokens
    assert ranking.options[0] == twin
    twins = [o for o in ranking.options if o.topology == "disagg"]
    assert len({(o.gpu_id, o.engine) for o in twins}) == len(twins)  # not AWQ and GPTQ of one deployment twice


def test_a_twin_tried_that_meets_no_slo_is_listed_with_why() -> None:
    """8,000-token prompts of DeepSeek-R1 on H20s within 1 s: one pool meets it, no two-pool layout does; the page
    says so among what it left out."""
    inputs = {
        "model": "deepseek-r1",
        "gpu_names": ("h20-96gb",),
        "engines": ("vllm",),
        "counts": (8,),
        "in_tokens_per_request": 8000,
        "out_tokens_per_request": 300,
        "ttft_p50_ms": 1000,
        "ttft_p99_ms": 3000,
    }
    ranking = rank(CompareInputs.model_validate(inputs))
    assert ranking.meeting and not [o for o in ranking.options if o.topology == "disagg"]
    reason = "separate prefill and decode pools of H20 96GB: no layout tried meets the SLO"
    assert ranking.skipped.get(reason, 0) >= 1
