"""Per-request token accounting: from chunk arrival times and usage to TTFT, TPOT, ITL and E2E (vLLM definitions)."""

from dataclasses import dataclass, field
from itertools import pairwise

from probes.models import TokenSource


@dataclass
class StreamTrace:
    """What one streamed response delivered, in perf_counter seconds; filled while reading, accounted after."""

    sent_s: float
    chunk_s: list[float] = field(default_factory=list)  # arrival of each output-bearing chunk
    chunk_chars: list[int] = field(default_factory=list)  # characters of output in that chunk
    chunk_reasoning: list[bool] = field(default_factory=list)  # True: reasoning content, False: content
    chunk_cum_tokens: list[int | None] = field(default_factory=list)  # continuous usage: completion_tokens so far
    end_s: float | None = None  # [DONE] (or the end of the body)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None  # final usage


@dataclass(frozen=True)
class Accounting:
    """The derived per-request figures (milliseconds)."""

    ttft_ms: float | None
    first_content_ms: float | None
    reasoning_ms: float | None
    e2e_ms: float | None
    tpot_ms: float | None
    itl_ms: list[float]
    chunk_ms: list[float]
    chunk_tokens: list[int]
    output_tokens: int | None
    reasoning_tokens: int | None
    token_source: TokenSource | None


def _distribute(total: int, weights: list[int]) -> list[int]:
    """Split total tokens over chunks: one each, the rest by weight (largest remainder)."""
    n = len(weights)
    if n == 0:
        return []
    if total <= n:
        return [1] * n
    extra = total - n
    if sum(weights) <= 0:
        weights = [1] * n
    weight_sum = sum(weights)
    shares = [extra * w / weight_sum for w in weights]
    counts = [int(s) for s in shares]
    order = sorted(range(n), key=lambda i: shares[i] - counts[i], reverse=True)
    for i in order[: extra - sum(counts)]:
        counts[i] += 1
    return [1 + c for c in counts]


def chunk_token_counts(trace: StreamTrace) -> tuple[list[int], int | None, TokenSource | None]:
    """Tokens per chunk, total output tokens and their source.

    Continuous usage (a cumulative completion_tokens on every chunk) gives exact per-chunk counts; a final usage
    total is spread over the chunks (one each, the rest by characters); without usage each chunk counts as one.
    """
    n = len(trace.chunk_s)
    cum = [int(c) for c in trace.chunk_cum_tokens if c is not None]
    if n and len(cum) == len(trace.chunk_cum_tokens):  # every chunk carried its cumulative count
        counts, previous = [], 0
        for c in cum:
            counts.append(max(0, c - previous))
            previous = max(previous, c)
        total = trace.completion_tokens if trace.completion_tokens is not None else previous
        return counts, total, TokenSource.USAGE
    if trace.completion_tokens is not None:
        return _distribute(trace.completion_tokens, trace.chunk_chars), trace.completion_tokens, TokenSource.USAGE
    return [1] * n, (n if n else None), (TokenSource.CHUNKS if n else None)


def account(trace: StreamTrace, ok: bool) -> Accounting:
    """Derive the request's figures; TPOT only for a successful request with more than one output token.

    TTFT: send to the first chunk carrying output (content or reasoning; role-only and empty chunks do not count).
    TPOT = (E2E - TTFT) / (output tokens - 1). ITL: a chunk that arrives g ms after the previous one and carries k
    tokens adds k gaps of g/k; the extra tokens of the first chunk add none (nothing timed them).
    """
    t0 = trace.sent_s
    chunk_ms = [(t - t0) * 1000.0 for t in trace.chunk_s]
    counts, output_tokens, source = chunk_token_counts(trace)
    ttft_ms = chunk_ms[0] if chunk_ms else None
    flags = trace.chunk_reasoning
    if True not in flags:  # the usual case: no reasoning chunks
        first_content_ms = ttft_ms
        reasoning_ms = reasoning_tokens = None
    else:
        first_content_ms = next((ms for ms, r in zip(chunk_ms, flags, strict=True) if not r), None)
        reasoning = [i for i, r in enumerate(flags) if r]
        reasoning_ms = chunk_ms[reasoning[-1]]
        reasoning_tokens = sum(counts[i] for i in reasoning)
    if len(counts) == len(chunk_ms) and counts.count(1) == len(counts):  # one token per chunk: the gaps themselves
        itl_ms = [b - a for a, b in pairwise(chunk_ms)]
    else:
        itl_ms = []
        for i in range(1, len(chunk_ms)):
            k = counts[i]
            if k <= 0:
                continue
            gap = (chunk_ms[i] - chunk_ms[i - 1]) / k
            itl_ms.extend([gap] * k)
    e2e_ms = (trace.end_s - t0) * 1000.0 if trace.end_s is not None else None
    tpot_ms = None
    if ok and ttft_ms is not None and e2e_ms is not None and output_tokens is not None and output_tokens > 1:
        tpot_ms = (e2e_ms - ttft_ms) / (output_tokens - 1)
    return Accounting(
        ttft_ms=ttft_ms,
        first_content_ms=first_content_ms,
        reasoning_ms=reasoning_ms,
        e2e_ms=e2e_ms,
        tpot_ms=tpot_ms,
        itl_ms=itl_ms,
        chunk_ms=chunk_ms,
        chunk_tokens=counts,
        output_tokens=output_tokens,
        reasoning_tokens=reasoning_tokens,
        token_source=source,
    )
