"""The handbook's concepts as margin notes: a title, two or three sentences, and the handbook section they come from."""

from dataclasses import dataclass

from catalog import load_handbook
from i18n import N_


@dataclass(frozen=True)
class Concept:
    """One concept: its key (where a page shows it), title and note (catalog msgids), and the handbook's section."""

    key: str
    title: str
    note: str  # its {placeholders} are the handbook's numbers (note_values), read from catalog/data/handbook.toml
    section: str  # the handbook's numbering: "2.3", "5.1", "Q3"


CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "ttft_tpot",
        N_("TTFT and TPOT"),
        N_(
            "TTFT (time to first token) is the wait from sending a request to its first token: the prefill of the "
            "whole prompt, so it rises as more requests arrive together. TPOT (time per output token) is the pace "
            "after that: continuous batching decodes every request in one step, so it stays nearly flat as "
            "concurrency grows (the handbook's A800: {seed_tpot_ms} ms at {seed_concurrency} concurrent requests)."
        ),
        "Q3",
    ),
    Concept(
        "continuous_batching",
        N_("Continuous batching"),
        N_(
            "Instead of waiting for a whole batch to finish, the engine checks at every decode step which requests "
            "ended and which may join: scheduling by token, not by request. Short requests leave at once, long ones "
            "go on, and the GPU stays busy (90%+ against 30-40% for static batches)."
        ),
        "Q2",
    ),
    Concept(
        "paged_attention",
        N_("PagedAttention"),
        N_(
            "The KV cache is cut into fixed blocks of 16 tokens and allocated on demand, like virtual memory, "
            "instead of reserving the maximum length for every sequence. Fragmentation falls from 60-80% to under "
            "4%, and the same memory holds 3-4x as many concurrent requests."
        ),
        "Q1",
    ),
    Concept(
        "kv_bytes",
        N_("KV cache per token"),
        N_(
            "Every token a sequence holds keeps its keys and values in every layer: 2 x layers x KV heads x head "
            "size x bytes. What is left of the GPU memory after the weights, divided by that and by the context "
            "length, is how many sequences can run at once; an FP8 KV cache halves it."
        ),
        "5",
    ),
    Concept(
        "prefix_caching",
        N_("Prefix caching"),
        N_(
            "Requests that start with the same text (a system prompt, a RAG context, an agent's tools) reuse the KV "
            "cache computed for it instead of prefilling it again. When the shared part is {reuse_pct}% of the prompt, "
            "TTFT falls 60-90%; SGLang's RadixAttention finds shared prefixes by itself."
        ),
        "5.2",
    ),
    Concept(
        "chunked_prefill",
        N_("Chunked prefill"),
        N_(
            "A long prompt's prefill is cut into chunks scheduled together with other requests' decode steps, so "
            "one long prompt does not stall everyone's next token. TTFT jitters less; peak throughput drops a "
            "little."
        ),
        "2.3",
    ),
    Concept(
        "speculative_decoding",
        N_("Speculative decoding"),
        N_(
            "A cheap drafter (n-gram lookup, a small model, EAGLE) guesses several tokens and the model checks them "
            "in one step. It pays when guesses are accepted often (code and JSON: {break_even_pct}%+); below the "
            "break-even acceptance the wasted draft and verification make serving slower, and at high concurrency the "
            "gain shrinks."
        ),
        "Q4",
    ),
    Concept(
        "goodput",
        N_("Goodput and SLO attainment"),
        N_(
            "Throughput counts every token; goodput counts only the requests that met their targets (TTFT and "
            "TPOT). SLO attainment is the share of requests that did. The handbook's targets: TTFT p50 under "
            "{ttft_p50_ms} ms and p99 under {ttft_p99_ms} ms, TPOT p50 under {tpot_p50_ms} ms."
        ),
        "Q3",
    ),
    Concept(
        "utilization",
        N_("Utilization at average traffic"),
        N_(
            "A fleet is sized for its peak, but most hours carry the average. The GPUs are paid for either way, so "
            "the cost of each request actually served rises as utilization falls; autoscaling or a flatter peak "
            "closes the gap."
        ),
        "2.4",
    ),
    Concept(
        "spot",
        N_("Spot GPUs"),
        N_(
            "Spot or low-priority instances cost 60-70% less on public clouds, but the provider may take them back "
            "at short notice: serve on them only with graceful handling of preemption (drain, retry elsewhere)."
        ),
        "Q5",
    ),
)


def note_values() -> dict[str, str]:
    """The handbook's numbers the notes quote, from its data file (numbers live once)."""
    hb = load_handbook()
    return {
        "seed_tpot_ms": f"{hb.seed_benchmark.tpot_ms:g}",
        "seed_concurrency": str(hb.seed_benchmark.concurrency),
        "reuse_pct": f"{hb.levers.prefix_caching.prompt_reuse_share * 100:g}",
        "break_even_pct": f"{hb.levers.speculative_decoding.break_even_acceptance * 100:g}",
        "ttft_p50_ms": f"{hb.slo.ttft_p50_ms:g}",
        "ttft_p99_ms": f"{hb.slo.ttft_p99_ms:g}",
        "tpot_p50_ms": f"{hb.slo.tpot_p50_ms:g}",
    }


def concept(key: str) -> Concept:
    """The concept of a key (KeyError: no such concept)."""
    return next(c for c in CONCEPTS if c.key == key)


def section_anchor(section: str) -> str:
    """The anchor of a handbook section on the handbook page: 's-2-3' for 2.3, 'q3' for Q3."""
    return section.lower() if section.upper().startswith("Q") else "s-" + section.replace(".", "-")
