"""The advisor's entry point: advise(request) -> Advice, every decision with its rule, reason and source.

One run resolves the request into an AdviceContext, then asks, in order, for the engine (engine_choice), the
weight format (quant_choice), the serving features (serving), the layout (layout) and the launch commands.
"""

from dataclasses import dataclass
from functools import lru_cache

from catalog.engines import ServingEngine, gpu_platform
from catalog.kvcache import eight_bit_kv
from catalog.quantization import get_quant
from i18n import DEFAULT_LANGUAGE, Language
from selector.advice import Advice
from selector.context import AdviceContext, yn
from selector.engine_choice import choose_engine
from selector.inputs import AdviceRequest
from selector.launch import LaunchCommand, Plan, launch_command
from selector.layout import memory_decision, multi_node, parallel_decisions, suggestions
from selector.memory import Layout, MemoryFit, fit_layout
from selector.quant_choice import choose_quant, fit_quant
from selector.serving import (
    batching_decision,
    caching_decisions,
    choose_kv,
    offload_decision,
    paging_decision,
    speculative_decision,
)
from selector.speculative import Speculative, decide_speculative


@dataclass(frozen=True)
class _Choices:
    """What the steps chose, before the launch commands are written."""

    engine: ServingEngine
    runner: ServingEngine
    switch_when: str
    quant: str
    kv: str
    memory: MemoryFit
    offload_gb: int | None
    speculative: Speculative
    max_num_seqs: int
    batched_tokens: int


def _choose(ctx: AdviceContext) -> _Choices:
    """Every decision, in the order the advice lists them."""
    engine, runner, switch_when = choose_engine(ctx)
    quant, pinned = choose_quant(ctx, engine)
    quant = fit_quant(ctx, engine, quant, "auto", pinned=pinned)
    kv = choose_kv(ctx, engine, quant)
    result = multi_node(ctx, engine, quant, kv, ctx.fit(engine, quant, kv))
    offload_gb = offload_decision(ctx, engine, result)
    result = result.model_copy(update={"suggestions": tuple(suggestions(ctx, engine, quant, kv, result))})
    memory_decision(ctx, result)
    parallel_decisions(ctx, engine, result)
    if result.fits and result.max_concurrent_sequences and engine.id not in ctx.book.paging.engines_without_paging:
        paging_decision(ctx, result.max_concurrent_sequences)
    caching_decisions(ctx, engine)
    spec = speculative_decision(ctx, engine)
    max_seqs, batched = batching_decision(ctx)
    return _Choices(engine, runner, switch_when, quant, kv, result, offload_gb, spec, max_seqs, batched)


def _launches(ctx: AdviceContext, c: _Choices) -> tuple[LaunchCommand, LaunchCommand | None]:
    """The chosen engine's command, and the runner-up's with the nearest format, KV type and speculation it has."""
    result, per = c.memory, ctx.gpu.devices_per_card  # the engines count devices: two per 910C card
    plan_kwargs = {
        "model": ctx.model,
        "split": result.split * per,
        "replicas": result.replicas,
        "tensor_parallel": result.tensor_parallel * per,
        "pipeline_parallel": result.pipeline_parallel,
        "expert_parallel": result.expert_parallel,
        "attention_data_parallel": result.attention_data_parallel,
        "nodes": result.nodes,
        "gpus_per_node": result.gpus_per_node * per,
        "gpu_offload": ctx.gpu.kind != "cpu",
        "platform": gpu_platform(ctx.gpu),
        "devices_per_card": ctx.gpu.devices_per_card,
        "context": ctx.context_tokens,
        "max_num_seqs": c.max_num_seqs,
        "batched_tokens": c.batched_tokens,
        "slots": max(1, min(ctx.request.concurrency, result.max_concurrent_sequences)),
        "language": ctx.language,
    }
    launch = launch_command(
        Plan(
            engine=c.engine,
            quant=c.quant,
            kv_dtype=c.kv,
            speculative=c.speculative,
            offload_gb=c.offload_gb,
            **plan_kwargs,
        )
    )
    runner = c.runner
    if runner.id == c.engine.id:
        return launch, None
    runner_quant = c.quant if c.quant in runner.quant_methods else runner.quant_methods[0]
    runner_kv = c.kv if c.kv in {"auto", eight_bit_kv(runner)} else (eight_bit_kv(runner) or "auto")
    runner_facts = ctx.facts(engine_has_spec=yn(bool(runner.spec_methods)))
    runner_spec = decide_speculative(ctx.model, runner, runner_facts, ctx.language)
    runner_launch = launch_command(
        Plan(engine=runner, quant=runner_quant, kv_dtype=runner_kv, speculative=runner_spec, **plan_kwargs)
    )
    return launch, _without_room(ctx, c.memory, runner, runner_quant, runner_kv, runner_launch)


def _without_room(
    ctx: AdviceContext, chosen: MemoryFit, engine: ServingEngine, quant: str, kv: str, launch: LaunchCommand
) -> LaunchCommand:
    """The runner-up's command, warned when its engine's own memory share leaves the model no room in its layout.

    The layout is the chosen engine's; another engine sizes its KV cache its own way (catalog/data/engines.csv), so
    TensorRT-LLM's fit on one H100 can leave vLLM's command without room to start.
    """
    layout = Layout(
        tensor_parallel=chosen.tensor_parallel,
        pipeline_parallel=chosen.pipeline_parallel,
        replicas=chosen.replicas,
        expert_parallel=chosen.expert_parallel,
        attention_data_parallel=chosen.attention_data_parallel,
    )
    runner = fit_layout(
        ctx.model,
        ctx.gpu,
        layout,
        split_kind=engine.split,
        quant=quant,
        kv_dtype=kv,
        context=ctx.context_tokens,
        concurrency=ctx.request.concurrency,
        nodes=chosen.nodes,
        policy=ctx.policy(engine),
    )
    if runner.fits:
        return launch
    warning = ctx.tr(
        "{model} in {method} leaves no room for the KV cache on {gpus}x {gpu} at {engine}'s default memory share: "
        "this command would not start as it is."
    ).format(
        model=ctx.model.name,
        method=get_quant(quant).name,
        gpus=chosen.gpus,
        gpu=ctx.gpu.name,
        engine=engine.name,
    )
    return launch.model_copy(update={"warnings": (*launch.warnings, warning)})


def _notes(ctx: AdviceContext, c: _Choices, launch: LaunchCommand, runner_launch: LaunchCommand | None) -> None:
    """The commands' warnings, the engines' notes against the handbook, and an engine that is not active."""
    for warning in launch.warnings:
        if warning not in ctx.journal.warnings:
            ctx.warn(warning)
    if runner_launch is not None:
        for warning in runner_launch.warnings:
            ctx.warn(ctx.tr("Runner-up ({engine}): {warning}").format(engine=c.runner.name, warning=warning))
    for item in (c.engine, c.runner):
        today = item.text("today_vs_handbook", ctx.language)
        if today and today not in ctx.journal.today:
            ctx.journal.today.append(today)
    if c.engine.lifecycle != "active":
        status = c.engine.text("status", ctx.language)
        ctx.warn(ctx.tr("{engine} is {status}.").format(engine=c.engine.name, status=status))


def _advice(ctx: AdviceContext, c: _Choices, launch: LaunchCommand, runner_launch: LaunchCommand | None) -> Advice:
    return Advice(
        request=ctx.request,
        gpu_id=ctx.gpu.id,
        gpu_name=ctx.gpu.name,
        model_id=ctx.model.id,
        model_name=ctx.model.name,
        engine=c.engine.id,
        engine_name=c.engine.name,
        runner_up=c.runner.id,
        runner_up_name=c.runner.name,
        switch_when=c.switch_when,
        quantization=c.quant,
        quantization_name=get_quant(c.quant).name,
        kv_cache_dtype=c.kv,
        prefix_caching=True,
        chunked_prefill=c.engine.split == "tensor",
        kv_offload_gb=c.offload_gb,
        max_num_seqs=c.max_num_seqs,
        max_num_batched_tokens=c.batched_tokens,
        speculative=c.speculative,
        memory=c.memory,
        model=ctx.model,
        launch=launch,
        runner_up_launch=runner_launch,
        reasons=tuple(ctx.journal.decisions),
        today_vs_handbook=tuple(ctx.journal.today),
        warnings=tuple(ctx.journal.warnings),
    )


def advise(request: AdviceRequest, language: Language = DEFAULT_LANGUAGE) -> Advice:
    """Recommend engine, quantization, KV cache, speculation, memory fit and launch command for one request.

    `language` words the reasons, warnings and suggestions (rules.toml's `_zh` twins and the selector catalog); the
    CLI and its JSON use the default, English.

    Raises SelectorError (or GpuLookupError) for names it cannot resolve; everything else becomes a warning
    in the result, with the nearest valid advice.
    """
    ctx = AdviceContext.start(request, language)
    choices = _choose(ctx)
    launch, runner_launch = _launches(ctx, choices)
    _notes(ctx, choices, launch, runner_launch)
    return _advice(ctx, choices, launch, runner_launch)


def advise_remembered(request: AdviceRequest, language: Language = DEFAULT_LANGUAGE) -> Advice:
    """advise(), remembered per request (its advice is frozen; it reads nothing but its request and the catalog).

    A ranking asks the same request twice per option: the option's check, then perf's layout.
    """
    try:
        hash(request)
    except TypeError:  # a field that cannot be a key (none today): asked afresh
        return advise(request, language)
    return _remembered(request, language)


@lru_cache(maxsize=2048)  # one default /compare ranking asks 1,840; an advice holds about 45 KiB
def _remembered(request: AdviceRequest, language: Language) -> Advice:
    return advise(request, language)
