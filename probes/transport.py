"""A lean HTTP/1.1 transport for httpx2 under the openai SDK: arrival time of every read taken before parsing.

asyncio protocols, keep-alive, chunked decoding; the timestamp is taken in data_received.
"""

import asyncio
import contextlib
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

import httpx2

MAX_HEAD_BYTES = 256 << 10
TIMED_STREAM = "probe_timed_stream"  # response.extensions key of the TimedStream

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
        self.queue: deque[tuple[float, bytes]] = deque()
        self.mode = "none"  # chunked, length, close
        self.remaining = 0
        self.state = _SIZE
        self.line = bytearray()
        self.body_done = False
        self.keep_alive = True
        self.got_bytes = False

    # -- asyncio callbacks -------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            import socket

            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        now = self.clock()  # the arrival time, before any parsing
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
                    "peer closed connection without sending complete message body")
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
            connect = loop.create_connection(lambda: _Proto(self._clock), host, port,
                                             ssl=self._ssl_context() if scheme == "https" else None,
                                             server_hostname=host if scheme == "https" else None)
            _, proto = await asyncio.wait_for(connect, timeout_s)
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
            return httpx2.Response(status_code=status, headers=headers, stream=stream,
                                   extensions={"http_version": version, TIMED_STREAM: stream})
        raise httpx2.RemoteProtocolError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        """Close every connection."""
        for proto in self._all:
            if proto.transport is not None and not proto.closed:
                proto.transport.close()
        self._all.clear()
        self._idle.clear()
