"""A run in the shape of `vllm bench serve --save-result`: one result per level; with samples, the detailed arrays.

Keys as vLLM writes them (vllm/benchmarks/serve.py): counts, token totals, throughputs, mean/median/std/pNN of
ttft, tpot, itl and e2el in ms; the per-request arrays ttfts, latencies, itls and start_times in seconds, as vLLM
keeps them (start_times from the level's start). The probe's figures are written as measured (its percentiles
were computed as vLLM computes them); std is left out: the probe does not keep it. Several levels are written one
result per line, as --append-result does.
"""

import json
from typing import Any

from probes.models import LevelResult, RequestSample, RunResult, Stats

MS_PER_S = 1000.0
DATE_FORMAT = "%Y%m%d-%H%M%S"  # vLLM's result 'date'
METRICS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2e_ms"}  # vLLM name -> the level's


def _metric_keys(name: str, stats: Stats) -> dict[str, float | None]:
    return {
        f"mean_{name}_ms": stats.mean,
        f"median_{name}_ms": stats.p50,
        f"p90_{name}_ms": stats.p90,
        f"p99_{name}_ms": stats.p99,
    }


def _detailed(samples: list[RequestSample]) -> dict[str, list[Any]]:
    """--save-detailed's per-request arrays (a failed request: zero lengths and its error, as vLLM records it)."""
    ordered = sorted(samples, key=lambda sample: sample.index)
    return {
        "input_lens": [sample.input_tokens or 0 for sample in ordered],
        "output_lens": [(sample.output_tokens or 0) if sample.error_kind is None else 0 for sample in ordered],
        "ttfts": [(sample.ttft_ms or 0.0) / MS_PER_S for sample in ordered],
        "latencies": [(sample.e2e_ms or 0.0) / MS_PER_S for sample in ordered],
        "start_times": [sample.start_s for sample in ordered],
        "itls": [[gap / MS_PER_S for gap in sample.itl_ms] for sample in ordered],
        "generated_texts": ["" for _ in ordered],
        "errors": [sample.error or (str(sample.error_kind) if sample.error_kind else "") for sample in ordered],
    }


def level_result(result: RunResult, level: LevelResult) -> dict[str, Any]:
    """One level as vLLM's result JSON."""
    settings = result.settings
    document: dict[str, Any] = {
        "date": level.started_at.strftime(DATE_FORMAT),
        "endpoint_type": "openai-chat" if settings.api.value == "chat" else "openai",
        "backend": "openai-chat" if settings.api.value == "chat" else "openai",
        "label": settings.label or None,
        "model_id": result.model,
        "tokenizer_id": result.model,
        "num_prompts": level.requests,
        "request_rate": level.request_rate_rps if level.request_rate_rps is not None else "inf",
        "burstiness": settings.burstiness,
        "max_concurrency": level.concurrency,
        "duration": level.duration_s,
        "completed": level.completed,
        "failed": level.failed,
        "total_input_tokens": level.input_tokens,
        "total_output_tokens": level.output_tokens,
        "request_throughput": level.req_s,
        "output_throughput": level.output_tok_s,
        "total_token_throughput": level.total_tok_s,
    }
    if level.slo.goodput_req_s is not None:
        document["request_goodput"] = level.slo.goodput_req_s
    for name, key in METRICS.items():
        document.update(_metric_keys(name, getattr(level, key)))
    samples = [sample for sample in result.samples if sample.level_index == level.index]
    if samples:
        document.update(_detailed(samples))
    return document


def results_json(results: list[RunResult]) -> str:
    """The runs' levels as vLLM results: one as a JSON object, several one per line (--append-result's file)."""
    documents = [level_result(result, level) for result in results for level in result.levels]
    if len(documents) == 1:
        return json.dumps(documents[0], indent=2, ensure_ascii=False)
    return "".join(json.dumps(document, ensure_ascii=False) + "\n" for document in documents)
