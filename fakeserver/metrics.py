"""The fake server's counters and their Prometheus text, named as vLLM or SGLang name them."""

from dataclasses import dataclass
from typing import Literal


@dataclass
class Counters:
    """What the server counts as it serves (running and waiting now, totals since it started)."""

    running: int = 0
    waiting: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    prefix_queries: int = 0
    prefix_hits: int = 0
    spec_draft: int = 0
    spec_accepted: int = 0
    requests: int = 0


def metrics_text(
    c: Counters,
    *,
    model: str,
    engine: Literal["vllm", "sglang"],
    max_running: int | None,
    spec_acceptance: float | None,
) -> str:
    """The counters as a /metrics exposition (gauges and counters labelled with the first model)."""
    label = f'{{model_name="{model}"}}'
    kv = c.running / max_running if max_running else min(1.0, c.running / 256)
    if engine == "sglang":
        hit_rate = c.prefix_hits / c.prefix_queries if c.prefix_queries else 0.0
        rows: list[tuple[str, str, float]] = [
            ("sglang:num_running_reqs", "gauge", c.running),
            ("sglang:num_queue_reqs", "gauge", c.waiting),
            ("sglang:token_usage", "gauge", kv),
            ("sglang:prompt_tokens_total", "counter", c.prompt_tokens),
            ("sglang:generation_tokens_total", "counter", c.generation_tokens),
            ("sglang:cache_hit_rate", "gauge", hit_rate),
        ]
    else:
        rows = [
            ("vllm:num_requests_running", "gauge", c.running),
            ("vllm:num_requests_waiting", "gauge", c.waiting),
            ("vllm:kv_cache_usage_perc", "gauge", kv),
            ("vllm:prompt_tokens_total", "counter", c.prompt_tokens),
            ("vllm:generation_tokens_total", "counter", c.generation_tokens),
            ("vllm:prefix_cache_queries_total", "counter", c.prefix_queries),
            ("vllm:prefix_cache_hits_total", "counter", c.prefix_hits),
        ]
    if spec_acceptance is not None and engine == "vllm":
        rows += [
            ("vllm:spec_decode_num_draft_tokens_total", "counter", c.spec_draft),
            ("vllm:spec_decode_num_accepted_tokens_total", "counter", c.spec_accepted),
        ]
    out = []
    for name, kind, value in rows:
        out.append(f"# HELP {name} fake server metric\n# TYPE {name} {kind}\n{name}{label} {float(value)}")
    return "\n".join(out) + "\n"
