"""The test server's streamed answer: SSE frames at known times, faults mid-stream, and the server's record of it."""

import asyncio
import contextlib
import json
import socket
import struct
import time
from typing import Any, Protocol

from fakeserver.behaviour import MID_STREAM_FAULTS, WORDS, Batching, Behaviour, RequestRecord, prompt_tokens
from fakeserver.metrics import Counters

BIG_LINE_BYTES = 1 << 20


class StreamHost(Protocol):
    """What a stream needs of its server (fakeserver/server.py's FakeServer): its loop, counters and queue."""

    loop: asyncio.AbstractEventLoop
    counters: Counters
    spec_acceptance: float | None

    def stream_ended(self, stream: "FakeStream") -> None:
        """The stream ended (finished, failed or aborted): admit the next waiting one."""


class StreamConnection(Protocol):
    """What a stream needs of its connection (fakeserver/connection.py): the transport and the server."""

    transport: asyncio.Transport

    @property
    def server(self) -> StreamHost:
        """The server the connection belongs to."""
        ...

    def response_done(self) -> None:
        """The answer is complete: read the next request on this keep-alive connection."""


def chunk(payload: bytes) -> bytes:
    """One HTTP/1.1 chunk."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _sse(obj: Any) -> bytes:
    return chunk(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


class FakeStream:
    """One streaming response, driven by loop.call_at at absolute times."""

    batching = Batching()  # the load-dependent mode (BatchedStream); off here

    def __init__(
        self, conn: StreamConnection, record: RequestRecord, beh: Behaviour, req: dict[str, Any], chat: bool
    ) -> None:
        self.conn = conn
        self.server = conn.server
        self.record = record
        self.beh = beh
        self.chat = chat
        self.model = str(req.get("model", ""))
        max_tokens = int(req.get("max_tokens") or req.get("max_completion_tokens") or beh.tokens)
        self.total = beh.tokens if beh.fault == "never_end" else min(beh.tokens, max_tokens)
        self.finish = "length" if beh.tokens >= max_tokens else "stop"
        opts = req.get("stream_options") or {}
        self.usage = beh.usage and bool(opts.get("include_usage"))
        self.continuous = beh.usage and bool(opts.get("continuous_usage_stats"))
        self.prompt_tokens = prompt_tokens(req)
        self.fault_at = beh.fault_after if beh.fault_after >= 0 else self.total // 2
        self.sent = 0
        self.handle: asyncio.TimerHandle | None = None
        self.anchor = 0.0
        self.closed = False
        created = int(time.time())
        kind = "chat.completion.chunk" if chat else "text_completion"
        self.head = (
            f'{{"id":"{record.request_id}","object":"{kind}","created":{created},'
            f'"model":{json.dumps(self.model)},"choices":[{{"index":0,'
        ).encode()
        self.frames: dict[tuple[int, bool], list[bytes]] = {}

    def _frame(self, k: int, reasoning: bool, i: int) -> bytes:
        if self.continuous:
            return self._build(k, reasoning, i, usage=True)
        frames = self.frames.get((k, reasoning))
        if frames is None:
            frames = [self._build(k, reasoning, j, usage=False) for j in range(len(WORDS))]
            self.frames[(k, reasoning)] = frames
        return frames[i % len(WORDS)]

    def _build(self, k: int, reasoning: bool, i: int, usage: bool) -> bytes:
        text = "".join(WORDS[(i + j) % len(WORDS)] for j in range(k))
        if self.chat:
            key = "reasoning_content" if reasoning else "content"
            body = f'"delta":{{"{key}":{json.dumps(text)}}},"logprobs":null,"finish_reason":null}}]'
        else:
            body = f'"text":{json.dumps(text)},"logprobs":null,"finish_reason":null}}]'
        if usage:
            n = self.sent + k
            body += (
                f',"usage":{{"prompt_tokens":{self.prompt_tokens},"completion_tokens":{n},'
                f'"total_tokens":{self.prompt_tokens + n}}}'
            )
        return chunk(b"data: " + self.head + body.encode() + b"}\n\n")

    def start(self) -> None:
        """Answer now: the headers (and role chunk), then the tokens at their due times."""
        loop = self.server.loop
        now = time.perf_counter()
        self.record.started_s = now
        self.anchor = loop.time()
        if self.beh.fault == "no_headers":
            return
        if self.beh.fault == "close_no_headers":
            self.handle = loop.call_at(self.anchor + self.beh.ttft_ms / 1000.0, self._hang_up)
            return
        headers = [
            b"HTTP/1.1 200 OK",
            b"content-type: text/event-stream",
            b"cache-control: no-cache",
            b"transfer-encoding: chunked",
            b"x-request-id: " + self.record.request_id.encode(),
        ]
        out = b"\r\n".join(headers) + b"\r\n\r\n"
        if self.chat and self.beh.role_chunk:
            out += chunk(
                b"data: " + self.head + b'"delta":{"role":"assistant","content":""},'
                b'"logprobs":null,"finish_reason":null}]}\n\n'
            )
        self.conn.transport.write(out)
        self.record.headers_s = time.perf_counter()
        if self.beh.fault == "no_first_token":
            return
        self._schedule()

    def _schedule(self) -> None:
        k = max(1, self.beh.tokens_per_chunk)
        last_token = min(self.sent + k, self.total) - 1 if self.beh.fault != "never_end" else self.sent + k - 1
        offset_s = (self.beh.ttft_ms + last_token * self.beh.tpot_ms) / 1000.0
        self.handle = self.server.loop.call_at(self.anchor + offset_s, self._step)

    def _step(self) -> None:
        self.handle = None
        if self.closed:
            return
        beh = self.beh
        if beh.fault in MID_STREAM_FAULTS and self.sent >= self.fault_at:
            self._fault(beh.fault)
            return
        endless = beh.fault == "never_end"
        if not endless and self.sent >= self.total:
            self._finish()
            return
        k = max(1, beh.tokens_per_chunk)
        if not endless:
            k = min(k, self.total - self.sent)
        if beh.fault == "big_line" and self.sent == self.fault_at:
            frame = self._big_frame()
        else:
            frame = self._frame(k, self.sent < beh.reasoning_tokens, self.sent)
        self.conn.transport.write(frame)
        self.record.token_s.append(time.perf_counter())
        self.record.chunk_tokens.append(k)
        self.sent += k
        counters = self.server.counters
        counters.generation_tokens += k
        if self.server.spec_acceptance is not None:
            counters.spec_draft += 4 * k
            counters.spec_accepted += round(4 * k * self.server.spec_acceptance)
        if (
            not endless
            and self.sent >= self.total
            and not (beh.fault in MID_STREAM_FAULTS and self.sent >= self.fault_at)
        ):
            self._finish()
            return
        self._schedule()

    def _hang_up(self) -> None:
        """close_no_headers: the request was accepted and held; the connection closes without a byte of answer."""
        self.handle = None
        if not self.closed:
            self.conn.transport.close()
            self._done(keep_alive=False)

    def _big_frame(self) -> bytes:
        text = "x" * BIG_LINE_BYTES
        if self.chat:
            body = f'"delta":{{"content":"{text}"}},"finish_reason":null}}]}}'
        else:
            body = f'"text":"{text}","finish_reason":null}}]}}'
        return chunk(b"data: " + self.head + body.encode() + b"\n\n")

    def _finish(self) -> None:
        out = b""
        if self.chat:
            out += chunk(
                b"data: " + self.head + b'"delta":{},"logprobs":null,"finish_reason":"%s"}]}\n\n' % self.finish.encode()
            )
        else:
            out += chunk(
                b"data: " + self.head + b'"text":"","logprobs":null,"finish_reason":"%s"}]}\n\n' % self.finish.encode()
            )
        if self.usage:
            usage = {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.sent,
                "total_tokens": self.prompt_tokens + self.sent,
            }
            out += chunk(
                b"data: "
                + self.head[: self.head.index(b'"choices"')]
                + b'"choices":[],"usage":'
                + json.dumps(usage).encode()
                + b"}\n\n"
            )
        out += chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
        self.conn.transport.write(out)
        self._done(keep_alive=True)

    def _fault(self, fault: str) -> None:
        transport = self.conn.transport
        if fault == "reset":
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
            self._done(keep_alive=False)
        elif fault == "close":
            transport.close()
            self._done(keep_alive=False)
        elif fault == "truncate":
            transport.write(b"0\r\n\r\n")
            self._done(keep_alive=True)
        elif fault == "malformed":
            transport.write(chunk(b'data: {"id": "broken", "choices": [\n\n'))
            self.fault_at = 1 << 62  # continue normally afterwards
            self._schedule()
        elif fault == "error_in_stream":
            err = {"error": {"message": "internal error while generating", "type": "InternalServerError", "code": 500}}
            transport.write(_sse(err) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            self._done(keep_alive=True)
        elif fault == "stall":
            return

    def _done(self, keep_alive: bool) -> None:
        self.closed = True
        self.record.done_s = time.perf_counter()
        self.server.stream_ended(self)
        if keep_alive:
            self.conn.response_done()

    def abort(self) -> None:
        """The connection went away: stop sending and tell the server."""
        if self.handle is not None:
            self.handle.cancel()
        if not self.closed:
            self.closed = True
            self.record.done_s = time.perf_counter()
            self.server.stream_ended(self)


class BatchedStream(FakeStream):
    """A stream under the load-dependent mode: its token gaps grow with the requests running beside it."""

    def __init__(
        self,
        conn: StreamConnection,
        record: RequestRecord,
        beh: Behaviour,
        req: dict[str, Any],
        chat: bool,
        batching: Batching,
    ) -> None:
        super().__init__(conn, record, beh, req, chat)
        self.batching = batching
        self.last_due = 0.0  # loop time the last scheduled chunk was due

    def _schedule(self) -> None:
        k = max(1, self.beh.tokens_per_chunk)
        endless = self.beh.fault == "never_end"
        last_token = self.sent + k - 1 if endless else min(self.sent + k, self.total) - 1
        others = max(0, self.server.counters.running - 1)
        gap_s = (self.beh.tpot_ms + self.batching.tpot_per_running_ms * others) / 1000.0
        if self.sent == 0:
            due = self.anchor + self.beh.ttft_ms / 1000.0 + last_token * gap_s
        else:
            due = self.last_due + (last_token - self.sent + 1) * gap_s
        self.last_due = due
        self.handle = self.server.loop.call_at(due, self._step)
