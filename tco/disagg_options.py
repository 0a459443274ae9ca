"""/compare's disaggregated options: the cheapest one-pool options re-estimated as prefill and decode pools, priced.

Only the `DISAGG_TWINS` cheapest options that meet the SLO, and only where the advisor's rules say separate pools
could pay (selector/disagg.py), get a twin: the two-pool estimate simulates several replica sizes, so doing it for
every option would break the page's speed budget (docs/performance.md). A twin is one xPyD unit, marked
`topology = disagg`, its basis extrapolated. Its pool replicas reach the one-pool copy's GPUs; for a mixture of
experts whose copy needs a whole node they reach several nodes (rules.toml [disaggregation] moe_pool_max_nodes),
laid out with wide expert parallelism as the large DeepSeek deployments are (perf.resolve.copy_layout).
"""

from functools import lru_cache

from catalog import find_gpu, find_model
from catalog.models import ModelSpec
from i18n import N_
from perf import PerfError, Slo, request_from_advice
from perf.disagg import disaggregated
from perf.resolve import node_gpus
from perf.topology import TopologyEstimate, TopologyOptions
from selector import AdviceRequest
from selector.disagg import verdict, xpyd
from selector.rules import load_rules
from tco.compare_inputs import CompareInputs
from tco.cost import capacity_of, fleet_of
from tco.inputs import TcoInputs
from tco.options import RankedOption, left_out
from tco.tokens import tokens_by_kind

DISAGG_TWINS = 2
"""How many of the cheapest SLO-meeting one-pool options get a disaggregated twin."""


def pool_reach(model: ModelSpec, split: int) -> int:
    """The widest pool replica a twin tries: the one-pool copy's GPUs, or several nodes for a whole-node MoE."""
    if model.is_moe and split >= node_gpus():
        return node_gpus() * load_rules().disaggregation.moe_pool_max_nodes
    return split


@lru_cache(maxsize=256)
def _split(option_key: tuple[str, int, str, str, str], in_tokens: int, out_tokens: int, slo: Slo) -> TopologyEstimate:
    gpu_id, split, engine, quant, model = option_key
    gpu = find_gpu(gpu_id)
    reach = pool_reach(find_model(model), split)
    request = request_from_advice(
        _advice(gpu_id, split, model, engine, quant, in_tokens, out_tokens), engine, quant, slo=slo
    ).model_copy(update={"gpus": reach})
    return disaggregated(request, TopologyOptions(topology="disagg", total_gpus=max(gpu.nvlink_domain, 2 * reach)))


def _advice(gpu: str, gpus: int, model: str, engine: str, quant: str, in_tokens: int, out_tokens: int) -> AdviceRequest:
    return AdviceRequest(
        gpu=gpu,
        gpus=gpus,
        model=model,
        engine=engine,
        quant=quant,
        concurrency=1,
        in_tokens_per_request=in_tokens,
        out_tokens_per_request=out_tokens,
    )


def twin(inputs: CompareInputs, option: RankedOption) -> RankedOption | str | None:
    """The option as separate prefill and decode pools, priced per xPyD unit.

    None where the advisor's rules say two pools could not pay (nothing tried); a reason for `Ranking.skipped`
    where they were tried and no layout met the SLO, or none could be estimated.
    """
    model = find_model(inputs.model)
    gpu = find_gpu(option.gpu_id)
    reach = pool_reach(model, option.gpus_per_replica)
    wide = 2 * reach if reach > option.gpus_per_replica else 0  # pools over several nodes: the unit's GPUs
    found = verdict(
        model=model,
        input_tokens=inputs.in_tokens_per_request,
        tpot_ms=inputs.slo.tpot_p50_ms,
        gpus=max(option.total_gpus, gpu.nvlink_domain, wide),
        copy_gpus=option.gpus_per_replica,
        gpus_per_node=gpu.nvlink_domain,
    )
    if not found.could_pay:
        return None
    key = (option.gpu_id, option.gpus_per_replica, option.engine, option.quant, inputs.model)
    try:
        split = _split(key, inputs.in_tokens_per_request, inputs.out_tokens_per_request, inputs.slo)
    except PerfError:
        return left_out(
            N_("separate prefill and decode pools of {gpu}: no layout tried could be estimated"), gpu=gpu.name
        )
    if not split.meets_slo:
        return left_out(N_("separate prefill and decode pools of {gpu}: no layout tried meets the SLO"), gpu=gpu.name)
    return _priced(option, split)


def _priced(option: RankedOption, split: TopologyEstimate) -> RankedOption:
    """The one-pool option made its two-pool twin: one xPyD unit, its figures, bands and basis, priced."""
    pools = xpyd(
        split.prefill.replicas, split.prefill.gpus_per_replica, split.decode.replicas, split.decode.gpus_per_replica
    )
    link = option.tco_inputs.model_dump(by_alias=True)
    tco_inputs = TcoInputs.model_validate(
        {**link, "gpus": split.gpus_used, "tps": split.output_tok_s, "topology": "disagg", "pools": pools}
    )
    cap = capacity_of(tco_inputs)
    fleet = fleet_of(tco_inputs, cap)
    return option.model_copy(
        update={
            "topology": "disagg",
            "pools": pools,
            "gpus_per_replica": split.gpus_used,
            "replicas": fleet.replicas,
            "total_gpus": fleet.gpus,
            "ttft_p50_ms": split.ttft_ms.p50,
            "ttft_p99_ms": split.ttft_ms.p99,
            "tpot_p50_ms": split.tpot_ms.p50,
            "output_tok_s": split.output_tok_s,
            "band": split.bands["output_tok_s"],
            "bands": dict(split.bands),
            "band_low": split.bands["output_tok_s"].low_ratio,
            "band_high": split.bands["output_tok_s"].high_ratio,
            "band_group": split.bands["output_tok_s"].group,
            "basis_kind": split.basis.kind,
            "basis_text": split.basis.text,
            "basis": split.basis,
            "cost_per_million_output_tokens": cap.cost_per_million_output_tokens,
            "fleet_cost_per_month": fleet.fleet_cost_per_month,
            "meets_slo": True,
            "tco_inputs": tco_inputs,
            "tokens": tokens_by_kind(tco_inputs, cap, fleet),
            "levels": (),
        }
    )


def twins(inputs: CompareInputs, ranked: tuple[RankedOption, ...]) -> tuple[list[RankedOption], list[str]]:
    """Disaggregated twins of the cheapest SLO-meeting options (in ranked order), where two pools could pay.

    One twin per GPU, count and engine: two formats of one deployment that estimate alike (AWQ and GPTQ) would
    spend the second twin on the same unit, so the next cheapest deployment gets it instead. Also the reasons of
    the twins tried and not made, for the page's list of what was left out.
    """
    out: list[RankedOption] = []
    reasons: list[str] = []
    seen: set[tuple[str, int, str]] = set()
    for option in (o for o in ranked if o.meets_slo):
        deployment = (option.gpu_id, option.gpus_per_replica, option.engine)
        if len(seen) == DISAGG_TWINS:
            break
        if deployment in seen:
            continue
        seen.add(deployment)
        found = twin(inputs, option)
        if isinstance(found, str):
            reasons.append(found)
        elif found is not None:
            out.append(found)
    return out, reasons
