"""Quantization choice: the weight format the rules, the GPU's gates and the engine allow, and a lighter one to fit."""

from catalog import Gpu
from catalog.engines import ServingEngine
from catalog.quantization import AUTO, get_quant, sm_name, weights_gb
from selector.context import AdviceContext, engine_values
from selector.gates import Gate, gate
from selector.memory import Policy, memory_policy, memory_pressure
from selector.rules import matching


def engine_gate(ctx: AdviceContext, method_id: str, engine: ServingEngine, gpu: Gpu | None = None) -> Gate:
    """The architecture gate, narrowed by what this engine and this model can do with the format."""
    gpu = gpu or ctx.gpu
    checked = gate(method_id, gpu, ctx.language)
    method = get_quant(method_id)
    values = {
        "gpu": gpu.name,
        "sm": sm_name(gpu),
        "engine": engine.name,
        "engine_source": engine.source_for("quantization"),
        "method": method.name,
        "method_source": method.source,
        "model": ctx.model.name,
    }
    gates = ctx.book.gates
    if checked.allowed and checked.degraded and method.needs == "fp8" and not engine.fp8_weight_only:
        refused = gates.fp8_engine_no_fallback
    elif method.scope == "experts" and not ctx.model.is_moe:
        refused = gates.experts_only
    else:
        return checked
    return Gate(
        method=method_id,
        allowed=False,
        rule_id=refused.id,
        reason=refused.reason_for(values, ctx.language),
        source=refused.source_for(values),
    )


def choose_quant(ctx: AdviceContext, engine: ServingEngine) -> tuple[str, bool]:
    """The weight format: the pinned one when it runs here, else the rules' first that the GPU and engine allow.

    Returns the format and whether it is the user's pinned one (which the fit never steps away from).
    """
    r = ctx.request
    pressure = memory_pressure(
        ctx.model,
        ctx.gpu,
        gpus=r.gpus,
        split_kind=engine.split,
        context=ctx.context_tokens,
        concurrency=r.concurrency,
        policy=Policy(**memory_policy(engine)),  # the engine's own share of memory, no parallel policy
    )
    facts = ctx.facts(memory_pressure=pressure)
    if r.quant != AUTO and _pinned_runs(ctx, engine, facts):
        return r.quant, True
    return _rules_quant(ctx, engine, facts), False


def _pinned_runs(ctx: AdviceContext, engine: ServingEngine, facts: dict[str, str]) -> bool:
    """Whether the pinned format is advised (said as a decision); a gate or the engine refusing it is said too."""
    r = ctx.request
    pinned = get_quant(r.quant)
    checked = engine_gate(ctx, r.quant, engine)
    if not checked.allowed:
        ctx.warn(ctx.tr("{reason} Showing the advice with the rules' choice instead.").format(reason=checked.reason))
        ctx.decide(
            "architecture gate",
            f"not {pinned.name}",
            ctx.book.get(checked.rule_id),
            reason=checked.reason,
            source=checked.source,
            shown=ctx.tr("not {name}").format(name=pinned.name),
        )
    elif r.quant not in engine.quant_methods:
        ctx.warn(
            ctx.tr("{engine} does not serve {method}; showing the rules' choice instead.").format(
                engine=engine.name, method=pinned.name
            )
        )
    else:
        values: dict[str, object] = {
            **facts,
            "method": pinned.name,
            "method_source": pinned.source,
            "gate": checked.reason,
        }
        ctx.decide("quantization", r.quant, ctx.book.quantization_pinned, values)
        if checked.degraded:
            ctx.warn(checked.reason)
        return True
    return False


def _rules_quant(ctx: AdviceContext, engine: ServingEngine, facts: dict[str, str]) -> str:
    """The rules' first format the GPU's gates and the engine allow (each refusal said), else the engine's first."""
    native = get_quant(ctx.model.native_format)
    facts_values = {
        **facts,
        "native_name": native.name,
        "native_bits": native.bits_per_weight,
        "hf_repo": ctx.model.repo,
        "model_source": ctx.model.source,
    }
    for rule in matching(ctx.book.quantization, facts):
        choice = ctx.model.native_format if rule.choice == "native" else rule.choice
        checked = engine_gate(ctx, choice, engine)
        method = get_quant(choice)
        if not checked.allowed:
            ctx.decide(
                "architecture gate",
                f"not {method.name}",
                rule,
                reason=checked.reason,
                source=f"{rule.source_for(facts_values)}; {checked.source}",
                shown=ctx.tr("not {name}").format(name=method.name),
            )
            continue
        if choice not in engine.quant_methods:
            values = {
                **facts,
                **engine_values(engine, "quantization", ctx.language),
                "row": rule.id,
                "method": method.name,
            }
            ctx.decide(
                "engine gate",
                f"not {method.name}",
                ctx.book.quantization_engine_gate,
                values,
                shown=ctx.tr("not {name}").format(name=method.name),
            )
            continue
        reason = rule.reason_for(facts_values, ctx.language)
        if checked.degraded:
            reason = ctx.then(reason, checked.reason)
        ctx.decide(
            "quantization",
            choice,
            rule,
            reason=reason,
            source=rule.source_for(facts_values),
            handbook=rule.text("handbook", ctx.language),
        )
        return choice
    fallback = engine.quant_methods[0]
    values = {**facts, **engine_values(engine, "quantization", ctx.language), "method": get_quant(fallback).name}
    ctx.decide("quantization", fallback, ctx.book.quantization_engine_only, values)
    return fallback


def fit_quant(ctx: AdviceContext, engine: ServingEngine, quant: str, kv: str, *, pinned: bool) -> str:
    """Step to a lighter format when the chosen one does not fit at all."""
    current = ctx.fit(engine, quant, kv)
    if current.fits or pinned:
        return quant
    step = ctx.book.quantization_fit
    for option in step.fallbacks:
        if (
            option not in engine.quant_methods
            or not engine_gate(ctx, option, engine).allowed
            or engine_gate(ctx, option, engine).degraded
        ):
            continue
        if weights_gb(ctx.model, option) >= weights_gb(ctx.model, quant):
            continue
        if ctx.fit(engine, option, kv).fits:
            values = {
                **ctx.facts(),
                "from_method": get_quant(quant).name,
                "from_weights_gb": weights_gb(ctx.model, quant),
                "to_method": get_quant(option).name,
                "to_weights_gb": weights_gb(ctx.model, option),
                "to_source": get_quant(option).source,
            }
            ctx.decide("quantization", option, step, values)
            return option
    return quant
