"""Prometheus /metrics parsing with prometheus_client: vLLM's and SGLang's texts, escaping, histograms, exemplars."""

import asyncio

import httpx2
import pytest

from probes.prom import metrics_url_for, parse_metrics, scrape, server_metrics

MODEL = 'Qwen/Qwen2.5-3B "Instruct", v{2}'  # quotes, a comma and braces: escaped in the label value
LABEL = 'engine="0",model_name="Qwen/Qwen2.5-3B \\"Instruct\\", v{2}"'

VLLM = f"""# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{{generation="0"}} 12345.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{{LABEL}}} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{{LABEL}}} 1.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{{LABEL}}} 0.25
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{{{LABEL}}} 1000.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{{{LABEL}}} 400.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{{{LABEL}}} 5000.0
vllm:prompt_tokens_total{{engine="1",model_name="other \\\\ model\\nline"}} 1000.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{{LABEL}}} 2.5e4
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{{{LABEL},le="0.001"}} 0.0
vllm:time_to_first_token_seconds_bucket{{{LABEL},le="0.5"}} 40.0
vllm:time_to_first_token_seconds_bucket{{{LABEL},le="+Inf"}} 50.0
vllm:time_to_first_token_seconds_count{{{LABEL}}} 50.0
vllm:time_to_first_token_seconds_sum{{{LABEL}}} 12.5
# HELP vllm:spec_decode_draft_acceptance_rate Speculative token acceptance rate.
# TYPE vllm:spec_decode_draft_acceptance_rate gauge
vllm:spec_decode_draft_acceptance_rate{{{LABEL}}} NaN
"""

VLLM_VALUES = {
    "running_requests": 3.0,
    "waiting_requests": 1.0,
    "kv_cache_usage_ratio": 0.25,
    "prefix_cache_queries": 1000.0,
    "prefix_cache_hits": 400.0,
    "prompt_tokens": 6000.0,  # summed over label sets
    "generation_tokens": 25000.0,
}

SGLANG = """# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="qwen",tp_rank="0"} 7.0
sglang:num_running_reqs{model_name="qwen",tp_rank="1"} 5.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="qwen",tp_rank="0"} 2.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="qwen",tp_rank="0"} 0.5
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="qwen",tp_rank="0"} 0.75
# TYPE sglang:prompt_tokens counter
sglang:prompt_tokens_total{model_name="qwen",tp_rank="0"} 300.0
sglang:prompt_tokens_created{model_name="qwen",tp_rank="0"} 1.7e9
"""

OPENMETRICS = f"""# TYPE vllm:generation_tokens counter
# HELP vllm:generation_tokens Number of generation tokens processed.
vllm:generation_tokens_total{{{LABEL}}} 250.0 # {{trace_id="abc}} 1"}} 9.0 1700000000.0
vllm:generation_tokens_created{{{LABEL}}} 1.7e9
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{{LABEL}}} 2.0
# EOF
"""


def test_vllm_text_with_escaped_labels_comments_and_a_histogram() -> None:
    values, family = parse_metrics(VLLM)
    assert family == "vllm" and values == VLLM_VALUES  # NaN left out, the histogram and gc series ignored


def test_sglang_sums_over_ranks_and_ignores_created() -> None:
    values, family = parse_metrics(SGLANG)
    assert family == "sglang"
    assert values == {
        "running_requests": 12.0,
        "waiting_requests": 2.0,
        "kv_cache_usage_ratio": 0.5,
        "prefix_cache_hit_ratio": 0.75,
        "prompt_tokens": 300.0,
    }


def test_openmetrics_reads_the_sample_not_its_exemplar() -> None:
    values, family = parse_metrics(OPENMETRICS)  # recognised by its # EOF
    assert family == "vllm" and values == {"generation_tokens": 250.0, "running_requests": 2.0}


@pytest.mark.parametrize("text", ['vllm:num_requests_running{model_name="a} 1\n', "vllm:num_requests_running one\n"])
def test_a_malformed_exposition_is_refused_whole(text: str) -> None:
    with pytest.raises(ValueError):
        parse_metrics(text)


def scrape_answer(status: int, text: str, content_type: str) -> tuple[dict[str, float], str] | None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/metrics"
        return httpx2.Response(status, text=text, headers={"content-type": content_type})

    async def main() -> tuple[dict[str, float], str] | None:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
            return await scrape(client, metrics_url_for("http://gpu-box:8000/v1"))

    return asyncio.run(main())


def test_scrape_is_tolerant_of_absence_and_of_garbage() -> None:
    assert scrape_answer(200, VLLM, "text/plain; version=0.0.4; charset=utf-8") == (VLLM_VALUES, "vllm")
    openmetrics = "application/openmetrics-text; version=1.0.0; charset=utf-8"
    expected = ({"generation_tokens": 250.0, "running_requests": 2.0}, "vllm")
    assert scrape_answer(200, OPENMETRICS, openmetrics) == expected
    assert scrape_answer(404, "not found", "text/plain") is None
    assert scrape_answer(200, "vllm:num_requests_running{oops\n", "text/plain") is None
    assert scrape_answer(200, "# nothing watched here\nother_metric 1\n", "text/plain") is None


def test_ratios_come_from_the_counters_deltas() -> None:
    before, _ = parse_metrics(VLLM)
    after = {**before, "prefix_cache_queries": 2000.0, "prefix_cache_hits": 1150.0}
    metrics = server_metrics(before, after, "vllm")
    assert metrics.prefix_cache_hit_ratio == pytest.approx(0.75) and metrics.spec_decode_acceptance_ratio is None
    sglang, _ = parse_metrics(SGLANG)
    assert server_metrics(sglang, sglang, "sglang").prefix_cache_hit_ratio == 0.75  # the server's own ratio
