"""One HTTP/1.1 connection as an asyncio protocol, and the plain-TCP transport that stamps reads with kernel times.

Plain HTTP reads its socket with recvmsg and takes the kernel's receive time of the bytes (SO_TIMESTAMPNS), so a busy
event loop does not move the timestamps; TLS goes through asyncio's transport, timed in data_received.
"""

import asyncio
import contextlib
import ipaddress
import socket
import struct
import time
from collections.abc import Callable

import httpx2

from probes.http11 import ResponseParser

READ_BYTES = 256 << 10
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux: a struct timespec (CLOCK_REALTIME) per read
_TIMESPEC = struct.Struct("qq")
_ANC_BYTES = socket.CMSG_SPACE(_TIMESPEC.size)
# perf_counter is CLOCK_MONOTONIC on Linux: kernel (realtime) stamps convert with the current realtime-monotonic offset.
KERNEL_TIMESTAMPS = time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
KERNEL_TS_MAX_AGE_S = 10.0  # a kernel stamp older than this (or in the future) is not trusted: the read time is used


class Connection(asyncio.Protocol):
    """One keep-alive connection: feeds each read to the current response's parser and wakes the reader."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.transport: asyncio.Transport | None = None
        self.response = ResponseParser()
        self.response.body_done = True  # nothing asked yet
        self.idle = True  # no request in flight: any byte now is stray and spoils the connection
        self.stray_bytes = False
        self.from_pool = False  # taken from the idle pool (opened for an earlier request, or ahead of a level)
        self.sent_s = 0.0  # when the current request was handed to the socket
        self.closed = False
        self.closed_s: float | None = None  # when the close (or reset) was seen
        self.lost_exc: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.wake_events: int | None = None  # None: wake the reader on every read; else only from this many events

    def begin(self, head_request: bool) -> None:
        """A new request goes out on this connection: a fresh parser for its response."""
        self.response = ResponseParser(head_request)
        self.idle = False

    # -- asyncio callbacks -------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes, arrived_s: float | None = None) -> None:
        now = self.clock() if arrived_s is None else arrived_s  # the arrival time, before any parsing
        if self.idle:
            self.stray_bytes = True
            return
        response = self.response
        try:
            response.feed(data, now)
        except httpx2.RemoteProtocolError as exc:
            self._fail(exc)
            return
        wake_events = self.wake_events
        if wake_events is None or response.data_lines >= wake_events or response.body_done:
            self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.closed_s = self.clock()
        if self.lost_exc is None:
            self.lost_exc = self.response.closed(exc)
        self._wake()

    # -- state -------------------------------------------------------------------------------------------------

    def usable(self) -> bool:
        """True for an idle connection that can take a request: open, nothing stray came, the peer has not closed it."""
        if self.closed or self.stray_bytes or self.transport is None or self.transport.is_closing():
            return False
        return not (isinstance(self.transport, SockTransport) and self.transport.peer_closed())

    def abort(self) -> None:
        """Drop the connection now."""
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, exc: BaseException) -> None:
        self.lost_exc = exc
        self.abort()
        self._wake()

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


class SockTransport(asyncio.Transport):
    """A plain TCP connection read with recvmsg: every read carries the kernel's receive time (SO_TIMESTAMPNS).

    It stands in for asyncio's transport under Connection. When several segments were waiting, the read's stamp is
    the arrival of the last one; without a usable stamp the read time is used.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, conn: Connection, kernel_ts: bool) -> None:
        super().__init__({"socket": sock})
        self._loop = loop
        self._sock = sock
        self._fd = sock.fileno()
        self._conn = conn
        self._clock = conn.clock
        self._kernel_ts = kernel_ts
        self._pending = b""
        self._closed = False
        loop.add_reader(self._fd, self._readable)
        conn.connection_made(self)

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
        self._conn.data_received(data, now)

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

    def write(self, data: bytes | bytearray | memoryview) -> None:
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
            self._pending = bytes(data[sent:])
            self._loop.add_writer(self._fd, self._writable)

    def peer_closed(self) -> bool:
        """True when the peer's close (or reset, or any byte) is already waiting on the socket: a look, no read."""
        if self._closed:
            return True
        try:
            self._sock.recv(1, socket.MSG_PEEK)  # returns at once: b"" for the close, a byte for stray data
        except (BlockingIOError, InterruptedError):
            return False  # nothing waiting: the connection is open
        except OSError:
            return True  # reset
        return True

    def _lose(self, exc: Exception | None) -> None:
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self._fd)
        if self._pending:
            self._loop.remove_writer(self._fd)
        self._sock.close()
        self._conn.connection_lost(exc)

    def abort(self) -> None:
        if not self._closed:
            self._loop.call_soon(self._lose, None)
            self._loop.remove_reader(self._fd)

    def close(self) -> None:
        self.abort()

    def is_closing(self) -> bool:
        return self._closed


async def open_plain(loop: asyncio.AbstractEventLoop, host: str, port: int, conn: Connection, kernel_ts: bool) -> None:
    """Connect a non-blocking TCP socket (first address that answers) and attach a SockTransport to conn."""
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
        SockTransport(loop, sock, conn, kernel_ts)
        return
    raise error or OSError(f"cannot resolve {host}")
