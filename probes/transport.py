"""A lean HTTP/1.1 transport for httpx2 under the openai SDK: keep-alive, timed reads, and no silent re-sends.

Each response body is a TimedStream: every read with its arrival time, taken before parsing (probes/connection.py).
"""

import asyncio
import contextvars
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2

from probes.connection import KERNEL_TIMESTAMPS, Connection, open_plain
from probes.http11 import NO_RESPONSE, ClosedWithoutResponse

# An open-loop request's due time on the transport's clock (set by the task sending it): the request is prepared
# ahead, then written at that time rather than when the task happened to run (docs/bench.md, send lag).
SEND_AT: contextvars.ContextVar[float | None] = contextvars.ContextVar("probe_send_at", default=None)
# asyncio's timers wake up to 1 ms late (epoll waits in whole milliseconds): the last SPIN_S before a due time is
# waited in event-loop turns instead (reads go on meanwhile).
SPIN_S = 0.0015
TIMED_STREAM = "probe_timed_stream"  # response.extensions key of the TimedStream
WARM_SETTLE_S = 0.02  # after opening connections ahead of a level, for the server to accept them
# A request is sent again only when its connection was already closed as it was written: it never reached a live
# server. Before writing, a pooled connection that is closed, reset, or has anything waiting on it is not written to
# at all (Connection.usable): the request goes on another connection, sent once. After writing, a close can still be
# in flight: the server closed the idle connection just before our bytes reached it. That close was on its way when
# we wrote, so it arrives within one round trip (tens of microseconds on the loopback, well under a millisecond on a
# LAN); this bound allows for that and a few event-loop turns. A later close came from a server that held the
# request: ClosedWithoutResponse, never re-sent. The one case the bound cannot tell apart: a server that reads a
# request and closes within it without a byte of answer gets it once more (a second close is recorded, not retried).
STALE_CLOSE_WINDOW_S = 0.002

Origin = tuple[str, str, int]  # scheme, host, port
Opener = Callable[[Origin, Connection], Awaitable[None]]  # connects and attaches a transport to the Connection


class _StaleConnection(Exception):
    """A pooled connection closed as the request was written: the request never reached a live server."""


def origin_of(url: httpx2.URL) -> Origin:
    """The (scheme, host, port) a connection serves."""
    scheme = url.scheme
    return scheme, url.host, url.port or (443 if scheme == "https" else 80)


async def request_bytes(request: httpx2.Request) -> bytes:
    """The request as it goes on the wire: request line, headers, body."""
    body = await request.aread()
    head = [b"%s %s HTTP/1.1" % (request.method.encode(), request.url.raw_path)]
    head += [b"%s: %s" % (name, value) for name, value in request.headers.raw]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


class TimedStream(httpx2.AsyncByteStream):
    """The response body; timed() yields (arrival perf_counter, bytes), iteration yields bytes."""

    def __init__(self, transport: "LeanTransport", key: Origin, conn: Connection) -> None:
        self._transport = transport
        self._key = key
        self._conn = conn
        self._response = conn.response
        self._closed = False

    @property
    def head_s(self) -> float:
        """When the response head arrived."""
        return self._response.head_s

    @property
    def clock(self) -> Callable[[], float]:
        """The clock of the arrival and send times."""
        return self._transport.clock

    @property
    def sent_s(self) -> float:
        """When the request was handed to the socket (after the connection was ready)."""
        return self._conn.sent_s

    @property
    def events(self) -> int:
        """SSE data lines received so far (counted on the raw body: an upper bound of events)."""
        return self._response.data_lines

    @property
    def last_data_s(self) -> float:
        """Arrival of the last read that carried a data line."""
        return self._response.last_data_s

    async def timed(self) -> AsyncIterator[tuple[float, bytes]]:
        """Each read as it arrived, with its arrival time."""
        conn, response = self._conn, self._response
        pieces = response.pieces
        while True:
            while pieces:
                yield pieces.popleft()
            if self.ended():
                return
            await conn.wait()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for _, data in self.timed():
            yield data

    def take(self) -> list[tuple[float, bytes]]:
        """Everything queued so far, as (arrival time, bytes)."""
        pieces = self._response.pieces
        reads = list(pieces)
        pieces.clear()
        return reads

    def ended(self) -> bool:
        """True once the body is complete (or the connection closed); raises the connection's error if it failed."""
        if self._response.body_done:
            return True
        conn = self._conn
        if conn.lost_exc is not None:
            raise conn.lost_exc
        return conn.closed

    async def wait(self, events: int | None = None) -> None:
        """Until the next read (events None), or until `events` data lines came, or the body ended or failed."""
        conn = self._conn
        conn.wake_events = events
        try:
            await conn.wait()
        finally:
            conn.wake_events = None

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        conn, response = self._conn, self._response
        if response.body_done and response.keep_alive and not conn.closed and not response.pieces:
            self._transport.release(self._key, conn)
        else:
            self._transport.drop(conn)


async def sleep_until(due_s: float, clock: Callable[[], float]) -> None:
    """Until `due_s` on `clock`: a timer for all but the last SPIN_S, then event-loop turns."""
    delay_s = due_s - clock()
    if delay_s > SPIN_S:
        await asyncio.sleep(delay_s - SPIN_S)
    while clock() < due_s:
        await asyncio.sleep(0)


class LeanTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive on asyncio protocols; no pool limit (the runner bounds requests in flight).

    `opener` replaces how a connection is opened (TCP or TLS by the URL's scheme), for tests without sockets.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.perf_counter,
        verify: bool | ssl.SSLContext = True,
        opener: Opener | None = None,
    ) -> None:
        self._clock = clock
        self._idle: dict[Origin, list[Connection]] = {}
        self._all: set[Connection] = set()
        self._ssl: ssl.SSLContext | None = verify if isinstance(verify, ssl.SSLContext) else None
        self._verify = verify
        self._opener = opener or self._open

    @property
    def clock(self) -> Callable[[], float]:
        """The clock of send and arrival times."""
        return self._clock

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send the request on an idle or new connection; return once the response head arrived."""
        key = origin_of(request.url)
        payload = await request_bytes(request)
        connect_s = request.extensions.get("timeout", {}).get("connect")
        head_request = request.method == "HEAD"
        conn = self._take_idle(key) or await self._connect(key, connect_s)
        due_s = SEND_AT.get()
        if due_s is not None:
            await sleep_until(due_s, self._clock)
        try:
            await self._exchange(conn, payload, head_request)
        except _StaleConnection:  # closed as we wrote: it never reached a live server; once more, on a new connection
            conn = await self._connect(key, connect_s)
            await self._exchange(conn, payload, head_request)
        head = conn.response.head
        assert head is not None
        stream = TimedStream(self, key, conn)
        return httpx2.Response(
            status_code=head.status,
            headers=head.headers,
            stream=stream,
            extensions={"http_version": head.version, TIMED_STREAM: stream},
        )

    async def _exchange(self, conn: Connection, payload: bytes, head_request: bool) -> None:
        """Write the request and wait for the response head."""
        if conn.closed or conn.transport is None:
            raise httpx2.ConnectError("the server closed the connection before the request was written")
        conn.begin(head_request)
        conn.sent_s = self._clock()  # the send time: the request is handed to the socket now
        conn.transport.write(payload)
        try:
            while conn.response.head is None:
                if conn.lost_exc is not None:
                    raise self._no_head(conn, conn.lost_exc)
                await conn.wait()
        except BaseException:
            self.drop(conn)
            raise

    def _no_head(self, conn: Connection, lost: BaseException) -> BaseException:
        """Why no head came: the stale case (re-sent once), a close without a response, or the connection's error."""
        if conn.response.got_bytes or conn.closed_s is None:
            return lost
        after_s = conn.closed_s - conn.sent_s
        if conn.from_pool and after_s <= STALE_CLOSE_WINDOW_S:
            return _StaleConnection()
        how = "reset" if isinstance(lost, httpx2.ReadError) else "closed"
        error = ClosedWithoutResponse(
            f"{NO_RESPONSE} (it {how} the connection {after_s:.3f} s after the request was sent)",
            sent_s=conn.sent_s,
            closed_s=conn.closed_s,
            clock=self._clock,
        )
        error.__cause__ = lost
        return error

    # -- the pool ----------------------------------------------------------------------------------------------

    def _take_idle(self, key: Origin) -> Connection | None:
        """An idle connection that can take a request; dead ones are dropped without a byte written to them."""
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if conn.usable():
                conn.from_pool = True
                return conn
            self.drop(conn)
        return None

    def drop(self, conn: Connection) -> None:
        """Close a connection that will not be used again."""
        conn.abort()
        self._all.discard(conn)

    def idle_connections(self, url: str) -> list[Connection]:
        """The idle connections to url's origin, as they are (for inspection)."""
        return list(self._idle.get(origin_of(httpx2.URL(url)), []))

    def release(self, key: Origin, conn: Connection) -> None:
        """A connection whose response was read to its end goes back to the idle pool."""
        conn.idle = True
        self._idle.setdefault(key, []).append(conn)

    async def _connect(self, key: Origin, timeout_s: float | None) -> Connection:
        conn = Connection(self._clock)
        try:
            await asyncio.wait_for(self._opener(key, conn), timeout_s)
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(f"connect to {key[1]}:{key[2]} timed out") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpx2.ConnectError(f"{type(exc).__name__}: {exc}") from exc
        self._all.add(conn)
        return conn

    async def _open(self, key: Origin, conn: Connection) -> None:
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        if scheme == "https":
            await loop.create_connection(lambda: conn, host, port, ssl=self._ssl_context(), server_hostname=host)
        else:
            await open_plain(loop, host, port, conn, KERNEL_TIMESTAMPS and self._clock is time.perf_counter)

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = httpx2.create_ssl_context(verify=bool(self._verify), trust_env=False)
        return self._ssl

    async def warm(self, url: str, count: int, timeout_s: float | None = None) -> int:
        """Open connections to url's origin until `count` are idle (before a level's clock starts); how many opened.

        Connection setup (TCP, TLS) is then not paid inside the level, where a burst of hundreds of connects would
        delay the first requests' sends; the requests themselves are sent exactly as before.
        """
        key = origin_of(httpx2.URL(url))
        idle = self._idle.setdefault(key, [])
        for conn in [conn for conn in idle if not conn.usable()]:
            idle.remove(conn)
            self.drop(conn)
        missing = count - len(idle)
        if missing <= 0:
            return 0
        opened = await asyncio.gather(*(self._connect(key, timeout_s) for _ in range(missing)), return_exceptions=True)
        good = [conn for conn in opened if isinstance(conn, Connection)]
        idle.extend(good)
        if good:
            # A connect completes once the kernel queued it; the server has yet to accept it. Give it that moment here
            # rather than inside the first request on the connection.
            await asyncio.sleep(WARM_SETTLE_S)
        return len(good)

    async def aclose(self) -> None:
        """Close every connection."""
        for conn in self._all:
            if conn.transport is not None and not conn.closed:
                conn.transport.close()
        self._all.clear()
        self._idle.clear()
