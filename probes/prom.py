"""Prometheus /metrics scraping (vLLM, SGLang): the few series that explain a level, tolerant of their absence."""

import math
from collections.abc import Callable, Iterable
from typing import cast
from urllib.parse import urlsplit, urlunsplit

import httpx2
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics import parser as openmetrics_parser
from prometheus_client.parser import text_string_to_metric_families

from probes.models import ServerMetrics

SCRAPE_TIMEOUT_S = 3.0
MAX_METRICS_BYTES = 8 << 20
OPENMETRICS_TYPE = "application/openmetrics-text"

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
# The openmetrics parser is not annotated; its signature is the text parser's.
_openmetrics_families = cast(Callable[[str], Iterable[Metric]], openmetrics_parser.text_string_to_metric_families)


def metrics_url_for(base_url: str) -> str:
    """/metrics beside /v1: http://host:8000/v1 -> http://host:8000/metrics."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, f"{path}/metrics", "", ""))


def parse_metrics(text: str, openmetrics: bool = False) -> tuple[dict[str, float], str]:
    """The watched series (summed over label sets) and the engine family; ValueError for a malformed exposition.

    Prometheus text format by default, OpenMetrics (exemplars, `# EOF`) when asked or when the text ends with `# EOF`.
    """
    openmetrics = openmetrics or text.rstrip().endswith("# EOF")
    families = _openmetrics_families(text) if openmetrics else text_string_to_metric_families(text)
    values: dict[str, float] = {}
    family = "other"
    for metric in families:
        for sample in metric.samples:
            ours = _LOOKUP.get(sample.name)
            if ours is None or math.isnan(sample.value):
                continue
            values[ours] = values.get(ours, 0.0) + float(sample.value)
            family = sample.name.split(":", 1)[0]
    return values, family


async def exposition(client: httpx2.AsyncClient, url: str) -> tuple[str, bool] | None:
    """The /metrics text and whether it is OpenMetrics; None on any error, non-200 or an oversized answer."""
    try:
        response = await client.get(url, timeout=SCRAPE_TIMEOUT_S)
        if response.status_code != 200 or len(response.content) > MAX_METRICS_BYTES:
            return None
        return response.text, response.headers.get("content-type", "").startswith(OPENMETRICS_TYPE)
    except (httpx2.HTTPError, OSError, UnicodeDecodeError, ValueError):
        return None


async def scrape(client: httpx2.AsyncClient, url: str) -> tuple[dict[str, float], str] | None:
    """One scrape; None when the server offers no metrics (any error, non-200, malformed or nothing watched)."""
    got = await exposition(client, url)
    if got is None:
        return None
    try:
        values, family = parse_metrics(*got)
    except ValueError:
        return None
    return (values, family) if values else None


class Scraper:
    """Scrapes before and after each level; after the first scrape that finds nothing, it stops asking."""

    def __init__(self, client: httpx2.AsyncClient, url: str, enabled: bool) -> None:
        self.client = client
        self.url = url
        self.enabled = enabled

    async def now(self) -> tuple[dict[str, float], str] | None:
        """The watched values and the engine family, or None (off, or no metrics)."""
        if not self.enabled:
            return None
        got = await scrape(self.client, self.url)
        if got is None:
            self.enabled = False  # tolerant of absence: stop asking
        return got


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
