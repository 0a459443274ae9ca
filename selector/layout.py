"""Layout: how many GPUs and nodes hold the model, what to change when it does not fit, and the parallelism said."""

import functools
import math

from catalog import load_gpus
from catalog.engines import ServingEngine
from catalog.kvcache import eight_bit_kv
from catalog.quantization import get_quant, weights_gb
from selector.context import AdviceContext
from selector.inputs import MIN_CONTEXT_TOKENS
from selector.memory import MemoryFit, min_nodes
from selector.quant_choice import engine_gate
from selector.rules import render


def multi_node(ctx: AdviceContext, engine: ServingEngine, quant: str, kv: str, result: MemoryFit) -> MemoryFit:
    """When no GPU count of one node holds the model, the smallest multi-node layout (said as a decision)."""
    r = ctx.request
    if result.fits or engine.split != "tensor":
        return result
    one_node = ctx.min_gpus(engine, quant, kv, target=False, policy=True)
    if one_node is not None:
        return result
    statement = ctx.book.multi_node
    values: dict[str, object] = {
        **ctx.facts(),
        "method": get_quant(quant).name,
        "max_gpus": ctx.book.limits.max_gpus,
        "max_nodes": ctx.book.limits.max_nodes,
        "weights_gb": weights_gb(ctx.model, quant),
    }
    if not statement.applies(engine.id, ctx.gpu.kind):
        return result
    nodes = min_nodes(
        ctx.model,
        ctx.gpu,
        quant=quant,
        kv_dtype=kv,
        context=ctx.context_tokens,
        concurrency=r.concurrency,
        policy=ctx.policy(engine),
    )
    if nodes is None:
        ctx.decide(
            "parallelism",
            "does not fit on any layout",
            statement,
            values,
            reason=render(statement.text("reason_none", ctx.language), values),
            shown=ctx.tr("does not fit on any layout"),
        )
        return result
    values.update(nodes.model_dump())
    ctx.decide(
        "parallelism",
        f"{nodes.nodes} nodes x {nodes.gpus_per_node} GPUs",
        statement,
        values,
        shown=ctx.tr("{nodes} nodes x {gpus} GPUs").format(nodes=nodes.nodes, gpus=nodes.gpus_per_node),
    )
    ctx.warn(
        ctx.tr(
            "{model} does not fit in one node of {max_gpus}x {gpu}: the advice is for {nodes} nodes ({gpus} "
            "GPUs); the command is the first node's; its notes give the rest."
        ).format(
            model=ctx.model.name,
            max_gpus=ctx.book.limits.max_gpus,
            gpu=ctx.gpu.name,
            nodes=nodes.nodes,
            gpus=nodes.gpus,
        )
    )
    return nodes


def suggestions(ctx: AdviceContext, engine: ServingEngine, quant: str, kv: str, result: MemoryFit) -> list[str]:
    """What would let the target fit: a lighter format, an 8-bit KV cache, more GPUs or nodes, a shorter context."""
    r, out = ctx.request, list[str]()
    if result.meets_concurrency:
        return out
    for option in ctx.book.quantization_fit.fallbacks:
        if (
            option == quant
            or option not in engine.quant_methods
            or not engine_gate(ctx, option, engine).allowed
            or weights_gb(ctx.model, option) >= weights_gb(ctx.model, quant)
        ):
            continue
        alt = ctx.fit(engine, option, kv)
        if alt.fits and (not result.fits or alt.max_concurrent_sequences > result.max_concurrent_sequences):
            out.append(
                ctx.tr("Quantize to {method}: weights {weights_gb:.1f} GB, room for {sequences} sequences.").format(
                    method=get_quant(option).name, weights_gb=alt.weights_gb, sequences=alt.max_concurrent_sequences
                )
            )
            break
    eight = eight_bit_kv(engine)
    if kv == "auto" and eight and result.fits:
        alt = ctx.fit(engine, quant, eight)
        out.append(
            ctx.tr("8-bit KV cache ({dtype}): room for {sequences} sequences instead of {now}.").format(
                dtype=eight, sequences=alt.max_concurrent_sequences, now=result.max_concurrent_sequences
            )
        )
    need = ctx.min_gpus(engine, quant, kv, target=True)
    if need is not None and need > r.gpus:
        out.append(
            ctx.tr("More GPUs: {count}x {gpu} hold {concurrency} sequences of {context} tokens.").format(
                count=need, gpu=ctx.gpu.name, concurrency=r.concurrency, context=ctx.context_tokens
            )
        )
    elif need is None:
        out.extend(_fewest_gpus(ctx, engine, quant, kv, result))
    if result.fits and result.max_concurrent_sequences:
        per_seq = result.kv_budget_gb_per_gpu / max(1, result.max_concurrent_sequences // result.replicas)
        shorter = int(
            result.kv_budget_gb_per_gpu / per_seq * ctx.context_tokens / math.ceil(r.concurrency / result.replicas)
        )
        if shorter >= MIN_CONTEXT_TOKENS:
            out.append(
                ctx.tr("Shorter context: about {tokens} tokens per sequence lets {concurrency} sequences fit.").format(
                    tokens=shorter, concurrency=r.concurrency
                )
            )
    if not result.fits and need is None:
        fits_any = ctx.min_gpus(engine, quant, kv, target=False)
        if fits_any is None:
            ctx.warn(nowhere_message(ctx, engine, quant, kv))
    return out


def _fewest_gpus(ctx: AdviceContext, engine: ServingEngine, quant: str, kv: str, result: MemoryFit) -> list[str]:
    """When no GPU count of one node meets the target: the fewest that hold the model at all, then more nodes."""
    out = list[str]()
    fewest = None if result.fits else ctx.min_gpus(engine, quant, kv, target=False)
    if fewest is not None and fewest > ctx.request.gpus:
        alt = ctx.fit(engine, quant, kv, gpus=fewest)
        if alt.fits:
            out.append(
                ctx.tr(
                    "More GPUs: {count}x {gpu} hold the model, with room for {sequences} of the {concurrency} "
                    "sequences of {context} tokens."
                ).format(
                    count=fewest,
                    gpu=ctx.gpu.name,
                    sequences=alt.max_concurrent_sequences,
                    concurrency=ctx.request.concurrency,
                    context=ctx.context_tokens,
                )
            )
    if result.fits or fewest is not None:
        out.extend(_more_nodes(ctx, engine, quant, kv))
    return out


def _more_nodes(ctx: AdviceContext, engine: ServingEngine, quant: str, kv: str) -> list[str]:
    """The fewest full nodes that hold the target when no GPU count of one node does.

    Empty if none does, or if the engine's multi-node layout does not apply to this engine or GPU.
    """
    statement = ctx.book.multi_node
    if engine.split != "tensor" or not statement.applies(engine.id, ctx.gpu.kind):
        return []
    nodes = min_nodes(
        ctx.model,
        ctx.gpu,
        quant=quant,
        kv_dtype=kv,
        context=ctx.context_tokens,
        concurrency=ctx.request.concurrency,
        policy=ctx.policy(engine),
        meet_concurrency=True,
    )
    if nodes is None:
        return []
    return [
        ctx.tr("More nodes: {nodes} nodes of {gpus}x {gpu} hold {concurrency} sequences of {context} tokens.").format(
            nodes=nodes.nodes,
            gpus=nodes.gpus_per_node,
            gpu=ctx.gpu.name,
            concurrency=ctx.request.concurrency,
            context=ctx.context_tokens,
        )
    ]


def nowhere_message(ctx: AdviceContext, engine: ServingEngine, quant: str, kv: str) -> str:
    """The model fits no GPU count of this GPU: say so, with the smallest valid setup elsewhere in the catalog.

    A setup of the same vendor comes first (an Ascend team is pointed at a larger Ascend part, not an NVIDIA one).
    """
    best: tuple[bool, float, str] | None = None
    for gpu in load_gpus():
        if not engine.runs_on_gpu(gpu):
            continue
        for option in (quant, *ctx.book.quantization_fit.fallbacks):
            if option not in engine.quant_methods or not engine_gate(ctx, option, engine, gpu).allowed:
                continue
            count = ctx.min_gpus(engine, option, kv, target=False, gpu=gpu)
            if count is not None:
                key = (gpu.vendor != ctx.gpu.vendor, count * gpu.memory_gb)
                if best is None or key < best[:2]:
                    best = (
                        *key,
                        ctx.tr("{count}x {gpu} with {method}").format(
                            count=count, gpu=gpu.name, method=get_quant(option).name
                        ),
                    )
                break
    limit = ctx.book.limits.max_gpus
    head = ctx.tr(
        "{model} does not fit on any count (1-{limit}) of {gpu} with {method} weights, even with one sequence of "
        "{context} tokens."
    ).format(
        model=ctx.model.name, limit=limit, gpu=ctx.gpu.name, method=get_quant(quant).name, context=ctx.context_tokens
    )
    if best is None:
        return ctx.then(head, ctx.tr("No GPU in the catalog holds it on one node; pick a smaller model."))
    return ctx.then(head, ctx.tr("Nearest valid setup: {setup}; or pick a smaller model.").format(setup=best[2]))


def memory_decision(ctx: AdviceContext, result: MemoryFit) -> None:
    """Whether the model and the target fit, as a decision; a shortfall is a warning with its suggestions."""
    statement = ctx.book.memory_fit
    values = {**ctx.facts(), **result.model_dump(), "limits_source": ctx.book.limits.source}
    if result.fits:
        reason = statement.reason_for(values, ctx.language)
        choice = (
            "fits"
            if result.meets_concurrency
            else f"fits {result.max_concurrent_sequences} of {result.target_concurrency}"
        )
        shown = (
            ctx.tr("fits")
            if result.meets_concurrency
            else ctx.tr("fits {fit} of {target}").format(
                fit=result.max_concurrent_sequences, target=result.target_concurrency
            )
        )
    else:
        reason = render(statement.text("reason_no_fit", ctx.language), values)
        choice = "does not fit"
        shown = ctx.tr("does not fit")
        ctx.warn(
            ctx.then(
                ctx.tr("{model} does not fit on {gpus}x {gpu}.").format(
                    model=ctx.model.name, gpus=ctx.request.gpus, gpu=ctx.gpu.name
                ),
                ctx.sentences(result.suggestions).strip(),
            )
        )
    if result.fits and not result.meets_concurrency:
        ctx.warn(
            ctx.then(
                ctx.tr("Only {fit} of the {target} target sequences fit.").format(
                    fit=result.max_concurrent_sequences, target=result.target_concurrency
                ),
                ctx.sentences(result.suggestions),
            )
        )
    ctx.decide("memory", choice, statement, values, reason=reason, shown=shown)


def parallel_decisions(ctx: AdviceContext, engine: ServingEngine, result: MemoryFit) -> None:
    """The layout: copies and GPUs per copy, the sizes the engines would refuse, experts and MLA attention."""
    book, model = ctx.book, ctx.model
    values: dict[str, object] = {
        **ctx.facts(),
        **result.model_dump(),
        "experts": model.experts,
        "experts_per_token": model.experts_per_token,
        "experts_per_gpu": model.experts // max(1, result.split),
    }
    if result.skipped_layouts:
        skipped = functools.reduce(
            lambda first, second: ctx.tr("{first}; {second}").format(first=first, second=second),
            (s.worded(ctx.tr) for s in result.skipped_layouts),
        )
        ctx.decide(
            "parallelism",
            "sizes skipped",
            book.split_gate,
            {**values, "skipped": skipped},
            shown=ctx.tr("sizes skipped"),
        )
    if result.nodes == 1 and (result.replicas > 1 or result.split > 1):
        tr, split = ctx.tr, result.split
        layout = tr("tensor parallel {size}").format(size=result.tensor_parallel)
        if result.attention_data_parallel:
            layout = tr("data-parallel attention over {gpus} GPUs").format(gpus=split)
        if result.expert_parallel:
            layout += tr(", experts spread over {gpus} GPUs").format(gpus=split)
        ctx.decide(
            "parallelism",
            f"{split} GPU(s) per copy x {result.replicas} copies",
            book.memory_split,
            {**values, "layout": layout},
            shown=tr("{gpus} GPU(s) per copy x {replicas} copies").format(gpus=split, replicas=result.replicas),
        )
    _expert_and_attention_decisions(ctx, engine, result, values)


def _expert_and_attention_decisions(
    ctx: AdviceContext, engine: ServingEngine, result: MemoryFit, values: dict[str, object]
) -> None:
    """Expert parallelism of a mixture-of-experts copy, and data-parallel attention of an MLA model."""
    book, model = ctx.book, ctx.model
    if model.is_moe and result.split > 1:
        ep = book.expert_parallel
        if result.expert_parallel:
            policy = ctx.policy(engine)
            if policy.expert_parallel:
                ctx.decide(
                    "expert_parallel",
                    f"on ({result.split} GPUs)",
                    ep,
                    values,
                    shown=ctx.tr("on ({gpus} GPUs)").format(gpus=result.split),
                )
            else:
                why = next(
                    (s.worded(ctx.tr) for s in result.skipped_layouts if "expert" in s.worded()),
                    ctx.tr("tensor parallel"),
                )
                reason = render(ep.text("reason_needed", ctx.language), {**values, "why": why})
                ctx.decide(
                    "expert_parallel",
                    f"on ({result.split} GPUs)",
                    ep,
                    values,
                    reason=reason,
                    shown=ctx.tr("on ({gpus} GPUs)").format(gpus=result.split),
                )
    if model.kv_kind == "mla" and result.split > 1 and engine.id in book.attention_data_parallel.engines:
        adp = book.attention_data_parallel
        if result.attention_data_parallel:
            ctx.decide(
                "attention_data_parallel",
                f"on ({result.split} ranks)",
                adp,
                values,
                shown=ctx.tr("on ({ranks} ranks)").format(ranks=result.split),
            )
        else:
            ctx.decide(
                "attention_data_parallel",
                "off",
                adp,
                values,
                reason=render(adp.text("reason_latency", ctx.language), values),
                shown=ctx.tr("off"),
            )
