"""The advisor's "Separate pools" tab: whether prefill and decode pools could pay, both topologies, the recipes."""

import streamlit as st

from catalog import find_gpu
from perf import PerfError, request_from_advice
from perf.disagg import estimate_topology, smallest_replica_gpus
from perf.disagg_frontier import frontier, interference_ratio
from perf.inputs import ENGINE_FAMILIES, Slo
from perf.topology import TopologyEstimate, TopologyOptions
from selector import Advice, AdviceRequest
from selector.disagg import recipes, verdict, xpyd
from selector.rules import load_rules
from tco.compare_inputs import CompareInputs
from tco.disagg_figures import frontier_figure
from tco.disagg_options import pool_reach
from ui.lang import _, lang_param, language
from ui.params import to_params


def disagg_tab(asked: AdviceRequest, advice: Advice) -> None:
    """The rules that apply, and when two pools could pay: both topologies estimated and the launch recipes."""
    gpu = find_gpu(advice.gpu_id)
    estimable = advice.engine in ENGINE_FAMILIES
    request = request_from_advice(asked, advice.engine, advice.quantization) if estimable else None
    copy_gpus = advice.memory.split
    try:
        interference = interference_ratio(request) if request is not None else None
        copy_gpus = smallest_replica_gpus(request) if request is not None else copy_gpus
    except PerfError:
        interference = None
    found = verdict(
        model=advice.model,
        input_tokens=asked.in_tokens_per_request,
        tpot_ms=Slo().tpot_p50_ms,
        gpus=asked.gpus,
        copy_gpus=copy_gpus,
        gpus_per_node=gpu.nvlink_domain,
        interference_ratio=interference,
        language=language(),
    )
    for reason in found.reasons:
        (st.success if reason.pays else st.info)(reason.text)
        st.caption(_("Rule `{rule_id}` · Source: {source}").format(rule_id=reason.id, source=reason.source))
    if not found.could_pay:
        if not found.reasons:
            st.info(_("No rule says separate prefill and decode pools would pay here: one pool serves it."))
        if estimable and pool_reach(advice.model, copy_gpus) > asked.gpus:
            _over_nodes(asked, advice)
        return
    if request is None:
        st.info(
            _("No estimate for {engine}: the two-pool estimate covers the engines with a step-time model.").format(
                engine=advice.engine_name
            )
        )
        return
    try:
        result = estimate_topology(request, TopologyOptions(topology="best", total_gpus=asked.gpus))
    except PerfError as exc:
        st.info(_("No two-pool estimate: {error}").format(error=str(exc)))
        return
    pair = [result.chosen, *([result.alternative] if result.alternative else [])]
    one = next((t for t in pair if t.topology == "agg"), None)
    two = next((t for t in pair if t.topology == "disagg"), None)
    if one is None or two is None:
        return
    _both(one, two)
    st.plotly_chart(
        frontier_figure(frontier(request, TopologyOptions(total_gpus=asked.gpus)), _), key="selector.disagg.frontier"
    )
    if two.meets_slo:
        _recipes(advice, two)


def _over_nodes(asked: AdviceRequest, advice: Advice) -> None:
    """A mixture of experts that needs a whole node: its separate pools span nodes, which /compare prices."""
    st.info(
        _(
            "{model} needs a whole node of {gpu}: separate pools pay for it over several nodes, each pool replica "
            "up to {nodes} nodes with wide expert parallelism (attention data parallel, experts over every GPU). "
            "The cost comparison estimates and prices that layout."
        ).format(
            model=advice.model.name,
            gpu=advice.gpu_name,
            nodes=load_rules().disaggregation.moe_pool_max_nodes,
        )
    )
    inputs = CompareInputs.model_validate(
        {
            "model": advice.model_id,
            "gpu_names": (advice.gpu_id,),
            "engines": (advice.engine,),
            "in_tokens_per_request": asked.in_tokens_per_request,
            "out_tokens_per_request": asked.out_tokens_per_request,
            "traffic_requests_per_day": asked.traffic_requests_per_day,
        }
    )
    st.page_link(
        "views/compare.py",
        label=_("Compare one pool and separate pools over nodes"),
        icon=":material/leaderboard:",
        query_params={**to_params(inputs), **lang_param()},
    )


def _both(one: TopologyEstimate, two: TopologyEstimate) -> None:
    cols = st.columns(3)
    cols[0].metric(_("One pool: tok/s per GPU (estimate)"), f"{one.output_tok_s_per_gpu:,.0f}")
    cols[1].metric(_("Two pools: tok/s per GPU (estimate)"), f"{two.output_tok_s_per_gpu:,.0f}")
    if one.output_tok_s_per_gpu > 0 and two.meets_slo:
        gain = two.output_tok_s_per_gpu / one.output_tok_s_per_gpu - 1
        cols[2].metric(_("Estimated gain of two pools"), f"{gain:+.0%}")
    else:
        cols[2].metric(_("Estimated gain of two pools"), "—")
    if two.meets_slo:
        layout = xpyd(
            two.prefill.replicas, two.prefill.gpus_per_replica, two.decode.replicas, two.decode.gpus_per_replica
        )
        st.markdown(
            _(
                "**Two pools:** {layout}; TTFT p50 {ttft:,.0f} ms (KV handoff {kv:.1f} ms over {link}), TPOT p50 "
                "{tpot:.1f} ms."
            ).format(layout=layout, ttft=two.ttft_ms.p50, kv=two.kv_transfer_ms, link=two.link, tpot=two.tpot_ms.p50)
        )
    else:
        st.warning(_("Two pools meet the SLO at no load the estimate found."))
    st.caption(_("Basis: {basis}").format(basis=two.basis.worded(_)))


def _recipes(advice: Advice, two: TopologyEstimate) -> None:
    repo = advice.model.fp8_repo if advice.quantization == "fp8" else ""
    prefill = (two.prefill.replicas, two.prefill.gpus_per_replica)
    decode = (two.decode.replicas, two.decode.gpus_per_replica)
    for recipe in recipes(advice.model, repo, prefill, decode):
        with st.expander(_(recipe.title)):
            for name, content in recipe.files.items():
                st.caption(name)
                st.code(content, language="yaml")
            st.code("\n\n".join(recipe.commands), language="bash")
            st.caption(_("Flags checked against: {what}").format(what=recipe.checked_against))
