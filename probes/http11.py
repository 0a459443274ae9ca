"""HTTP/1.1 response parsing without sockets: the head, then the body de-chunked, each piece with its arrival time."""

import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import httpx2

MAX_HEAD_BYTES = 256 << 10
MAX_CHUNK_LINE_BYTES = 64 << 10  # a chunk-size line (extensions included) or a trailer line
NO_RESPONSE = "Server disconnected without sending a response."  # httpcore's words: both transports read alike

_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


class ClosedWithoutResponse(httpx2.RemoteProtocolError):
    """The connection closed (or was reset) after the request was written, before any byte of a response.

    It carries the request's send time and the close's time, on the clock of the transport that saw it.
    """

    def __init__(self, message: str, *, sent_s: float, closed_s: float, clock: Callable[[], float]) -> None:
        super().__init__(message)
        self.sent_s = sent_s
        self.closed_s = closed_s
        self.clock = clock


@dataclass(frozen=True)
class ResponseHead:
    """The status line and headers of a response."""

    status: int
    headers: list[tuple[bytes, bytes]]
    version: bytes


class ResponseParser:
    """One response on a connection: feed() each read with its arrival time; the head, then the body pieces.

    Body pieces queue in `pieces` as (arrival time, bytes). `data_lines` counts SSE data lines in the body (b"data:"
    occurrences, an upper bound of events) and `last_data_s` is the arrival of the last read that carried one.
    A malformed head or chunk framing raises httpx2.RemoteProtocolError.
    """

    def __init__(self, head_request: bool = False) -> None:
        self.head_request = head_request  # the answer to a HEAD request has no body
        self.head: ResponseHead | None = None
        self.head_s = 0.0
        self.pieces: deque[tuple[float, bytes]] = deque()
        self.got_bytes = False
        self.body_done = False
        self.keep_alive = True
        self.data_lines = 0
        self.last_data_s = 0.0
        self._head_buf = bytearray()
        self._mode = "none"  # chunked, length, close
        self._remaining = 0
        self._state = _SIZE
        self._line = bytearray()
        self._tail = b""  # the body's last 4 bytes when it ends inside a line

    def feed(self, data: bytes, now: float) -> None:
        """One read that arrived at `now`."""
        self.got_bytes = True
        if self.head is None:
            rest = self._feed_head(data, now)
            if not rest:
                return
            data = rest
        if self.body_done:
            self.keep_alive = False  # bytes past the end of the body: the connection cannot be trusted again
            return
        body = self._decode(data)
        if body:
            self.pieces.append((now, body))
            seen = body.count(b"data:")
            tail = self._tail
            if tail:  # the last read ended inside a line: a "data:" may straddle the two
                seen += (tail + body[:4]).count(b"data:")
            if body.endswith(b"\n"):
                self._tail = b""
            else:
                self._tail = body[-4:] if len(body) >= 4 else (tail + body)[-4:]
            if seen:
                self.data_lines += seen
                self.last_data_s = now

    def closed(self, exc: Exception | None) -> httpx2.HTTPError | None:
        """What the connection's end means for this response: None when it completes the body, else the error."""
        if self.body_done:
            return None
        if self._mode == "close" and self.head is not None and exc is None:
            self.body_done = True  # a body delimited by the close
            return None
        if exc is not None:
            error: httpx2.HTTPError = httpx2.ReadError(str(exc) or type(exc).__name__)
            error.__cause__ = exc
            return error
        if self.head is None:
            if self.got_bytes:
                return httpx2.RemoteProtocolError("the server closed the connection in the middle of the response head")
            return httpx2.RemoteProtocolError(NO_RESPONSE)
        return httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    # -- the head ----------------------------------------------------------------------------------------------

    def _feed_head(self, data: bytes, now: float) -> bytes | None:
        """Gather the head; the bytes after it (None while it is incomplete). Interim 1xx answers are skipped."""
        while self.head is None:
            start = max(0, len(self._head_buf) - 3)
            self._head_buf += data
            end = self._head_buf.find(b"\r\n\r\n", start)
            if end < 0:
                if len(self._head_buf) > MAX_HEAD_BYTES:
                    raise httpx2.RemoteProtocolError("response head too large")
                return None
            raw, data = bytes(self._head_buf[:end]), bytes(self._head_buf[end + 4 :])
            self._head_buf = bytearray()
            head = _parse_head(raw)
            if 100 <= head.status < 200 and head.status != 101:
                continue  # 100 Continue and friends: the real answer follows
            self._start_body(head)
            self.head_s = now
        return data

    def _start_body(self, head: ResponseHead) -> None:
        self.head = head
        chunked = False
        length: int | None = None
        for name, value in head.headers:
            lower = name.lower()
            if lower == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif lower == b"content-length":
                with contextlib.suppress(ValueError):
                    length = int(value)
            elif lower == b"connection" and value.lower() == b"close":
                self.keep_alive = False
        if head.version != b"HTTP/1.1":
            self.keep_alive = False
        if head.status in (101, 204, 304) or self.head_request:
            self._mode, self.body_done = "length", True
        elif chunked:
            self._mode = "chunked"
        elif length is not None:
            if length < 0:
                raise httpx2.RemoteProtocolError(f"bad content-length {length}")
            self._mode, self._remaining = "length", length
            self.body_done = length == 0
        else:
            self._mode, self.keep_alive = "close", False

    # -- the body ----------------------------------------------------------------------------------------------

    def _decode(self, data: bytes) -> bytes:
        if self._mode == "length":
            piece = data[: self._remaining]
            self._remaining -= len(piece)
            if self._remaining <= 0:
                self.body_done = True
                if len(data) > len(piece):
                    self.keep_alive = False
            return piece
        if self._mode == "close":
            return data
        return self._dechunk(data)

    def _dechunk(self, data: bytes) -> bytes:
        out: list[bytes] = []
        pos, n = 0, len(data)
        state, remaining = self._state, self._remaining  # locals: this runs for every read of a stream
        while pos < n:
            if state == _DATA:
                take = min(remaining, n - pos)
                out.append(data[pos : pos + take])
                pos += take
                remaining -= take
                if not remaining:
                    state = _DATA_END
                continue
            if state == _DATA_END and data.startswith(b"\r\n", pos):  # the usual end of a chunk's data
                pos += 2
                state = _SIZE
                continue
            end = data.find(b"\n", pos)
            if end < 0:
                self._stash(data[pos:])
                break
            line = data[pos:end]
            if self._line:
                line = bytes(self._line) + line
                self._line = bytearray()
            pos = end + 1
            if state == _SIZE:
                try:
                    remaining = int(line, 16)  # the usual size line; int() ignores the \r
                except ValueError:
                    remaining = _chunk_size(line)  # with extensions, or malformed
                if remaining < 0:
                    raise httpx2.RemoteProtocolError(f"bad chunk size {line.rstrip()[:40]!r}")
                state = _DATA if remaining else _TRAILER
            elif state == _DATA_END or line.rstrip(b"\r"):
                state = _SIZE if state == _DATA_END else _TRAILER  # the end of a chunk's data; a trailer line
            else:
                self.body_done = True  # the empty line after the last chunk
                state = _DONE
                break
        self._state, self._remaining = state, remaining
        if pos < n and self.body_done:
            self.keep_alive = False
        return b"".join(out) if len(out) != 1 else out[0]

    def _stash(self, partial: bytes) -> None:
        """The start of a framing line whose end is in a later read."""
        self._line += partial
        if len(self._line) > MAX_CHUNK_LINE_BYTES:
            raise httpx2.RemoteProtocolError("chunk framing line too long")


def _chunk_size(line: bytes) -> int:
    """The size in a chunk-size line that carries extensions (`1a;name=value`)."""
    try:
        return int(line.split(b";", 1)[0], 16)
    except ValueError:
        raise httpx2.RemoteProtocolError(f"bad chunk size {line.rstrip()[:40]!r}") from None


def _parse_head(raw: bytes) -> ResponseHead:
    lines = raw.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        raise httpx2.RemoteProtocolError(f"bad status line {lines[0][:80]!r}") from None
    headers: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers.append((name.strip(), value.strip()))
    return ResponseHead(status, headers, parts[0])
