"""Serving features: KV-cache type, KV offload, paging, prefix caching, chunked prefill, speculation and batching."""

import math

from catalog import load_handbook
from catalog.engines import ServingEngine
from catalog.kvcache import eight_bit_kv
from selector.context import AdviceContext, engine_values, yn
from selector.launch import engine_gpus, offload_gib
from selector.memory import MemoryFit
from selector.rules import matching, render
from selector.speculative import Speculative, decide_speculative


def choose_kv(ctx: AdviceContext, engine: ServingEngine, quant: str) -> str:
    """The KV-cache type: the engine's 8-bit type where the rules ask for it and the engine has one, else 16-bit."""
    sixteen = ctx.fit(engine, quant, "auto")
    facts = ctx.facts(kv_pressure=yn(not sixteen.meets_concurrency))
    eight = eight_bit_kv(engine)
    for rule in matching(ctx.book.kv_cache, facts):
        if rule.choice == "8bit" and eight is None:
            continue
        choice = eight if rule.choice == "8bit" and eight else "auto"
        ctx.decide("kv_cache_dtype", choice, rule, facts)
        return choice
    return "auto"


def offload_decision(ctx: AdviceContext, engine: ServingEngine, result: MemoryFit) -> int | None:
    """Offload KV to CPU memory for peaks only, when the GPUs hold a little less than the target (GiB, or None)."""
    peaks, off = ctx.book.kv_offload_peaks, ctx.book.kv_offload_off
    values = {
        **ctx.facts(),
        **engine_values(engine, "kv_offload", ctx.language),
        **result.model_dump(),
        "max_overflow": peaks.max_overflow,
    }
    overflow = ctx.request.concurrency / max(1, result.max_concurrent_sequences)
    if result.meets_concurrency or not result.fits:
        why = "not_needed"
    elif engine.id not in peaks.engines:
        why = "no_engine_support"
    elif overflow > peaks.max_overflow:
        why = "gap_too_large"
    else:
        # One engine (a model copy; one GPU per rank under data-parallel attention) takes the size in full: every
        # data-parallel engine allocates its own, so the copies do not multiply it.
        gpus = engine_gpus(result.tensor_parallel, result.pipeline_parallel, result.attention_data_parallel)
        offload = offload_gib(result.kv_shortfall_gb_per_gpu, gpus, peaks.extra_gib)
        values = {**values, "offload_gib": offload, "engine_gpus": gpus}
        ctx.decide("kv_offload", f"{offload} GiB", peaks, values, handbook=peaks.handbook_for(engine.id))
        return offload
    values = {**values, "why": render(off.text(why, ctx.language), values)}
    ctx.decide("kv_offload", "off", off, values, shown=ctx.tr("off"))
    return None


def paging_decision(ctx: AdviceContext, full_context_sequences: int) -> None:
    """PagedAttention: the fit above reserves the whole context per sequence; paged blocks hold what is used."""
    paging = ctx.book.paging
    block = paging.block_tokens
    used = math.ceil(ctx.context_tokens * paging.example_fill / block) * block
    paged = int(full_context_sequences * ctx.context_tokens / used)
    values = {
        "context": ctx.context_tokens,
        "block": block,
        "used": used,
        "paged": paged,
        "full": full_context_sequences,
    }
    shown = ctx.tr("paged, {block}-token blocks").format(block=block)
    ctx.decide("kv_paging", f"paged, {block}-token blocks", paging, values, shown=shown)


def caching_decisions(ctx: AdviceContext, engine: ServingEngine) -> None:
    """Prefix caching (on: by default or by its flag) and chunked prefill, as the engine has them."""
    values = {
        **ctx.facts(),
        **engine_values(engine, "prefix_caching", ctx.language),
        "prompt_reuse_share": load_handbook().levers.prefix_caching.prompt_reuse_share,
    }
    if engine.prefix_caching_default == "on":
        default_on = ctx.book.prefix_caching_default_on
        ctx.decide(
            "prefix_caching",
            "on (engine default)",
            default_on,
            values,
            handbook=default_on.handbook_for(engine.id),
            shown=ctx.tr("on (engine default)"),
        )
    else:
        flag = ctx.book.prefix_caching_flag
        ctx.decide(
            "prefix_caching",
            "on (--enable-prefix-caching)",
            flag,
            values,
            handbook=flag.handbook_for(engine.id),
            shown=ctx.tr("on (--enable-prefix-caching)"),
        )
    chunked = ctx.book.chunked_prefill
    ctx.decide(
        "chunked_prefill",
        engine.chunked_prefill,
        chunked,
        {**values, **engine_values(engine, "chunked_prefill", ctx.language)},
        handbook=chunked.handbook_for(engine.id),
        shown=engine.text("chunked_prefill", ctx.language),
    )


def speculative_decision(ctx: AdviceContext, engine: ServingEngine) -> Speculative:
    """Speculative decoding for this model and engine, said as a decision."""
    facts = ctx.facts(engine_has_spec=yn(bool(engine.spec_methods)))
    spec = decide_speculative(ctx.model, engine, facts, ctx.language)
    ctx.decide(
        "speculative",
        spec.method,
        ctx.book.get(spec.rule_id),
        reason=spec.reason,
        source=spec.source,
        shown=ctx.tr("none") if spec.method == "none" else "",
    )
    return spec


def batching_decision(ctx: AdviceContext) -> tuple[int, int]:
    """The checklist's max-num-seqs and max-num-batched-tokens for this target and priority."""
    r, batching = ctx.request, ctx.book.batching
    power_of_two = 2 ** math.ceil(math.log2(r.concurrency))
    max_seqs = min(batching.max_num_seqs_max, max(batching.max_num_seqs_min, power_of_two))
    latency = r.priority.value == "latency"
    batched = batching.batched_tokens_latency if latency else batching.batched_tokens_throughput
    values = {
        **ctx.facts(),
        "max_num_seqs": max_seqs,
        "batched_tokens": batched,
        "favours": batching.text("favours_latency" if latency else "favours_throughput", ctx.language),
    }
    ctx.decide("batching", f"max-num-seqs {max_seqs}, max-num-batched-tokens {batched}", batching, values)
    return max_seqs, batched
