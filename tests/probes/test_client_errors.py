"""One request through the SDK on httpx2.MockTransport, no socket: each scripted answer ends with its error kind."""

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest

from probes.client import make_client, make_http, send_request
from probes.config import RunSettings, Timeouts
from probes.http11 import NO_RESPONSE, ClosedWithoutResponse
from probes.models import ErrorKind, RequestSample, TokenSource
from probes.workloads import Prompt

KEY = "sk-mock-SECRET-42"
SSE = {"content-type": "text/event-stream"}


class Script(httpx2.AsyncByteStream):
    """A body that yields its pieces, then raises `error` (or ends)."""

    def __init__(self, pieces: list[bytes], error: Exception | None = None) -> None:
        self.pieces = pieces
        self.error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece
        if self.error is not None:
            raise self.error


def content(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"delta": {"content": text}, "finish_reason": None}]}).encode() + b"\n\n"


FINISH = b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\n'
USAGE = b'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}\n\n'
DONE = b"data: [DONE]\n\n"


def error_body(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "x", "code": None}}).encode()


def send(handler: Callable[[httpx2.Request], Any], clock: Callable[[], float] | None = None) -> RequestSample:
    settings = RunSettings(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        api_key=KEY,
        timeouts=Timeouts(connect_s=1, ttft_s=0.2, stall_s=0.2),
        max_tokens=8,
        temperature=0.0,
    )

    async def main() -> RequestSample:
        client = make_client(settings, make_http(settings, 1, httpx2.MockTransport(handler)))
        kwargs: dict[str, Any] = {} if clock is None else {"clock": clock}
        try:
            return await send_request(
                client, settings, Prompt("hi"), level_index=0, concurrency=1, index=0, level_start_s=0.0, **kwargs
            )
        finally:
            await client.close()

    return asyncio.run(main())


def answer(status: int, body: bytes = b"", headers: dict[str, str] | None = None, stream: Script | None = None):
    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert json.loads(request.content)["stream"] is True
        if stream is not None:
            return httpx2.Response(status, headers=headers or SSE, stream=stream)
        return httpx2.Response(status, headers=headers or {"content-type": "application/json"}, content=body)

    return handler


def test_a_complete_stream_is_a_sample_with_usage() -> None:
    s = send(answer(200, stream=Script([content("a"), content("b") + FINISH, USAGE + DONE])))
    assert s.ok and s.output_tokens == 2 and s.input_tokens == 5 and s.token_source == TokenSource.USAGE
    assert s.finish_reason == "stop" and s.http_status == 200 and len(s.chunk_ms) == 2


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, ErrorKind.AUTH),
        (403, ErrorKind.AUTH),
        (404, ErrorKind.NOT_FOUND),
        (400, ErrorKind.HTTP_ERROR),
        (429, ErrorKind.RATE_LIMITED),
        (500, ErrorKind.SERVER_ERROR),
        (503, ErrorKind.SERVER_ERROR),
    ],
)
def test_http_errors_with_bodies(status: int, kind: ErrorKind) -> None:
    headers = {"content-type": "application/json", "retry-after": "2", "x-request-id": "req-9"}
    s = send(answer(status, error_body(f"refused, key {KEY}"), headers))
    assert s.error_kind == kind and s.http_status == status and s.server_request_id == "req-9"
    assert s.error is not None and s.error.startswith(f"HTTP {status}") and "refused" in s.error
    assert KEY not in s.error and "***" in s.error  # a server that echoes the key does not get it stored
    assert s.retry_after_s == 2.0 and s.ttft_ms is None and s.e2e_ms is not None


@pytest.mark.parametrize(
    ("pieces", "error", "kind", "partial"),
    [
        ([content("a"), content("b")], None, ErrorKind.STREAM_TRUNCATED, True),  # ends without finish or [DONE]
        ([content("a")], httpx2.RemoteProtocolError("peer closed connection"), ErrorKind.STREAM_TRUNCATED, True),
        ([content("a")], httpx2.ReadError("connection reset by peer"), ErrorKind.STREAM_RESET, True),
        ([content("a"), b'data: {"choices": [\n\n'], None, ErrorKind.MALFORMED_SSE, True),
        ([content("a"), b'data: {"error": {"message": "OOM"}}\n\n'], None, ErrorKind.STREAM_ERROR, True),
        ([b"event: error\n", b'data: {"message": "overloaded"}\n\n'], None, ErrorKind.STREAM_ERROR, False),
        ([content("a")] * 30, None, ErrorKind.OVERLENGTH, True),  # max_tokens 8 + 16 extra
    ],
)
def test_streams_that_go_wrong(pieces: list[bytes], error: Exception | None, kind: ErrorKind, partial: bool) -> None:
    s = send(answer(200, stream=Script(pieces, error)))
    assert s.error_kind == kind, s.error
    assert s.http_status == 200 and s.tpot_ms is None and s.e2e_ms is not None
    assert (s.ttft_ms is not None) == partial and (len(s.chunk_ms) > 0) == partial  # what came first is kept


def test_a_json_body_where_a_stream_was_asked() -> None:
    s = send(answer(200, b'{"choices": [{"message": {"content": "hi"}}]}'))
    assert s.error_kind == ErrorKind.NOT_STREAMED and "application/json" in (s.error or "")


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (httpx2.ConnectError("connection refused"), ErrorKind.CONNECT),
        (httpx2.ConnectTimeout("connect timed out"), ErrorKind.CONNECT_TIMEOUT),
        (httpx2.RemoteProtocolError(NO_RESPONSE), ErrorKind.CLOSED_WITHOUT_RESPONSE),  # httpcore's words
        (httpx2.ReadError("reset"), ErrorKind.STREAM_RESET),
        (ValueError("a bug"), ErrorKind.CLIENT_ERROR),
    ],
)
def test_transport_errors(error: Exception, kind: ErrorKind) -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise error

    s = send(handler)
    assert s.error_kind == kind, s.error
    assert s.http_status is None and s.ttft_ms is None


def test_a_close_without_response_keeps_the_transports_send_and_close_times() -> None:
    ticks = iter(range(100, 10_000))

    def clock() -> float:
        return float(next(ticks))

    def handler(request: httpx2.Request) -> httpx2.Response:
        raise ClosedWithoutResponse(NO_RESPONSE, sent_s=1000.0, closed_s=1030.5, clock=clock)

    s = send(handler, clock=clock)
    assert s.error_kind == ErrorKind.CLOSED_WITHOUT_RESPONSE
    assert s.e2e_ms == pytest.approx(30_500.0) and s.start_s == 1000.0  # from the write to the close


def test_no_headers_in_time_is_a_ttft_timeout() -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        await asyncio.Event().wait()  # never answers
        raise AssertionError

    s = send(handler)
    assert s.error_kind == ErrorKind.TTFT_TIMEOUT and "no first token within 0.2 s" in (s.error or "")
    assert s.e2e_ms is not None and s.e2e_ms >= 190
