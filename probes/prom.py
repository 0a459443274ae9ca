"""Prometheus /metrics scraping (vLLM, SGLang): the few series that explain a level, tolerant of their absence."""

import math
from urllib.parse import urlsplit, urlunsplit

import httpx2

from probes.models import ServerMetrics

SCRAPE_TIMEOUT_S = 3.0
MAX_METRICS_BYTES = 8 << 20

# Our name -> the engines' names (summed over label sets). Counters may or may not carry the _total suffix.
WATCHED: dict[str, tuple[str, ...]] = {
    "waiting_requests": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "running_requests": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "kv_cache_usage_ratio": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
    "prefix_cache_queries": (
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_queries",
        "vllm:gpu_prefix_cache_queries_total",
    ),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits_total"),
    "prefix_cache_hit_ratio": ("vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate"),
    "spec_draft_tokens": ("vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_draft_tokens"),
    "spec_accepted_tokens": ("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_accepted_tokens"),
    "spec_acceptance_ratio": ("vllm:spec_decode_draft_acceptance_rate",),
    "spec_accept_length": ("sglang:spec_accept_length",),
    "prompt_tokens": ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total"),
    "generation_tokens": ("vllm:generation_tokens_total", "sglang:generation_tokens_total"),
}
_LOOKUP = {engine: ours for ours, names in WATCHED.items() for engine in names}
_PREFIXES = tuple(_LOOKUP)


def metrics_url_for(base_url: str) -> str:
    """/metrics beside /v1: http://host:8000/v1 -> http://host:8000/metrics."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, f"{path}/metrics", "", ""))


def parse_metrics(text: str) -> tuple[dict[str, float], str]:
    """The watched series from Prometheus text format (summed over labels) and the engine family."""
    values: dict[str, float] = {}
    family = "other"
    for line in text.splitlines():
        if not line.startswith(_PREFIXES):
            continue
        name_end = len(line)
        for sep in ("{", " "):
            idx = line.find(sep)
            if 0 <= idx < name_end:
                name_end = idx
        name = line[:name_end]
        ours = _LOOKUP.get(name)
        if ours is None:
            continue
        rest = line[line.rfind("}") + 1 :] if "}" in line else line[name_end:]
        fields = rest.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        if math.isnan(value):
            continue
        values[ours] = values.get(ours, 0.0) + value
        family = name.split(":", 1)[0]
    return values, family


async def scrape(client: httpx2.AsyncClient, url: str) -> tuple[dict[str, float], str] | None:
    """One scrape; None when the server offers no metrics (any error, non-200 or nothing watched)."""
    try:
        response = await client.get(url, timeout=SCRAPE_TIMEOUT_S)
        if response.status_code != 200 or len(response.content) > MAX_METRICS_BYTES:
            return None
        values, family = parse_metrics(response.text)
    except (httpx2.HTTPError, OSError, UnicodeDecodeError, ValueError):
        return None
    return (values, family) if values else None


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den <= 0:
        return None
    return num / den


def server_metrics(before: dict[str, float], after: dict[str, float], family: str) -> ServerMetrics:
    """Before/after values and the ratios of the counters' deltas over the level."""

    def delta(key: str) -> float | None:
        if key in before and key in after:
            return after[key] - before[key]
        return None

    prefix = _ratio(delta("prefix_cache_hits"), delta("prefix_cache_queries"))
    if prefix is None:
        prefix = after.get("prefix_cache_hit_ratio")
    spec = _ratio(delta("spec_accepted_tokens"), delta("spec_draft_tokens"))
    if spec is None:
        spec = after.get("spec_acceptance_ratio")
    return ServerMetrics(
        source=family, before=before, after=after, prefix_cache_hit_ratio=prefix, spec_decode_acceptance_ratio=spec
    )
