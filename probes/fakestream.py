"""The test server's streamed answer: per-request behaviour and faults, SSE frames at known times, its record."""

import asyncio
import contextlib
import dataclasses
import json
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the server that runs these streams (probes/fakeserver.py imports this module)
    from probes.fakeserver import ServerConnection

FAULTS = frozenset(
    {
        "",
        "401",
        "404",
        "429",
        "500",
        "reset",
        "close",
        "truncate",
        "malformed",
        "error_in_stream",
        "json_body",
        "big_line",
        "never_end",
        "stall",
        "no_headers",
        "close_no_headers",
        "no_first_token",
    }
)
MID_STREAM_FAULTS = frozenset({"reset", "close", "truncate", "malformed", "error_in_stream", "stall"})
BIG_LINE_BYTES = 1 << 20
WORDS = (" alpha", " beta", " gamma", " delta", " eps", " zeta", " eta", " theta")


@dataclass(frozen=True)
class Behaviour:
    """Timing and faults of one response (server defaults, overridden per request)."""

    ttft_ms: float = 20.0  # from the request's arrival to the first output token
    tpot_ms: float = 2.0  # between two consecutive tokens
    tokens: int = 16  # output tokens (capped by the request's max_tokens)
    tokens_per_chunk: int = 1
    usage: bool = True  # honour stream_options.include_usage
    role_chunk: bool = True  # a role-only first chunk, sent with the headers
    reasoning_tokens: int = 0  # reasoning_content tokens before the content
    fault: str = ""
    fault_after: int = -1  # tokens sent before a mid-stream fault; -1: half of the tokens
    fault_every: int = 1  # the fault hits every N-th request (by the server's request number); the others are served
    retry_after_s: int = 1

    @classmethod
    def parse(cls, spec: str, base: "Behaviour") -> "Behaviour":
        """Apply ``key=value,key=value`` over base; unknown keys raise ValueError."""
        changes: dict[str, Any] = {}
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}
        for part in spec.split(","):
            if not part.strip():
                continue
            key, _, value = part.partition("=")
            key = key.strip()
            if key not in kinds:
                raise ValueError(f"unknown fake behaviour key {key!r}")
            kind = kinds[key]
            if kind in (bool, "bool"):
                changes[key] = value.strip().lower() in ("1", "true", "yes", "on")
            elif kind in (int, "int"):
                changes[key] = int(value)
            elif kind in (float, "float"):
                changes[key] = float(value)
            else:
                changes[key] = value.strip()
        result = dataclasses.replace(base, **changes)
        if result.fault not in FAULTS:
            raise ValueError(f"unknown fault {result.fault!r}")
        return result


@dataclass
class RequestRecord:
    """The server's own account of one request (perf_counter seconds)."""

    request_id: str
    model: str
    fault: str
    received_s: float
    started_s: float | None = None  # when it left the waiting queue (max_running)
    headers_s: float | None = None
    token_s: list[float] = field(default_factory=list)  # send time of each output chunk
    chunk_tokens: list[int] = field(default_factory=list)
    done_s: float | None = None
    prompt: str | None = None  # the prompt's text, only when the server records prompts (FakeServer record_prompts)

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dataclasses.asdict(self)


def chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _sse(obj: Any) -> bytes:
    return chunk(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


def error_body(message: str, kind: str, code: Any) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": code, "param": None}}).encode()


class FakeStream:
    """One streaming response, driven by loop.call_at at absolute times."""

    def __init__(
        self, conn: "ServerConnection", record: RequestRecord, beh: Behaviour, req: dict[str, Any], chat: bool
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
        if self.handle is not None:
            self.handle.cancel()
        if not self.closed:
            self.closed = True
            self.record.done_s = time.perf_counter()
            self.server.stream_ended(self)


def prompt_tokens(req: dict[str, Any]) -> int:
    return len(prompt_text(req).split())


def prompt_text(req: dict[str, Any]) -> str:
    if "messages" in req:
        parts = []
        for msg in req.get("messages") or []:
            content = msg.get("content") if isinstance(msg, dict) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return "\n".join(parts)
    prompt = req.get("prompt", "")
    return prompt if isinstance(prompt, str) else " ".join(map(str, prompt))
