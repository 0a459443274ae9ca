"""No silent re-sends: a request goes twice only if its connection was already closed; any other close is counted."""

import asyncio
import select
import socket
import time
from collections.abc import Callable

import httpx2
import pytest

from fakeserver import Behaviour, serve_in_thread
from probes.client import make_client, make_http, send_request
from probes.connection import Connection, SockTransport
from probes.http11 import ClosedWithoutResponse
from probes.models import ErrorKind, RequestSample
from probes.runner import run_probe
from probes.transport import STALE_CLOSE_WINDOW_S, LeanTransport, Origin
from probes.workloads import Prompt

from .conftest import settings_for

HOLD_MS = 150  # the server holds each faulted request this long, then closes without a byte of answer
OK = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"
URL = "http://scripted.test:8000/v1/chat/completions"


# -- against the test server ---------------------------------------------------------------------------------------


def test_a_server_that_closes_held_requests_without_headers_gets_each_request_once() -> None:
    behaviour = f"fake:fault=close_no_headers,fault_every=2,ttft_ms={HOLD_MS},tokens=4"
    with serve_in_thread(defaults=Behaviour(ttft_ms=20, tpot_ms=2, tokens=4)) as server:
        settings = settings_for(server, behaviour, concurrency=(4,), requests_per_level=8, scrape_metrics=False)
        result = asyncio.run(run_probe(settings))
        received = server.counters.requests
    assert received == len(result.samples) == 8  # nothing re-sent behind the figures
    failed = [s for s in result.samples if not s.ok]
    assert len(failed) == 4 and all(s.error_kind == ErrorKind.CLOSED_WITHOUT_RESPONSE for s in failed)
    assert result.levels[0].errors == {"closed_without_response": 4} and result.levels[0].completed == 4
    for s in failed:  # with its timings: from the write to the close
        assert s.e2e_ms is not None and HOLD_MS - 5 <= s.e2e_ms < 600, s.e2e_ms
        assert s.ttft_ms is None and s.http_status is None and "closed the connection" in (s.error or "")


def test_a_keep_alive_connection_the_server_already_closed_is_not_written_to() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=3)) as server:
        settings = settings_for(server)

        async def main() -> tuple[RequestSample, RequestSample, int]:
            lean = LeanTransport()
            client = make_client(settings, make_http(settings, 1, lean))
            first = await one(client, settings)
            (idle,) = lean.idle_connections(settings.base_url)
            server.close_idle_connections()
            # Block this loop (no await) until the close reached the client's socket: the client's reader must not
            # see it first, so the transport meets a connection that looks idle and is closed.
            wait_readable(idle)
            assert not idle.closed
            second = await one(client, settings)
            await client.close()
            return first, second, server.counters.requests

        first, second, received = asyncio.run(main())
    assert first.ok and second.ok, second.error
    assert received == 2  # counted once by the server: the dead connection got nothing


def one(client, settings) -> "asyncio.Future[RequestSample]":
    return send_request(client, settings, Prompt("hi"), level_index=0, concurrency=1, index=0, level_start_s=0.0)


def wait_readable(conn: Connection, timeout_s: float = 5.0) -> None:
    sock = conn.transport.get_extra_info("socket")
    deadline = time.monotonic() + timeout_s
    while not select.select([sock], [], [], 0.01)[0]:
        assert time.monotonic() < deadline, "the server's close never reached the client"


def test_the_peers_close_is_seen_on_the_socket_before_the_loop_reads_it() -> None:
    async def main() -> list[bool]:
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        conn = Connection(time.perf_counter)
        transport = SockTransport(asyncio.get_running_loop(), ours, conn, kernel_ts=False)
        seen = [transport.peer_closed(), conn.usable()]
        theirs.close()  # no await from here: the loop has no chance to read the close
        seen += [transport.peer_closed(), conn.usable(), conn.closed]
        transport.abort()
        return seen

    assert asyncio.run(main()) == [False, True, True, False, False]


# -- scripted connections: the re-send rule on its own, on a fake clock --------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


class Scripted(asyncio.Transport):
    """A connection that answers, closes or resets each write `after_s` later on the fake clock."""

    def __init__(self, conn: Connection, clock: FakeClock, action: str, after_s: float) -> None:
        super().__init__()
        self.conn, self.clock, self.action, self.after_s = conn, clock, action, after_s
        self.writes: list[bytes] = []
        self.closed = False
        conn.connection_made(self)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))
        asyncio.get_running_loop().call_soon(self._play)

    def _play(self) -> None:
        self.clock.now_s += self.after_s
        if self.action == "answer":
            self.conn.data_received(OK)
        else:
            self._lose(ConnectionResetError("reset by peer") if self.action == "reset" else None)

    def _lose(self, exc: Exception | None) -> None:
        if not self.closed:
            self.closed = True
            self.conn.connection_lost(exc)

    def abort(self) -> None:
        self._lose(None)

    def close(self) -> None:
        self._lose(None)

    def is_closing(self) -> bool:
        return self.closed


def scripted(*plans: tuple[str, float]) -> tuple[LeanTransport, list[Scripted], FakeClock]:
    """A transport whose n-th connection follows the n-th plan (action, seconds after the write)."""
    clock = FakeClock()
    opened: list[Scripted] = []
    queue = list(plans)

    async def opener(key: Origin, conn: Connection) -> None:
        action, after_s = queue.pop(0)
        opened.append(Scripted(conn, clock, action, after_s))

    return LeanTransport(clock=clock, opener=opener), opened, clock


def post(lean: LeanTransport, pooled: bool) -> Callable[[], httpx2.Response]:
    async def main() -> httpx2.Response:
        if pooled:
            assert await lean.warm(URL, 1) == 1
        response = await lean.handle_async_request(httpx2.Request("POST", URL, content=b'{"stream": true}'))
        await response.aread()
        return response

    return lambda: asyncio.run(main())


def test_a_pooled_connection_closed_as_the_request_was_written_sends_it_once_more() -> None:
    lean, opened, _ = scripted(("close", STALE_CLOSE_WINDOW_S / 2), ("answer", 0.01))
    response = post(lean, pooled=True)()
    assert response.status_code == 200 and response.content == b"ok"
    assert [len(t.writes) for t in opened] == [1, 1] and opened[0].writes == opened[1].writes


@pytest.mark.parametrize(
    ("plans", "pooled", "writes"),
    [
        ([("close", 0.030)], True, [1]),  # held 30 ms by the server, then closed: it had the request
        ([("reset", 0.030)], True, [1]),
        ([("close", STALE_CLOSE_WINDOW_S / 2)], False, [1]),  # a new connection is never stale
        ([("close", STALE_CLOSE_WINDOW_S / 2), ("close", STALE_CLOSE_WINDOW_S / 2)], True, [1, 1]),  # once only
    ],
)
def test_any_other_close_without_a_response_is_an_error_and_never_re_sent(
    plans: list[tuple[str, float]], pooled: bool, writes: list[int]
) -> None:
    lean, opened, clock = scripted(*plans)
    with pytest.raises(ClosedWithoutResponse) as closed:
        post(lean, pooled)()
    assert [len(t.writes) for t in opened] == writes
    error = closed.value
    assert error.clock is clock and error.closed_s - error.sent_s == pytest.approx(plans[-1][1])
    assert ("reset" in str(error)) == (plans[-1][0] == "reset")


def test_a_pooled_connection_seen_closed_before_writing_gets_nothing() -> None:
    lean, opened, _ = scripted(("answer", 0.01), ("answer", 0.01))

    async def main() -> httpx2.Response:
        await lean.warm(URL, 1)
        (idle,) = lean.idle_connections(URL)
        idle.data_received(b"HTTP/1.1 408 Request Timeout\r\n\r\n")  # a stray answer while idle spoils it
        return await lean.handle_async_request(httpx2.Request("POST", URL, content=b"{}"))

    assert asyncio.run(main()).status_code == 200
    assert [len(t.writes) for t in opened] == [0, 1]
