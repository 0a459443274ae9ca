"""A fast OpenAI-compatible test server on raw asyncio (HTTP/1.1, keep-alive, chunked SSE) with known timing and faults.

Behaviour is chosen per request by the model name (``fake:ttft_ms=200,tpot_ms=20,tokens=128``) or the header
``x-fake`` (same syntax), over the server's defaults. The server keeps its own record of when it sent every
token (``time.perf_counter()``, comparable across processes on one Linux host), at ``GET /fake/records``; with
``record_prompts=True`` (off by default) each record also keeps the prompt's text as the server read it.

Faults (``fault=``): 401, 404, 429 (with Retry-After), 500, reset (TCP RST halfway), close (FIN halfway,
body incomplete), truncate (body ends cleanly without finish reason or [DONE]), malformed (a data line that is
not JSON), error_in_stream (an error object inside the 200 stream), json_body (a JSON body where a stream was
asked), big_line (one 1 MiB SSE line, which is valid), never_end (tokens forever), stall (stops sending, keeps
the connection), no_headers (never answers), close_no_headers (holds the request ttft_ms, then closes the
connection without a byte of answer), no_first_token (headers and role chunk, then nothing). ``fault_every=N``
applies the fault to every N-th request only (by the server's request number), the others are served normally.
``close_idle_connections()`` closes every keep-alive connection that has no request in flight.
``engine`` names the metrics as vLLM (default) or SGLang does; ``roots`` gives /v1/models entries a ``root`` (the
checkpoint, as vLLM lists it) and ``owned_by`` their owner: what the probe reads to tell the deployment.

Load-dependent mode (a batching engine; off by default), in the same model-name / ``x-fake`` syntax or as the
server's default (``batching=Batching(...)``, ``--slots``, ``--tpot-per-running-ms``):
``fake:slots=4,tpot_per_running_ms=2,ttft_ms=20,tpot_ms=5,tokens=16``.
- ``slots=N``: at most N requests run (prefill and decode) at once, counted over the whole server; later ones wait
  in one FIFO queue, and their TTFT (from arrival) includes the wait. ``slots=0`` turns the cap off.
- ``tpot_per_running_ms=x``: each gap between two tokens of a running request is ``tpot_ms + x * (running - 1)``,
  with ``running`` the requests running when the gap is scheduled (a token's due time never moves afterwards).
A server's ``max_running`` still applies as before; a request runs only when both caps allow it. Both keys are
deterministic (no randomness, no extra timers) and cheap.
Run: ``python -m probes.fakeserver --port 8000 --ttft-ms 200 --tpot-ms 20 --tokens 128``.
"""

import argparse
import asyncio
import contextlib
import dataclasses
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from probes.fakestream import (
    FAULTS,
    WORDS,
    Behaviour,
    FakeStream,
    RequestRecord,
    error_body,
    prompt_text,
    prompt_tokens,
)

__all__ = ["FAULTS", "Batching", "Behaviour", "FakeServer", "RequestRecord", "main", "serve_in_thread"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
PREFIX_BLOCK_WORDS = 16
MAX_BODY_BYTES = 64 << 20


@dataclass
class _Counters:
    running: int = 0
    waiting: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    prefix_queries: int = 0
    prefix_hits: int = 0
    spec_draft: int = 0
    spec_accepted: int = 0
    requests: int = 0


@dataclass(frozen=True)
class Batching:
    """The load-dependent mode of a response (see the module docstring); the defaults leave the server as it was."""

    slots: int | None = None  # at most this many requests running at once (None: no cap of its own)
    tpot_per_running_ms: float = 0.0  # added to every token gap per other request running

    @property
    def on(self) -> bool:
        """True when this mode changes anything."""
        return self.slots is not None or self.tpot_per_running_ms > 0

    @classmethod
    def split(cls, spec: str, base: "Batching") -> tuple[str, "Batching"]:
        """(the spec without this mode's keys, for Behaviour.parse; base with them applied). Bad values raise."""
        rest: list[str] = []
        slots, per_running = base.slots, base.tpot_per_running_ms
        for part in spec.split(","):
            key, _, value = part.partition("=")
            key = key.strip()
            if key == "slots":
                n = int(value)
                if n < 0:
                    raise ValueError("slots must be 0 (no cap) or more")
                slots = n or None
            elif key == "tpot_per_running_ms":
                per_running = float(value)
                if not 0 <= per_running < float("inf"):
                    raise ValueError("tpot_per_running_ms must be 0 or more")
            else:
                rest.append(part)
        return ",".join(rest), cls(slots, per_running)


class _BatchedStream(FakeStream):
    """A stream under the load-dependent mode: its token gaps grow with the requests running beside it."""

    def __init__(
        self,
        conn: "ServerConnection",
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


class ServerConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: parse a request, answer it, then the next."""

    transport: asyncio.Transport  # set in connection_made

    def __init__(self, server: "FakeServer") -> None:
        self.server = server
        self.buf = bytearray()
        self.busy = False
        self.close_after = False
        self.stream: FakeStream | None = None

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
        self.server._handle(self, method, target, headers, body)

    def send(
        self, status: int, body: bytes, content_type: str = "application/json", extra: dict[str, str] | None = None
    ) -> None:
        reason = {
            200: "OK",
            400: "Bad Request",
            401: "Unauthorized",
            404: "Not Found",
            405: "Method Not Allowed",
            429: "Too Many Requests",
            500: "Internal Server Error",
        }.get(status, "Error")
        lines = [f"HTTP/1.1 {status} {reason}", f"content-type: {content_type}", f"content-length: {len(body)}"]
        lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
        self.transport.write("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
        self.response_done()


class FakeServer:
    """The server: start() on 127.0.0.1, then base_url; records() for its own timing account."""

    loop: asyncio.AbstractEventLoop  # set in start()

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        defaults: Behaviour | None = None,
        models: tuple[str, ...] = ("fake",),
        api_key: str | None = None,
        metrics: bool = True,
        max_running: int | None = None,
        spec_acceptance: float | None = None,
        keep_records: bool = True,
        record_prompts: bool = False,
        engine: Literal["vllm", "sglang"] = "vllm",
        roots: Mapping[str, str] | None = None,
        owned_by: str = "fake",
        batching: Batching | None = None,
    ) -> None:
        if host not in LOOPBACK_HOSTS:
            raise ValueError("the fake server only listens on loopback (127.0.0.1)")
        self.host = host
        self.port = port
        self.defaults = defaults or Behaviour()
        self.models = models
        self.api_key = api_key
        self.metrics = metrics
        self.max_running = max_running
        self.spec_acceptance = spec_acceptance
        self.keep_records = keep_records
        self.record_prompts = record_prompts
        self.engine = engine
        self.roots = dict(roots or {})
        self.owned_by = owned_by
        self.batching = batching or Batching()
        self.counters = _Counters()
        self._records: list[RequestRecord] = []
        self._queue: deque[FakeStream] = deque()
        self._prefix_blocks: set[int] = set()
        self._next_id = 0
        self._server: asyncio.Server | None = None
        self.connections: set[ServerConnection] = set()

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (…/v1)."""
        return f"http://{self.host}:{self.port}/v1"

    async def start(self) -> None:
        """Listen (port 0 picks a free port)."""
        self.loop = asyncio.get_running_loop()
        self._server = await self.loop.create_server(lambda: ServerConnection(self), self.host, self.port, backlog=4096)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening and drop open connections."""
        if self._server is not None:
            self._server.close()
            for conn in list(self.connections):
                conn.transport.abort()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    def close_idle_connections(self) -> None:
        """Close each keep-alive connection with no request in flight, as a server's idle timeout does (thread-safe)."""

        def close() -> None:
            for conn in list(self.connections):
                if not conn.busy:
                    conn.transport.close()

        self.loop.call_soon_threadsafe(close)

    def records(self) -> list[RequestRecord]:
        """Every request seen so far (a copy of the list)."""
        return list(self._records)

    def clear_records(self) -> None:
        """Forget the records (the bench clears between levels)."""
        self._records.clear()

    # -- request handling ---------------------------------------------------------------------------------------

    def _handle(self, conn: ServerConnection, method: str, target: str, headers: dict[str, str], body: bytes) -> None:
        path = target.split("?", 1)[0].rstrip("/")
        if path.startswith("/v1/"):
            path = path[3:]
        if path == "/metrics" and method == "GET":
            if not self.metrics:
                conn.send(404, b"not found", "text/plain")
            else:
                conn.send(200, self._metrics_text().encode(), "text/plain; version=0.0.4")
            return
        if path == "/fake/records" and method == "GET":
            payload = json.dumps([r.as_json() for r in self._records]).encode()
            if "clear=1" in target:
                self._records.clear()
            conn.send(200, payload)
            return
        if path == "/health":
            conn.send(200, b"{}")
            return
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            conn.send(401, error_body("Invalid API key", "invalid_request_error", "invalid_api_key"))
            return
        if path == "/models" and method == "GET":
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": self.owned_by}
                | ({"root": self.roots[m]} if m in self.roots else {})
                for m in self.models
            ]
            conn.send(200, json.dumps({"object": "list", "data": data}).encode())
            return
        if path not in ("/chat/completions", "/completions"):
            conn.send(404, error_body(f"no route {path}", "NotFoundError", 404))
            return
        if method != "POST":
            conn.send(405, error_body("method not allowed", "BadRequestError", 405))
            return
        try:
            req = json.loads(body)
            model = str(req.get("model", ""))
            base_model, _, spec = model.partition(":")
            spec, batching = Batching.split(spec, self.batching)
            beh = Behaviour.parse(spec, self.defaults)
            if headers.get("x-fake"):
                header, batching = Batching.split(headers["x-fake"], batching)
                beh = Behaviour.parse(header, beh)
        except (ValueError, AttributeError) as exc:
            conn.send(400, error_body(str(exc), "BadRequestError", 400))
            return
        if base_model not in self.models or beh.fault == "404":
            conn.send(404, error_body(f"The model `{model}` does not exist.", "NotFoundError", 404))
            return
        self._next_id += 1
        if beh.fault and self._next_id % max(1, beh.fault_every):
            beh = dataclasses.replace(beh, fault="")
        record = RequestRecord(f"fake-{self._next_id}", model, beh.fault, time.perf_counter())
        if self.record_prompts:
            record.prompt = prompt_text(req)
        if self.keep_records:
            self._records.append(record)
        self.counters.requests += 1
        if beh.fault in ("401", "429", "500"):
            status = int(beh.fault)
            extra = {"retry-after": str(beh.retry_after_s)} if status == 429 else None
            conn.send(status, error_body(f"fake {status}", "fake_error", status), extra=extra)
            return
        chat = path == "/chat/completions"
        if beh.fault == "json_body" or not req.get("stream"):
            conn.send(200, self._full_body(record, req, beh, chat))
            return
        self._account_prompt(req)
        if batching.on:
            stream: FakeStream = _BatchedStream(conn, record, beh, req, chat, batching)
        else:
            stream = FakeStream(conn, record, beh, req, chat)
        conn.stream = stream
        if self._queue or not self._admits(stream):
            self.counters.waiting += 1
            self._queue.append(stream)
        else:
            self.counters.running += 1
            stream.start()

    def stream_ended(self, stream: FakeStream) -> None:
        if stream in self._queue:
            self._queue.remove(stream)
            self.counters.waiting -= 1
            return
        self.counters.running -= 1
        while self._queue and self._admits(self._queue[0]):
            nxt = self._queue.popleft()
            self.counters.waiting -= 1
            self.counters.running += 1
            nxt.start()

    def _admits(self, stream: FakeStream) -> bool:
        """True when the stream may start now: below max_running and below its own slots, if any."""
        slots = stream.batching.slots if isinstance(stream, _BatchedStream) else None
        return all(cap is None or self.counters.running < cap for cap in (self.max_running, slots))

    def _full_body(self, record: RequestRecord, req: dict[str, Any], beh: Behaviour, chat: bool) -> bytes:
        n = min(beh.tokens, int(req.get("max_tokens") or beh.tokens))
        text = "".join(WORDS[i % len(WORDS)] for i in range(n))
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        prompt = prompt_tokens(req)
        return json.dumps(
            {
                "id": record.request_id,
                "object": "chat.completion" if chat else "text_completion",
                "created": 0,
                "model": req.get("model"),
                "choices": [choice],
                "usage": {"prompt_tokens": prompt, "completion_tokens": n, "total_tokens": prompt + n},
            }
        ).encode()

    def _account_prompt(self, req: dict[str, Any]) -> None:
        words = prompt_text(req).split()
        self.counters.prompt_tokens += len(words)
        h = 0
        hits = 0
        for start in range(0, len(words) - PREFIX_BLOCK_WORDS + 1, PREFIX_BLOCK_WORDS):
            h = hash((h, *words[start : start + PREFIX_BLOCK_WORDS]))
            if h in self._prefix_blocks:
                hits += PREFIX_BLOCK_WORDS
            elif len(self._prefix_blocks) < 1_000_000:
                self._prefix_blocks.add(h)
        self.counters.prefix_queries += len(words)
        self.counters.prefix_hits += hits

    def _metrics_text(self) -> str:
        c = self.counters
        label = f'{{model_name="{self.models[0]}"}}'
        kv = c.running / self.max_running if self.max_running else min(1.0, c.running / 256)
        if self.engine == "sglang":
            hit_rate = c.prefix_hits / c.prefix_queries if c.prefix_queries else 0.0
            rows: list[tuple[str, str, float]] = [
                ("sglang:num_running_reqs", "gauge", c.running),
                ("sglang:num_queue_reqs", "gauge", c.waiting),
                ("sglang:token_usage", "gauge", kv),
                ("sglang:prompt_tokens_total", "counter", c.prompt_tokens),
                ("sglang:generation_tokens_total", "counter", c.generation_tokens),
                ("sglang:cache_hit_rate", "gauge", hit_rate),
            ]
        else:
            rows = [
                ("vllm:num_requests_running", "gauge", c.running),
                ("vllm:num_requests_waiting", "gauge", c.waiting),
                ("vllm:kv_cache_usage_perc", "gauge", kv),
                ("vllm:prompt_tokens_total", "counter", c.prompt_tokens),
                ("vllm:generation_tokens_total", "counter", c.generation_tokens),
                ("vllm:prefix_cache_queries_total", "counter", c.prefix_queries),
                ("vllm:prefix_cache_hits_total", "counter", c.prefix_hits),
            ]
        if self.spec_acceptance is not None and self.engine == "vllm":
            rows += [
                ("vllm:spec_decode_num_draft_tokens_total", "counter", c.spec_draft),
                ("vllm:spec_decode_num_accepted_tokens_total", "counter", c.spec_accepted),
            ]
        out = []
        for name, kind, value in rows:
            out.append(f"# HELP {name} fake server metric\n# TYPE {name} {kind}\n{name}{label} {float(value)}")
        return "\n".join(out) + "\n"


@contextlib.contextmanager
def serve_in_thread(**kwargs: Any) -> Iterator[FakeServer]:
    """Run a FakeServer on its own event loop in a daemon thread (for tests); stop it on exit."""
    server = FakeServer(**kwargs)
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    errors: list[BaseException] = []

    def main() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.start())
        except BaseException as exc:  # surfaced to the caller below
            errors.append(exc)
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.run_until_complete(server.stop())
        loop.close()

    thread = threading.Thread(target=main, name="fakeserver", daemon=True)
    thread.start()
    ready.wait(10)
    if errors:
        raise errors[0]
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def main(argv: list[str] | None = None) -> None:
    """Command line: serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m probes.fakeserver", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", choices=LOOPBACK_HOSTS)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--ttft-ms", type=float, default=Behaviour.ttft_ms)
    parser.add_argument("--tpot-ms", type=float, default=Behaviour.tpot_ms)
    parser.add_argument("--tokens", type=int, default=Behaviour.tokens)
    parser.add_argument("--tokens-per-chunk", type=int, default=Behaviour.tokens_per_chunk)
    parser.add_argument("--no-usage", action="store_true")
    parser.add_argument("--no-role-chunk", action="store_true")
    parser.add_argument("--reasoning-tokens", type=int, default=0)
    parser.add_argument("--model", action="append", help="model name(s) to serve (default: fake)")
    parser.add_argument("--api-key", default=None, help="require this bearer key")
    parser.add_argument("--max-running", type=int, default=None, help="queue requests beyond this many")
    parser.add_argument("--slots", type=int, default=0, help="load-dependent mode: run at most this many at once")
    parser.add_argument(
        "--tpot-per-running-ms", type=float, default=0.0, help="load-dependent mode: token gap added per other request"
    )
    parser.add_argument("--no-metrics", action="store_true")
    parser.add_argument("--engine", choices=("vllm", "sglang"), default="vllm", help="whose metric names to expose")
    parser.add_argument("--no-records", action="store_true", help="do not keep per-token records")
    args = parser.parse_args(argv)
    try:
        _, batching = Batching.split(f"slots={args.slots},tpot_per_running_ms={args.tpot_per_running_ms}", Batching())
    except ValueError as exc:
        parser.error(str(exc))
    defaults = Behaviour(
        ttft_ms=args.ttft_ms,
        tpot_ms=args.tpot_ms,
        tokens=args.tokens,
        tokens_per_chunk=args.tokens_per_chunk,
        usage=not args.no_usage,
        role_chunk=not args.no_role_chunk,
        reasoning_tokens=args.reasoning_tokens,
    )

    async def serve() -> None:
        server = FakeServer(
            args.host,
            args.port,
            defaults=defaults,
            models=tuple(args.model or ["fake"]),
            api_key=args.api_key,
            metrics=not args.no_metrics,
            max_running=args.max_running,
            keep_records=not args.no_records,
            engine=args.engine,
            batching=batching,
        )
        await server.start()
        print(f"fake OpenAI server on {server.base_url}", flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
