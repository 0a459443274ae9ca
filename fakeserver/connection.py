"""One keep-alive HTTP/1.1 connection of the test server: read a request, hand it to the server, send the answer."""

import asyncio
import contextlib
import socket
from typing import Protocol

from fakeserver.stream import FakeStream, StreamHost

MAX_BODY_BYTES = 64 << 20
REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
}


class ConnectionHost(StreamHost, Protocol):
    """What a connection needs of its server (fakeserver/server.py's FakeServer)."""

    connections: set["ServerConnection"]

    def handle(self, conn: "ServerConnection", method: str, target: str, headers: dict[str, str], body: bytes) -> None:
        """Answer one request (conn.send, or a stream set on conn.stream)."""


class ServerConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: parse a request, answer it, then the next."""

    transport: asyncio.Transport  # set in connection_made

    def __init__(self, server: ConnectionHost) -> None:
        self._server = server
        self.buf = bytearray()
        self.busy = False
        self.close_after = False
        self.stream: FakeStream | None = None

    @property
    def server(self) -> ConnectionHost:
        """The server this connection belongs to."""
        return self._server

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections.add(self)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        if self.stream is not None:
            self.stream.abort()
            self.stream = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.buf[:1].isalpha():  # not HTTP (e.g. a TLS handshake): answer as a plain server would
            self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            self.transport.close()
            return
        if not self.busy:
            self._next()

    def response_done(self) -> None:
        """The answer is complete: close when asked to, else read the next request."""
        self.stream = None
        self.busy = False
        if self.close_after:
            self.transport.close()
        elif self.buf:
            self._next()

    def _next(self) -> None:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        method, _, rest = head[0].partition(" ")
        target = rest.rsplit(" ", 1)[0]
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        if length > MAX_BODY_BYTES:
            self.transport.close()
            return
        if len(self.buf) < end + 4 + length:
            return
        body = bytes(self.buf[end + 4 : end + 4 + length])
        del self.buf[: end + 4 + length]
        self.busy = True
        self.close_after = headers.get("connection", "").lower() == "close"
        self.server.handle(self, method, target, headers, body)

    def send(
        self, status: int, body: bytes, content_type: str = "application/json", extra: dict[str, str] | None = None
    ) -> None:
        """A whole answer with a content-length."""
        reason = REASONS.get(status, "Error")
        lines = [f"HTTP/1.1 {status} {reason}", f"content-type: {content_type}", f"content-length: {len(body)}"]
        lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
        self.transport.write("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
        self.response_done()
