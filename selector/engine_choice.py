"""Engine choice: the rules' engine for the GPU and workload (or the pinned one), its runner-up and when to switch."""

from catalog.engines import ServingEngine, get_engine, gpu_platform
from catalog.quantization import AUTO
from selector.context import AdviceContext, engine_values
from selector.errors import SelectorError
from selector.rules import Rule, matching


def choose_engine(ctx: AdviceContext) -> tuple[ServingEngine, ServingEngine, str]:
    """The engine (the rules' first that runs on the GPU, or the pinned one), its runner-up and when to switch."""
    facts = ctx.facts()
    rules = matching(ctx.book.engine, facts)
    r = ctx.request
    if r.build_engines.value == "yes" and r.priority.value == "latency" and gpu_platform(ctx.gpu) != "nvidia":
        ctx.warn(
            ctx.tr(
                "TensorRT-LLM needs NVIDIA GPUs; {gpu} is not, so the team's willingness "
                "to build engines does not apply here."
            ).format(gpu=ctx.gpu.name)
        )
    tree_rule = _first_that_runs(ctx, rules, facts)
    engine = get_engine(tree_rule.choice)
    if r.engine != AUTO and (pinned := _pinned(ctx, get_engine(r.engine), engine)) is not None:
        runner = engine if engine.id != pinned.id else get_engine(tree_rule.runner_up)
        values = {
            **facts,
            **engine_values(pinned, "hardware", ctx.language),
            "rule_engine": engine.name,
            "rule_reason": tree_rule.reason_for(facts, ctx.language),
        }
        ctx.decide("engine", pinned.id, ctx.book.engine_pinned, values)
        picked = ctx.tr("{engine} is what the rules pick here.").format(engine=runner.name)
        return pinned, runner_up(ctx, runner, pinned, rules), picked
    ctx.decide(
        "engine",
        engine.id,
        tree_rule,
        facts,
        handbook=tree_rule.text("handbook", ctx.language) if tree_rule.handbook != engine.name else "",
    )
    runner = runner_up(ctx, get_engine(tree_rule.runner_up), engine, rules)
    switch_when = tree_rule.text("switch_when", ctx.language)
    ctx.decide("runner_up", runner.id, tree_rule, reason=switch_when)
    return engine, runner, switch_when


def _first_that_runs(ctx: AdviceContext, rules: list[Rule], facts: dict[str, str]) -> Rule:
    """The first matching row whose engine runs on the GPU; each row skipped for hardware is said."""
    for rule in rules:
        engine = get_engine(rule.choice)
        if engine.runs_on_gpu(ctx.gpu):
            return rule
        ctx.decide(
            "hardware gate",
            f"not {engine.name}",
            ctx.book.engine_hardware_gate,
            {**facts, **engine_values(engine, "hardware", ctx.language), "row": rule.id},
            shown=ctx.tr("not {name}").format(name=engine.name),
        )
    # Every catalog GPU runs vLLM or llama.cpp, so the catch-all rows always apply.
    raise SelectorError(f"No engine in the catalog runs on {ctx.gpu.name}.")


def _pinned(ctx: AdviceContext, pinned: ServingEngine, engine: ServingEngine) -> ServingEngine | None:
    """The pinned engine when it runs here and has a launch command; else None, with a warning naming `engine`."""
    if not pinned.runs_on_gpu(ctx.gpu):
        ctx.warn(
            ctx.tr("{pinned} does not run on {gpu} ({hardware}); showing the advice for {engine} instead.").format(
                pinned=pinned.name,
                gpu=ctx.gpu.name,
                hardware=pinned.text("hardware", ctx.language),
                engine=engine.name,
            )
        )
        return None
    if not pinned.launchable:
        ctx.warn(
            ctx.tr(
                "{pinned} is {status}; the advisor gives no launch command for it, "
                "so it shows the advice for {engine} instead."
            ).format(pinned=pinned.name, status=pinned.text("status", ctx.language), engine=engine.name)
        )
        return None
    return pinned


def runner_up(ctx: AdviceContext, preferred: ServingEngine, engine: ServingEngine, rules: list[Rule]) -> ServingEngine:
    """The engine to move to: `preferred` when it runs here and launches, else the next such one."""
    options = [
        preferred,
        *(get_engine(rule.choice) for rule in rules),
        get_engine("vllm"),
        get_engine("llama.cpp"),
        get_engine("ollama"),
    ]
    for option in options:
        if option.id != engine.id and option.runs_on_gpu(ctx.gpu) and option.launchable:
            return option
    return engine
