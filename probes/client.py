"""One streamed request through the openai SDK's raw streaming response: timestamps as bytes arrive, then parsing."""

import asyncio
import contextlib
import json
import ssl
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI
from openai._constants import RAW_RESPONSE_HEADER  # the SDK's own marker for an unread streamed response

from probes.config import ApiKind, RunSettings, Timeouts
from probes.models import ErrorKind, RequestSample
from probes.timing import StreamTrace, account
from probes.transport import TIMED_STREAM, LeanTransport, TimedStream
from probes.workloads import Prompt

Clock = Callable[[], float]
NOT_STREAMED_BODY_BYTES = 64 << 10
NO_KEY = "EMPTY"  # what OpenAI-compatible servers without auth expect when the SDK insists on a key


class _Failed(Exception):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def make_http(
    settings: RunSettings, max_connections: int, transport: httpx2.AsyncBaseTransport | None = None
) -> httpx2.AsyncClient:
    """The HTTP client under the SDK: the lean transport (or the one given), no read timeout, no proxy from env.

    The probe's own watchdog times the stream (TTFT and stall timeouts).
    """
    timeouts = settings.timeouts
    timeout = httpx2.Timeout(connect=timeouts.connect_s, read=None, write=timeouts.ttft_s, pool=None)
    limits = httpx2.Limits(max_connections=max_connections + 4, max_keepalive_connections=max_connections + 4)
    return httpx2.AsyncClient(
        transport=transport or LeanTransport(), timeout=timeout, limits=limits, trust_env=False, follow_redirects=False
    )


def make_client(settings: RunSettings, http: httpx2.AsyncClient) -> AsyncOpenAI:
    """An AsyncOpenAI client on that HTTP client, with the SDK's automatic retries off."""
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    return AsyncOpenAI(
        base_url=settings.base_url, api_key=key or NO_KEY, max_retries=0, timeout=http.timeout, http_client=http
    )


def auth_headers(settings: RunSettings) -> dict[str, str]:
    """The bearer header for plain HTTP calls (models list, metrics); empty without a key."""
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    return {"Authorization": f"Bearer {key}"} if key else {}


def scrub(text: str, settings: RunSettings) -> str:
    """Remove the API key from a message (a server might echo it)."""
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    return text.replace(key, "***") if key else text


class _Watchdog:
    """Ends a request whose first token is late (TTFT timeout) or whose stream stalls, with one lazy timer."""

    def __init__(self, timeouts: Timeouts, sent_s: float, clock: Clock) -> None:
        self.ttft_s = timeouts.ttft_s
        self.stall_s = timeouts.stall_s
        self.sent_s = sent_s
        self.clock = clock
        self.first_token = False
        self.last_event_s = sent_s
        self.kind: ErrorKind | None = None
        self.cm: asyncio.Timeout | None = None
        self.handle: asyncio.TimerHandle | None = None
        self.loop = asyncio.get_running_loop()
        self.stream: TimedStream | None = None  # once lazy: the transport knows when the last data line came

    def arm(self, cm: asyncio.Timeout) -> None:
        self.cm = cm
        self.handle = self.loop.call_later(self.ttft_s, self._check)

    def _check(self) -> None:
        now = self.clock()
        if self.first_token:
            last = self.last_event_s if self.stream is None else max(self.last_event_s, self.stream.last_data_s)
            due = last + self.stall_s
            kind = ErrorKind.STALL_TIMEOUT
        else:
            due = self.sent_s + self.ttft_s
            kind = ErrorKind.TTFT_TIMEOUT
        if now >= due - 0.0005:
            self.kind = kind
            assert self.cm is not None
            self.cm.reschedule(self.loop.time())
            self.handle = None
        else:
            self.handle = self.loop.call_later(due - now, self._check)

    def first(self, now: float) -> None:
        if not self.first_token:
            self.first_token = True
            if self.handle is not None:
                self.handle.cancel()
            self.handle = self.loop.call_later(self.stall_s, self._check)

    def disarm(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


def classify_error(exc: BaseException) -> tuple[ErrorKind, str]:
    causes: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(causes) < 8:
        causes.append(cur)
        cur = cur.__cause__ or cur.__context__
    text = "; ".join(dict.fromkeys(str(c) for c in causes if str(c)))
    if any(isinstance(c, ssl.SSLError) for c in causes) or "CERTIFICATE" in text.upper():
        return ErrorKind.TLS, text or "TLS error"
    if any(isinstance(c, httpx2.ConnectTimeout) for c in causes):
        return ErrorKind.CONNECT_TIMEOUT, text or "connect timeout"
    if any(isinstance(c, httpx2.ConnectError) for c in causes):
        return ErrorKind.CONNECT, text or "connection failed"
    if isinstance(exc, openai.APITimeoutError):
        return ErrorKind.CONNECT_TIMEOUT, text or "timeout"
    if any(isinstance(c, (httpx2.ReadError, httpx2.WriteError)) for c in causes):
        return ErrorKind.STREAM_RESET, text or "connection reset"
    if any(isinstance(c, httpx2.RemoteProtocolError) for c in causes):
        return ErrorKind.STREAM_TRUNCATED, text or "the server closed the connection early"
    if isinstance(exc, openai.APIConnectionError):
        return ErrorKind.CONNECT, text or "connection error"
    return ErrorKind.CLIENT_ERROR, f"{type(exc).__name__}: {exc}"


def status_kind(status: int) -> ErrorKind:
    """The error kind of an HTTP status."""
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 404:
        return ErrorKind.NOT_FOUND
    if status == 429:
        return ErrorKind.RATE_LIMITED
    if status >= 500:
        return ErrorKind.SERVER_ERROR
    return ErrorKind.HTTP_ERROR


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None


async def _timed_fallback(http: httpx2.Response, clock: Clock) -> AsyncIterator[tuple[float, bytes]]:
    async for data in http.aiter_bytes():
        yield clock(), data


def request_body(settings: RunSettings, prompt: Prompt) -> dict[str, Any]:
    """The JSON body of one streamed request."""
    body: dict[str, Any] = {
        "model": settings.model,
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
        "stream": True,
    }
    if settings.include_usage:
        options: dict[str, Any] = {"include_usage": True}
        if settings.continuous_usage_stats:
            options["continuous_usage_stats"] = True
        body["stream_options"] = options
    if settings.ignore_eos:
        body["ignore_eos"] = True
    if settings.api == ApiKind.CHAT:
        body["messages"] = prompt.messages()
    else:
        body["prompt"] = prompt.text()
    return body


def encode_body(body: dict[str, Any]) -> bytes:
    """The request body as JSON bytes, prepared ahead of sending."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


_RAW_STREAM_OPTIONS: Any = {"headers": {RAW_RESPONSE_HEADER: "stream"}}


@contextlib.asynccontextmanager
async def open_stream(client: AsyncOpenAI, path: str, body: dict[str, Any] | bytes) -> AsyncIterator[httpx2.Response]:
    """POST through the SDK and hand back the raw, unread httpx2 response.

    The SDK still does auth, headers and status errors (openai.APIStatusError, no retries); there is no model object
    per chunk and none of create()'s per-request type transforms. A body given as bytes (JSON prepared ahead) is
    sent as it is.
    """
    content = body if isinstance(body, bytes) else encode_body(body)
    http = await client.post(path, cast_to=httpx2.Response, content=content, stream=True, options=_RAW_STREAM_OPTIONS)
    try:
        yield http
    finally:
        await http.aclose()


class _SSE:
    """Splits SSE events out of the body and records each output chunk in the trace.

    An event's time is the arrival of the read that completed it. feed() parses read by read; feed_bulk() parses
    many reads at once (one json.loads over all their events), for the lazy part of a stream.
    """

    def __init__(self, trace: StreamTrace, chat: bool, overlength_at: int, wd: _Watchdog) -> None:
        self.trace = trace
        self.chat = chat
        self.overlength_at = overlength_at
        self.wd = wd
        self.buf = b""
        self.event_name = b""
        self.done = False
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None
        self.now = trace.sent_s

    def _split(self, data: bytes) -> list[bytes]:
        if self.buf:
            data = self.buf + data
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        events = data.split(b"\n\n")
        self.buf = events.pop()
        return events

    def _payload(self, event: bytes) -> bytes | None:
        if event.startswith(b"data:") and b"\n" not in event:  # the usual event: one data line
            return event[5:].lstrip(b" ")
        payload = None
        for line in event.split(b"\n"):
            if line.startswith(b"data:"):
                piece = line[5:].lstrip(b" ")
                payload = piece if payload is None else payload + b"\n" + piece
            elif line.startswith(b"event:"):
                self.event_name = line[6:].strip()
        return payload

    def feed(self, now: float, data: bytes) -> None:
        """One read, parsed now."""
        self.now = now
        for event in self._split(data):
            payload = self._payload(event)
            if payload is not None:
                self._event(now, payload, self._decode(payload), self.event_name)

    def feed_bulk(self, reads: list[tuple[float, bytes]]) -> None:
        """Many reads: events gathered first, their JSON decoded in one call (per event if that fails)."""
        found: list[tuple[float, bytes, bytes]] = []
        for now, data in reads:
            self.now = now
            for event in self._split(data):
                payload = self._payload(event)
                if payload is not None:
                    found.append((now, payload, self.event_name))
        if not found:
            return
        objs: list[Any] | None = None
        body = [p for _, p, _ in found if p != b"[DONE]"]
        if body:
            with contextlib.suppress(ValueError):
                objs = json.loads(b"[" + b",".join(body) + b"]")
            if objs is not None and len(objs) != len(body):
                objs = None
        k = 0
        for now, payload, name in found:
            if payload == b"[DONE]":
                self._event(now, payload, None, name)
                continue
            obj = objs[k] if objs is not None else self._decode(payload)
            k += 1
            self._event(now, payload, obj, name)

    @staticmethod
    def _decode(payload: bytes) -> Any:
        if payload == b"[DONE]":
            return None
        try:
            return json.loads(payload)
        except ValueError:
            raise _Failed(ErrorKind.MALFORMED_SSE, f"a data line is not JSON: {payload[:120]!r}") from None

    def _event(self, now: float, payload: bytes, obj: Any, event_name: bytes) -> None:
        trace = self.trace
        wd = self.wd
        wd.last_event_s = now
        if payload == b"[DONE]":
            self.done = True
            trace.end_s = now
            return
        if not isinstance(obj, dict):
            raise _Failed(ErrorKind.MALFORMED_SSE, f"a data line is not an object: {payload[:120]!r}")
        choices = obj.get("choices")
        if (obj.get("error") is not None and not choices) or event_name == b"error":
            err = obj.get("error", obj)
            msg = err.get("message", err) if isinstance(err, dict) else err
            raise _Failed(ErrorKind.STREAM_ERROR, f"error inside the stream: {msg}")
        added = False
        chunk_cum = trace.chunk_cum_tokens
        if choices:
            c0 = choices[0]
            if self.chat:
                delta = c0.get("delta") or {}
                content = delta.get("content")
                thought = delta.get("reasoning_content") or delta.get("reasoning")
            else:
                content = c0.get("text")
                thought = None
            if content or thought:
                trace.chunk_s.append(now)
                trace.chunk_chars.append(len(content or "") + len(thought or ""))
                trace.chunk_reasoning.append(not content)
                chunk_cum.append(None)
                added = True
                if not wd.first_token:
                    wd.first(now)
            fr = c0.get("finish_reason")
            if fr:
                self.finish = fr
        usage = obj.get("usage")
        if usage:
            self.usage = usage
            if added:
                chunk_cum[-1] = usage.get("completion_tokens")
        produced = len(trace.chunk_s)
        if chunk_cum and chunk_cum[-1] is not None:
            produced = int(chunk_cum[-1])
        if produced > self.overlength_at:
            raise _Failed(ErrorKind.OVERLENGTH, f"the stream ran past max_tokens ({produced} > {self.overlength_at})")

    def produced(self) -> int:
        """Output tokens so far (continuous usage when the server sends it, else chunks)."""
        cum = self.trace.chunk_cum_tokens
        if cum and cum[-1] is not None:
            return int(cum[-1])
        return len(self.trace.chunk_s)


async def _read_lean(stream: TimedStream, sse: _SSE, lazy: bool) -> None:
    """Read a stream of the lean transport: parse read by read until the first output token, then lazily.

    After the first token the transport no longer wakes this task on every read: it stamps and queues the bytes, and
    counts SSE data lines; the task wakes when the body ends (or fails) or when enough data lines came to possibly
    pass the overlength guard, and parses everything queued in one go. Stalls are seen through the transport's time
    of the last data line. With continuous usage (tokens per chunk known only from the JSON) it stays eager.
    """
    sse.wd.stream = stream
    first = False
    while True:
        reads = stream.take()
        if reads:
            if first:
                sse.feed_bulk(reads)
            else:
                for now, data in reads:
                    sse.feed(now, data)
                first = lazy and sse.wd.first_token
        if stream.ended():  # raises the connection's error, if any
            return
        wake_at = None
        if first:
            wake_at = stream.events + max(1, sse.overlength_at + 1 - sse.produced())
        await stream.wait(wake_at)


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
) -> RequestSample:
    """Send one streamed request and return its sample; every failure is recorded, never raised (but cancel).

    `body` is the request's JSON prepared ahead (request_body + encode_body); built here when not given.
    """
    chat = settings.api == ApiKind.CHAT
    path = "/chat/completions" if chat else "/completions"
    if body is None:
        body = encode_body(request_body(settings, prompt))
    overlength_at = settings.max_tokens + settings.timeouts.overlength_extra_tokens
    sent_s = clock()
    trace = StreamTrace(sent_s=sent_s)
    wd = _Watchdog(settings.timeouts, sent_s, clock)
    kind: ErrorKind | None = None
    message: str | None = None
    status: int | None = None
    retry_after: float | None = None
    request_id: str | None = None
    finish: str | None = None
    usage_seen: dict[str, Any] | None = None
    try:
        async with asyncio.timeout(None) as cm:
            wd.arm(cm)
            try:
                async with open_stream(client, path, body) as http:
                    status = http.status_code
                    request_id = http.headers.get("x-request-id")
                    ctype = http.headers.get("content-type", "")
                    if "text/event-stream" not in ctype:
                        got = b""
                        async for part in http.aiter_bytes():
                            got += part
                            if len(got) > NOT_STREAMED_BODY_BYTES:
                                break
                        raise _Failed(
                            ErrorKind.NOT_STREAMED,
                            f"asked for a stream, got {ctype or 'no content type'}: {got[:200]!r}",
                        )
                    sse = _SSE(trace, chat, overlength_at, wd)
                    timed = http.extensions.get(TIMED_STREAM)
                    if isinstance(timed, TimedStream) and timed.clock is clock:
                        sent_s = trace.sent_s = timed.sent_s  # written to the socket: the send time
                        sse.now = sent_s
                    encoded = http.headers.get("content-encoding", "identity").lower() not in ("identity", "")
                    if isinstance(timed, TimedStream) and not encoded:
                        await _read_lean(timed, sse, lazy=not settings.continuous_usage_stats)
                    else:
                        async for now, data in _timed_fallback(http, clock):
                            sse.feed(now, data)
                    if trace.end_s is None:
                        trace.end_s = sse.now
                    if not sse.done and sse.finish is None:
                        raise _Failed(ErrorKind.STREAM_TRUNCATED, "the stream ended without a finish reason or [DONE]")
                    finish, usage_seen = sse.finish, sse.usage
            finally:
                wd.disarm()
    except _Failed as exc:
        kind, message = exc.kind, str(exc)
    except TimeoutError:
        if wd.kind is not None:
            kind = wd.kind
            limit = settings.timeouts.ttft_s if kind == ErrorKind.TTFT_TIMEOUT else settings.timeouts.stall_s
            what = "no first token" if kind == ErrorKind.TTFT_TIMEOUT else "no data between two events"
            message = f"{what} within {limit:g} s"
        else:
            kind, message = classify_error(TimeoutError("timeout"))
    except openai.APIStatusError as exc:
        status = exc.status_code
        kind = status_kind(status)
        retry_after = _retry_after(exc.response.headers.get("retry-after"))
        request_id = exc.response.headers.get("x-request-id")
        message = f"HTTP {status}: {exc.message}"
    except (openai.APIConnectionError, httpx2.HTTPError, OSError) as exc:
        kind, message = classify_error(exc)
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a probe never dies of one request
        kind, message = ErrorKind.CLIENT_ERROR, f"{type(exc).__name__}: {exc}"
    if kind is not None:
        trace.end_s = clock()
    if usage_seen:
        if usage_seen.get("prompt_tokens") is not None:
            trace.prompt_tokens = int(usage_seen["prompt_tokens"])
        if usage_seen.get("completion_tokens") is not None:
            trace.completion_tokens = int(usage_seen["completion_tokens"])
    acc = account(trace, ok=kind is None)
    return RequestSample(
        level_index=level_index,
        concurrency=concurrency,
        index=index,
        start_s=sent_s - level_start_s,
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
        finish_reason=finish,
        http_status=status,
        error_kind=kind,
        error=scrub(message, settings)[:2000] if message else None,
        retry_after_s=retry_after,
        server_request_id=request_id,
    )


async def close_quietly(client: AsyncOpenAI) -> None:
    """Close the client, ignoring errors from connections the server already dropped."""
    with contextlib.suppress(Exception):
        await client.close()
