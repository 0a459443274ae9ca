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


def make_http(settings: RunSettings, max_connections: int,
              transport: httpx2.AsyncBaseTransport | None = None) -> httpx2.AsyncClient:
    """The HTTP client under the SDK: the lean transport (or the one given), no read timeout, no proxy from env.

    The probe's own watchdog times the stream (TTFT and stall timeouts).
    """
    timeouts = settings.timeouts
    timeout = httpx2.Timeout(connect=timeouts.connect_s, read=None, write=timeouts.ttft_s, pool=None)
    limits = httpx2.Limits(max_connections=max_connections + 4, max_keepalive_connections=max_connections + 4)
    return httpx2.AsyncClient(transport=transport or LeanTransport(), timeout=timeout, limits=limits,
                              trust_env=False, follow_redirects=False)


def make_client(settings: RunSettings, http: httpx2.AsyncClient) -> AsyncOpenAI:
    """An AsyncOpenAI client on that HTTP client, with the SDK's automatic retries off."""
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    return AsyncOpenAI(base_url=settings.base_url, api_key=key or NO_KEY, max_retries=0, timeout=http.timeout,
                       http_client=http)


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

    def arm(self, cm: asyncio.Timeout) -> None:
        self.cm = cm
        self.handle = self.loop.call_later(self.ttft_s, self._check)

    def _check(self) -> None:
        now = self.clock()
        if self.first_token:
            due = self.last_event_s + self.stall_s
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
    causes = []
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
        "model": settings.model, "max_tokens": settings.max_tokens, "temperature": settings.temperature,
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


@contextlib.asynccontextmanager
async def open_stream(client: AsyncOpenAI, path: str, body: dict[str, Any]) -> AsyncIterator[httpx2.Response]:
    """POST through the SDK and hand back the raw, unread httpx2 response.

    The SDK still does auth, headers and status errors (openai.APIStatusError, no retries); there is no model object
    per chunk and none of create()'s per-request type transforms.
    """
    http = await client.post(path, cast_to=httpx2.Response, body=body, stream=True,
                             options={"headers": {RAW_RESPONSE_HEADER: "stream"}})
    try:
        yield http
    finally:
        await http.aclose()


async def send_request(client: AsyncOpenAI, settings: RunSettings, prompt: Prompt, *, level_index: int,
                       concurrency: int, index: int, level_start_s: float,
                       clock: Clock = time.perf_counter) -> RequestSample:
    """Send one streamed request and return its sample; every failure is recorded, never raised (but cancel)."""
    chat = settings.api == ApiKind.CHAT
    path = "/chat/completions" if chat else "/completions"
    body = request_body(settings, prompt)
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
    done = False
    loads = json.loads
    chunk_s = trace.chunk_s
    chunk_chars = trace.chunk_chars
    chunk_reasoning = trace.chunk_reasoning
    chunk_cum = trace.chunk_cum_tokens
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
                        raise _Failed(ErrorKind.NOT_STREAMED,
                                      f"asked for a stream, got {ctype or 'no content type'}: {got[:200]!r}")
                    buf = b""
                    event_name = b""
                    now = sent_s
                    timed = http.extensions.get(TIMED_STREAM)
                    encoded = http.headers.get("content-encoding", "identity").lower() not in ("identity", "")
                    if isinstance(timed, TimedStream) and not encoded:
                        source = timed.timed()  # arrival times taken by the transport as bytes came in
                    else:
                        source = _timed_fallback(http, clock)
                    async for now, data in source:
                        if buf:
                            data = buf + data
                        if b"\r" in data:
                            data = data.replace(b"\r\n", b"\n")
                        events = data.split(b"\n\n")
                        buf = events.pop()
                        for event in events:
                            payload = None
                            for line in event.split(b"\n"):
                                if line.startswith(b"data:"):
                                    piece = line[5:].lstrip(b" ")
                                    payload = piece if payload is None else payload + b"\n" + piece
                                elif line.startswith(b"event:"):
                                    event_name = line[6:].strip()
                            if payload is None:
                                continue
                            wd.last_event_s = now
                            if payload == b"[DONE]":
                                done = True
                                trace.end_s = now
                                continue
                            try:
                                obj = loads(payload)
                            except ValueError:
                                raise _Failed(ErrorKind.MALFORMED_SSE,
                                              f"a data line is not JSON: {payload[:120]!r}") from None
                            if not isinstance(obj, dict):
                                raise _Failed(ErrorKind.MALFORMED_SSE,
                                              f"a data line is not an object: {payload[:120]!r}")
                            choices = obj.get("choices")
                            if (obj.get("error") is not None and not choices) or event_name == b"error":
                                err = obj.get("error", obj)
                                msg = err.get("message", err) if isinstance(err, dict) else err
                                raise _Failed(ErrorKind.STREAM_ERROR, f"error inside the stream: {msg}")
                            added = False
                            if choices:
                                c0 = choices[0]
                                if chat:
                                    delta = c0.get("delta") or {}
                                    content = delta.get("content")
                                    thought = delta.get("reasoning_content") or delta.get("reasoning")
                                else:
                                    content = c0.get("text")
                                    thought = None
                                if content or thought:
                                    chunk_s.append(now)
                                    chunk_chars.append(len(content or "") + len(thought or ""))
                                    chunk_reasoning.append(not content)
                                    chunk_cum.append(None)
                                    added = True
                                    if not wd.first_token:
                                        wd.first(now)
                                fr = c0.get("finish_reason")
                                if fr:
                                    finish = fr
                            usage = obj.get("usage")
                            if usage:
                                usage_seen = usage
                                if added:
                                    chunk_cum[-1] = usage.get("completion_tokens")
                            produced = len(chunk_s)
                            if chunk_cum and chunk_cum[-1] is not None:
                                produced = int(chunk_cum[-1])
                            if produced > overlength_at:
                                raise _Failed(ErrorKind.OVERLENGTH,
                                              f"the stream ran past max_tokens ({produced} > {overlength_at})")
                    if trace.end_s is None:
                        trace.end_s = now
                    if not done and finish is None:
                        raise _Failed(ErrorKind.STREAM_TRUNCATED, "the stream ended without a finish reason or [DONE]")
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
        level_index=level_index, concurrency=concurrency, index=index, start_s=sent_s - level_start_s,
        ttft_ms=acc.ttft_ms, first_content_ms=acc.first_content_ms, reasoning_ms=acc.reasoning_ms,
        tpot_ms=acc.tpot_ms, e2e_ms=acc.e2e_ms, itl_ms=acc.itl_ms, chunk_ms=acc.chunk_ms,
        chunk_tokens=acc.chunk_tokens, input_tokens=trace.prompt_tokens, output_tokens=acc.output_tokens,
        reasoning_tokens=acc.reasoning_tokens, token_source=acc.token_source, finish_reason=finish,
        http_status=status, error_kind=kind, error=scrub(message, settings)[:2000] if message else None,
        retry_after_s=retry_after, server_request_id=request_id,
    )


async def close_quietly(client: AsyncOpenAI) -> None:
    """Close the client, ignoring errors from connections the server already dropped."""
    with contextlib.suppress(Exception):
        await client.close()
