"""One streamed request: sent through the SDK, read as its bytes arrive, returned as a sample (failures included)."""

import asyncio
import time
from collections.abc import Callable

import httpx2
from openai import AsyncOpenAI

from probes.config import ApiKind, RunSettings
from probes.failures import Failure, RequestFailed, classify_error, closed_without_response, failure_of
from probes.models import ErrorKind, RequestSample
from probes.sdk import api_path, close_quietly, encode_body, make_client, make_http, open_stream, request_body, scrub
from probes.sse import SseReader
from probes.timing import StreamTrace, account
from probes.transport import TIMED_STREAM, TimedStream
from probes.watchdog import Watchdog
from probes.workloads import Prompt

__all__ = [  # the client's surface; the SDK helpers and classify_error are re-exported for probes/endpoint.py
    "Clock",
    "classify_error",
    "close_quietly",
    "encode_body",
    "make_client",
    "make_http",
    "request_body",
    "send_request",
    "send_turn",
]

Clock = Callable[[], float]
NOT_STREAMED_BODY_BYTES = 64 << 10  # of a non-streamed answer, read for its message
MAX_ERROR_CHARS = 2000


async def send_request(
    client: AsyncOpenAI,
    settings: RunSettings,
    prompt: Prompt,
    *,
    level_index: int,
    concurrency: int,
    index: int,
    level_start_s: float,
    clock: Clock = time.perf_counter,
    body: bytes | None = None,
    max_tokens: int | None = None,
) -> RequestSample:
    """Send one streamed request and return its sample; every failure is recorded, never raised (but cancel).

    `body` is the request's JSON prepared ahead (request_body + encode_body); built here when not given.
    `max_tokens` is the body's own when it differs from the settings' (a trace's output length): the overlength
    guard counts from it.
    """
    if body is None:
        body = encode_body(request_body(settings, prompt))
    exchange = await _exchanged(client, settings, body, clock, max_tokens, keep_text=False)
    return exchange.sample(level_index=level_index, concurrency=concurrency, index=index, level_start_s=level_start_s)


async def send_turn(
    client: AsyncOpenAI,
    settings: RunSettings,
    body: bytes,
    *,
    max_tokens: int,
    level_index: int,
    concurrency: int,
    index: int,
    level_start_s: float,
    clock: Clock = time.perf_counter,
) -> tuple[RequestSample, str]:
    """One turn of a session (chat messages in `body`): its sample and the answer's content text, as received."""
    exchange = await _exchanged(client, settings, body, clock, max_tokens, keep_text=True)
    sample = exchange.sample(level_index=level_index, concurrency=concurrency, index=index, level_start_s=level_start_s)
    return sample, exchange.text


async def _exchanged(
    client: AsyncOpenAI, settings: RunSettings, body: bytes, clock: Clock, max_tokens: int | None, *, keep_text: bool
) -> "_Exchange":
    exchange = _Exchange(settings, clock, max_tokens, keep_text=keep_text)
    try:
        await exchange.run(client, body)
    except Exception as exc:  # a probe never dies of one request (cancellation is a BaseException: it goes through)
        exchange.failed(exc)
    return exchange


class _Exchange:
    """One request's state: its trace, its watchdog, what the answer said, and how it failed."""

    def __init__(
        self, settings: RunSettings, clock: Clock, max_tokens: int | None = None, *, keep_text: bool = False
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.max_tokens = max_tokens or settings.max_tokens
        self.keep_text = keep_text
        self.text = ""
        self.trace = StreamTrace(sent_s=clock())
        self.wd = Watchdog(settings.timeouts, self.trace.sent_s, clock)
        self.http_status: int | None = None
        self.request_id: str | None = None
        self.finish: str | None = None
        self.failure: Failure | None = None

    async def run(self, client: AsyncOpenAI, body: bytes) -> None:
        """Send, then read the stream to its end, within the watchdog's limits."""
        async with asyncio.timeout(None) as cm:
            self.wd.arm(cm)
            try:
                async with open_stream(client, api_path(self.settings), body) as http:
                    await self._receive(http)
            finally:
                self.wd.disarm()

    async def _receive(self, http: httpx2.Response) -> None:
        self.http_status = http.status_code
        self.request_id = http.headers.get("x-request-id")
        await _require_stream(http)
        settings = self.settings
        overlength_at = self.max_tokens + settings.timeouts.overlength_extra_tokens
        sse = SseReader(
            self.trace, settings.api == ApiKind.CHAT, overlength_at, self.wd.first_token, keep_text=self.keep_text
        )
        timed = http.extensions.get(TIMED_STREAM)
        if isinstance(timed, TimedStream) and timed.clock is self.clock:
            self.trace.sent_s = sse.now = sse.last_event_s = timed.sent_s  # written to the socket: the send time
        if isinstance(timed, TimedStream) and not _encoded(http):
            await _read_lean(timed, sse, self.wd, lazy=not settings.continuous_usage_stats)
        else:
            await _read_per_chunk(http, sse, self.wd, self.clock)
        self._ended(sse)

    def _ended(self, sse: SseReader) -> None:
        """The body ended: it must have said so ([DONE] or a finish reason); keep the finish and the usage."""
        trace = self.trace
        if trace.end_s is None:
            trace.end_s = sse.now
        if not sse.done and sse.finish is None:
            raise RequestFailed(ErrorKind.STREAM_TRUNCATED, "the stream ended without a finish reason or [DONE]")
        self.finish = sse.finish
        self.text = sse.text()
        usage = sse.usage or {}
        if usage.get("prompt_tokens") is not None:
            trace.prompt_tokens = int(usage["prompt_tokens"])
        if usage.get("completion_tokens") is not None:
            trace.completion_tokens = int(usage["completion_tokens"])

    def failed(self, exc: Exception) -> None:
        """Record why the request failed, and when: the close's own times for a close without a response."""
        wd = self.wd
        if isinstance(exc, TimeoutError) and wd.kind is not None:
            failure = Failure(wd.kind, wd.message())
        else:
            failure = failure_of(exc)
        self.failure = failure
        if failure.http_status is not None:
            self.http_status = failure.http_status
        if failure.request_id is not None:
            self.request_id = failure.request_id
        self.trace.end_s = self.clock()
        closed = closed_without_response(exc)
        if closed is not None and closed.clock is self.clock:
            self.trace.sent_s, self.trace.end_s = closed.sent_s, closed.closed_s

    def sample(self, *, level_index: int, concurrency: int, index: int, level_start_s: float) -> RequestSample:
        """The request's sample: its timings (partial for a failure) and outcome."""
        trace, failure = self.trace, self.failure
        acc = account(trace, ok=failure is None)
        message = scrub(failure.message, self.settings)[:MAX_ERROR_CHARS] if failure and failure.message else None
        return RequestSample(
            level_index=level_index,
            concurrency=concurrency,
            index=index,
            start_s=trace.sent_s - level_start_s,
            ttft_ms=acc.ttft_ms,
            first_content_ms=acc.first_content_ms,
            reasoning_ms=acc.reasoning_ms,
            tpot_ms=acc.tpot_ms,
            e2e_ms=acc.e2e_ms,
            itl_ms=acc.itl_ms,
            chunk_ms=acc.chunk_ms,
            chunk_tokens=acc.chunk_tokens,
            input_tokens=trace.prompt_tokens,
            output_tokens=acc.output_tokens,
            reasoning_tokens=acc.reasoning_tokens,
            token_source=acc.token_source,
            finish_reason=self.finish,
            http_status=self.http_status,
            error_kind=failure.kind if failure else None,
            error=message,
            retry_after_s=failure.retry_after_s if failure else None,
            server_request_id=self.request_id,
        )


async def _require_stream(http: httpx2.Response) -> None:
    """A streamed answer, or RequestFailed(NOT_STREAMED) with the start of what came instead."""
    content_type = http.headers.get("content-type", "")
    if "text/event-stream" in content_type:
        return
    got = b""
    async for part in http.aiter_bytes():
        got += part
        if len(got) > NOT_STREAMED_BODY_BYTES:
            break
    raise RequestFailed(
        ErrorKind.NOT_STREAMED, f"asked for a stream, got {content_type or 'no content type'}: {got[:200]!r}"
    )


def _encoded(http: httpx2.Response) -> bool:
    return http.headers.get("content-encoding", "identity").lower() not in ("identity", "")


async def _read_lean(stream: TimedStream, sse: SseReader, wd: Watchdog, lazy: bool) -> None:
    """Read a stream of the lean transport: parse read by read until the first output token, then lazily.

    After the first token the transport no longer wakes this task on every read: it stamps and queues the bytes, and
    counts SSE data lines; the task wakes when the body ends (or fails) or when enough data lines came to possibly
    pass the overlength guard, and parses everything queued in one go. Stalls are seen through the transport's time
    of the last data line. With continuous usage (tokens per chunk known only from the JSON) it stays eager.
    """
    wd.activity = lambda: max(sse.last_event_s, stream.last_data_s)
    bulk = False
    while True:
        reads = stream.take()
        if reads:
            if bulk:
                sse.feed_bulk(reads)
            else:
                for now, data in reads:
                    sse.feed(now, data)
                bulk = lazy and sse.first_token_s is not None
        if stream.ended():  # raises the connection's error, if any
            return
        wake_at = stream.events + max(1, sse.overlength_at + 1 - sse.produced()) if bulk else None
        await stream.wait(wake_at)


async def _read_per_chunk(http: httpx2.Response, sse: SseReader, wd: Watchdog, clock: Clock) -> None:
    """Read the body of any other httpx2 transport: each read is timed as it returns, then parsed."""
    wd.activity = lambda: sse.last_event_s
    async for data in http.aiter_bytes():
        sse.feed(clock(), data)
