"""A lean HTTP/1.1 transport for httpx2 under the openai SDK: the arrival time of every read, taken before parsing.

Plain HTTP reads its sockets with recvmsg and takes the kernel's receive time of the bytes (SO_TIMESTAMPNS), so a busy
event loop does not move the timestamps; TLS goes through asyncio's transport, timed in data_received. Keep-alive,
chunked decoding.
"""

import asyncio
import contextlib
import ipaddress
import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

import httpx2

MAX_HEAD_BYTES = 256 << 10
READ_BYTES = 256 << 10
TIMED_STREAM = "probe_timed_stream"  # response.extensions key of the TimedStream
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux: a struct timespec (CLOCK_REALTIME) per read
_TIMESPEC = struct.Struct("qq")
_ANC_BYTES = socket.CMSG_SPACE(_TIMESPEC.size)
# perf_counter is CLOCK_MONOTONIC on Linux: kernel (realtime) stamps convert with the current realtime-monotonic offset.
KERNEL_TIMESTAMPS = time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
WARM_SETTLE_S = 0.02  # after opening connections ahead of a level, for the server to accept them
KERNEL_TS_MAX_AGE_S = 10.0  # a kernel stamp older than this (or in the future) is not trusted: the read time is used

_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


class _Proto(asyncio.Protocol):
    """One connection: parses the response head, de-chunks the body, queues (arrival time, bytes)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.lost_exc: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.reset()

    def reset(self) -> None:
        self.head_buf = bytearray()
        self.head: tuple[int, list[tuple[bytes, bytes]], bytes] | None = None
        self.head_s = 0.0
        self.sent_s = 0.0
        self.queue: deque[tuple[float, bytes]] = deque()
        self.mode = "none"  # chunked, length, close
        self.remaining = 0
        self.state = _SIZE
        self.line = bytearray()
        self.body_done = False
        self.keep_alive = True
        self.got_bytes = False
        self.events = 0  # SSE data lines seen in the body (an upper bound of events)
        self.last_data_s = 0.0  # arrival of the last read that carried a data line
        self.wake_events: int | None = None  # None: wake the reader on every read; else only from this many events

    # -- asyncio callbacks -------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes, arrived_s: float | None = None) -> None:
        now = self.clock() if arrived_s is None else arrived_s  # the arrival time, before any parsing
        self.got_bytes = True
        if self.head is None:
            self.head_buf += data
            end = self.head_buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.head_buf) > MAX_HEAD_BYTES:
                    self._fail(httpx2.RemoteProtocolError("response head too large"))
                return
            rest = bytes(self.head_buf[end + 4 :])
            self._parse_head(bytes(self.head_buf[:end]))
            self.head_s = now
            self.head_buf = bytearray()
            data = rest
            if not data:
                self._wake()
                return
        if self.body_done:
            return
        body = self._decode(data)
        if body:
            self.queue.append((now, body))
            seen = body.count(b"data:")
            if seen:
                self.events += seen
                self.last_data_s = now
        wake_events = self.wake_events
        if wake_events is None or self.events >= wake_events or self.body_done or self.lost_exc is not None:
            self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.mode == "close" and self.head is not None and exc is None:
            self.body_done = True
        elif not self.body_done:
            if exc is not None:
                self.lost_exc = httpx2.ReadError(str(exc) or type(exc).__name__)
                self.lost_exc.__cause__ = exc
            elif self.head is None:
                self.lost_exc = httpx2.RemoteProtocolError("Server disconnected without sending a response.")
            else:
                self.lost_exc = httpx2.RemoteProtocolError(
                    "peer closed connection without sending complete message body"
                )
        self._wake()

    # -- parsing -----------------------------------------------------------------------------------------------

    def _parse_head(self, raw: bytes) -> None:
        lines = raw.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        try:
            status = int(parts[1])
        except (IndexError, ValueError):
            self._fail(httpx2.RemoteProtocolError(f"bad status line {lines[0][:80]!r}"))
            return
        headers: list[tuple[bytes, bytes]] = []
        chunked = False
        length: int | None = None
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip(), value.strip()
            headers.append((name, value))
            lower = name.lower()
            if lower == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif lower == b"content-length":
                with contextlib.suppress(ValueError):
                    length = int(value)
            elif lower == b"connection" and value.lower() == b"close":
                self.keep_alive = False
        if parts[0] != b"HTTP/1.1":
            self.keep_alive = False
        self.head = (status, headers, parts[0])
        if status in (204, 304) or 100 <= status < 200 or self.method_head:
            self.mode, self.body_done = "length", True
        elif chunked:
            self.mode = "chunked"
        elif length is not None:
            self.mode, self.remaining = "length", length
            self.body_done = length == 0
        else:
            self.mode, self.keep_alive = "close", False

    method_head = False

    def _decode(self, data: bytes) -> bytes:
        if self.mode == "length":
            piece = data[: self.remaining]
            self.remaining -= len(piece)
            if self.remaining <= 0:
                self.body_done = True
            return piece
        if self.mode == "close":
            return data
        out: list[bytes] = []
        pos, n = 0, len(data)
        while pos < n and not self.body_done:
            state = self.state
            if state == _DATA:
                take = min(self.remaining, n - pos)
                out.append(data[pos : pos + take])
                pos += take
                self.remaining -= take
                if self.remaining == 0:
                    self.state = _DATA_END
                continue
            end = data.find(b"\n", pos)
            if end < 0:
                self.line += data[pos:]
                break
            line = bytes(self.line) + data[pos:end] if self.line else data[pos:end]
            self.line = bytearray()
            pos = end + 1
            line = line.rstrip(b"\r")
            if state == _SIZE:
                try:
                    size = int(line.split(b";", 1)[0], 16)
                except ValueError:
                    self._fail(httpx2.RemoteProtocolError(f"bad chunk size {line[:40]!r}"))
                    break
                if size == 0:
                    self.state = _TRAILER
                else:
                    self.remaining, self.state = size, _DATA
            elif state == _DATA_END:
                self.state = _SIZE
            elif state == _TRAILER and not line:
                self.state, self.body_done = _DONE, True
        return b"".join(out) if len(out) != 1 else out[0]

    def _fail(self, exc: BaseException) -> None:
        self.lost_exc = exc
        self.body_done = False
        if self.transport is not None:
            self.transport.abort()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        """Until something new arrived (or the connection ended)."""
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None


class _SockTransport:
    """A plain TCP connection read with recvmsg: every read carries the kernel's receive time (SO_TIMESTAMPNS).

    It stands in for asyncio's transport under _Proto (write, abort, close, get_extra_info). When several segments
    were waiting, the read's stamp is the arrival of the last one; without a usable stamp the read time is used.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, proto: _Proto, kernel_ts: bool) -> None:
        self._loop = loop
        self._sock = sock
        self._fd = sock.fileno()
        self._proto = proto
        self._clock = proto.clock
        self._kernel_ts = kernel_ts
        self._pending = b""
        self._closed = False
        loop.add_reader(self._fd, self._readable)
        proto.connection_made(self)  # type: ignore[arg-type]

    def _readable(self) -> None:
        try:
            data, anc, _, _ = self._sock.recvmsg(READ_BYTES, _ANC_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        if not data:
            self._lose(None)
            return
        now = self._clock()
        if anc and self._kernel_ts:
            sec, nsec = _TIMESPEC.unpack_from(anc[0][2])
            stamp_s = (sec * 1_000_000_000 + nsec - (time.time_ns() - time.perf_counter_ns())) / 1e9
            if now - KERNEL_TS_MAX_AGE_S < stamp_s <= now:
                now = stamp_s
        self._proto.data_received(data, now)

    def _writable(self) -> None:
        try:
            sent = self._sock.send(self._pending)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        self._pending = self._pending[sent:]
        if not self._pending:
            self._loop.remove_writer(self._fd)

    def write(self, data: bytes) -> None:
        if self._closed:
            return
        if self._pending:
            self._pending += data
            return
        try:
            sent = self._sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._lose(exc)
            return
        if sent < len(data):
            self._pending = data[sent:]
            self._loop.add_writer(self._fd, self._writable)

    def _lose(self, exc: BaseException | None) -> None:
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self._fd)
        if self._pending:
            self._loop.remove_writer(self._fd)
        self._sock.close()
        self._proto.connection_lost(exc)  # type: ignore[arg-type]

    def abort(self) -> None:
        if not self._closed:
            self._loop.call_soon(self._lose, None)
            self._loop.remove_reader(self._fd)

    def close(self) -> None:
        self.abort()

    def is_closing(self) -> bool:
        return self._closed

    def get_extra_info(self, name: str, default: object = None) -> object:
        return self._sock if name == "socket" else default


async def _open_plain(loop: asyncio.AbstractEventLoop, host: str, port: int, proto: _Proto, kernel_ts: bool) -> None:
    """Connect a non-blocking TCP socket (first address that answers) and attach a _SockTransport to proto."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
        addrs = [(socket.AF_INET6 if ip.version == 6 else socket.AF_INET, (str(ip), port))]
    except ValueError:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        addrs = [(family, (str(addr[0]), int(addr[1]))) for family, _, _, _, addr in infos]
    error: OSError | None = None
    for family, addr in addrs:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if kernel_ts:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            await loop.sock_connect(sock, addr)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        _SockTransport(loop, sock, proto, kernel_ts)
        return
    raise error or OSError(f"cannot resolve {host}")


class TimedStream(httpx2.AsyncByteStream):
    """The response body; timed() yields (arrival perf_counter, bytes), iteration yields bytes."""

    def __init__(self, transport: "LeanTransport", key: tuple[str, str, int], proto: _Proto) -> None:
        self._transport = transport
        self._key = key
        self._proto = proto
        self._closed = False

    @property
    def head_s(self) -> float:
        """When the response head arrived."""
        return self._proto.head_s

    @property
    def clock(self) -> Callable[[], float]:
        """The clock of the arrival and send times."""
        return self._transport._clock

    @property
    def sent_s(self) -> float:
        """When the request was handed to the socket (after the connection was ready)."""
        return self._proto.sent_s

    async def timed(self) -> AsyncIterator[tuple[float, bytes]]:
        """Each read as it arrived, with its arrival time."""
        proto = self._proto
        queue = proto.queue
        while True:
            while queue:
                yield queue.popleft()
            if proto.body_done:
                return
            if proto.lost_exc is not None:
                raise proto.lost_exc
            if proto.closed:
                return
            await proto.wait()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for _, data in self.timed():
            yield data

    @property
    def events(self) -> int:
        """SSE data lines received so far (counted on the raw body: an upper bound of events)."""
        return self._proto.events

    @property
    def last_data_s(self) -> float:
        """Arrival of the last read that carried a data line."""
        return self._proto.last_data_s

    def take(self) -> list[tuple[float, bytes]]:
        """Everything queued so far, as (arrival time, bytes)."""
        queue = self._proto.queue
        reads = list(queue)
        queue.clear()
        return reads

    def ended(self) -> bool:
        """True once the body is complete (or the connection closed); raises the connection's error if it failed."""
        proto = self._proto
        if proto.body_done:
            return True
        if proto.lost_exc is not None:
            raise proto.lost_exc
        return proto.closed

    async def wait(self, events: int | None = None) -> None:
        """Until the next read (events None), or until `events` data lines came, or the body ended or failed."""
        proto = self._proto
        proto.wake_events = events
        try:
            await proto.wait()
        finally:
            proto.wake_events = None

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        proto = self._proto
        if proto.body_done and proto.keep_alive and not proto.closed and not proto.queue:
            self._transport._release(self._key, proto)
        elif proto.transport is not None:
            proto.transport.abort()


class LeanTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive on asyncio protocols; no pool limit (the runner bounds requests in flight)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter, verify: bool | ssl.SSLContext = True) -> None:
        self._clock = clock
        self._idle: dict[tuple[str, str, int], list[_Proto]] = {}
        self._all: set[_Proto] = set()
        self._ssl: ssl.SSLContext | None = verify if isinstance(verify, ssl.SSLContext) else None
        self._verify = verify

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = httpx2.create_ssl_context(verify=bool(self._verify), trust_env=False)
        return self._ssl

    def _release(self, key: tuple[str, str, int], proto: _Proto) -> None:
        proto.reset()
        self._idle.setdefault(key, []).append(proto)

    async def _connect(self, key: tuple[str, str, int], timeout_s: float | None) -> _Proto:
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        try:
            if scheme == "https":
                connect = loop.create_connection(
                    lambda: _Proto(self._clock), host, port, ssl=self._ssl_context(), server_hostname=host
                )
                _, proto = await asyncio.wait_for(connect, timeout_s)
            else:
                proto = _Proto(self._clock)
                kernel_ts = KERNEL_TIMESTAMPS and self._clock is time.perf_counter
                await asyncio.wait_for(_open_plain(loop, host, port, proto, kernel_ts), timeout_s)
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(f"connect to {host}:{port} timed out") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpx2.ConnectError(f"{type(exc).__name__}: {exc}") from exc
        self._all.add(proto)
        return proto

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send the request on an idle or new connection; return once the response head arrived."""
        url = request.url
        scheme = url.scheme
        key = (scheme, url.host, url.port or (443 if scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        body = await request.aread()
        head = [b"%s %s HTTP/1.1" % (request.method.encode(), url.raw_path)]
        head += [b"%s: %s" % (name, value) for name, value in request.headers.raw]
        payload = b"\r\n".join(head) + b"\r\n\r\n" + body
        for attempt in range(2):
            proto: _Proto | None = None
            idle = self._idle.get(key)
            while idle:
                candidate = idle.pop()
                if not candidate.closed:
                    proto = candidate
                    break
            reused = proto is not None
            if proto is None:
                proto = await self._connect(key, timeouts.get("connect"))
            proto.method_head = request.method == "HEAD"
            assert proto.transport is not None
            proto.sent_s = self._clock()  # the send time: the request is handed to the socket now
            proto.transport.write(payload)
            try:
                while proto.head is None:
                    if proto.lost_exc is not None:
                        raise proto.lost_exc
                    await proto.wait()
            except httpx2.HTTPError:
                if reused and not proto.got_bytes and attempt == 0:
                    continue  # the server closed an idle keep-alive connection: once more on a new one
                raise
            except BaseException:
                if proto.transport is not None:
                    proto.transport.abort()
                raise
            status, headers, version = proto.head
            stream = TimedStream(self, key, proto)
            return httpx2.Response(
                status_code=status,
                headers=headers,
                stream=stream,
                extensions={"http_version": version, TIMED_STREAM: stream},
            )
        raise httpx2.RemoteProtocolError("unreachable")  # pragma: no cover

    async def warm(self, url: str, count: int, timeout_s: float | None = None) -> int:
        """Open connections to url's origin until `count` are idle (before a level's clock starts); how many opened.

        Connection setup (TCP, TLS) is then not paid inside the level, where a burst of hundreds of connects would
        delay the first requests' sends; the requests themselves are sent exactly as before.
        """
        parsed = httpx2.URL(url)
        scheme = parsed.scheme
        key = (scheme, parsed.host, parsed.port or (443 if scheme == "https" else 80))
        idle = self._idle.setdefault(key, [])
        idle[:] = [p for p in idle if not p.closed]
        missing = count - len(idle)
        if missing <= 0:
            return 0
        opened = await asyncio.gather(*(self._connect(key, timeout_s) for _ in range(missing)), return_exceptions=True)
        good = [p for p in opened if isinstance(p, _Proto)]
        idle.extend(good)
        if good:
            # A connect completes once the kernel queued it; the server has yet to accept it. Give it that moment here
            # rather than inside the first request on the connection.
            await asyncio.sleep(WARM_SETTLE_S)
        return len(good)

    async def aclose(self) -> None:
        """Close every connection."""
        for proto in self._all:
            if proto.transport is not None and not proto.closed:
                proto.transport.close()
        self._all.clear()
        self._idle.clear()
