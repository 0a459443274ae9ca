"""The test server: routes, the running cap and its FIFO queue, prefix-cache accounting; serve_in_thread for tests."""

import asyncio
import contextlib
import dataclasses
import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from fakeserver.behaviour import WORDS, Batching, Behaviour, RequestRecord, error_body, prompt_text, prompt_tokens
from fakeserver.connection import ServerConnection
from fakeserver.dcgm import GpuPower
from fakeserver.metrics import Counters, metrics_text
from fakeserver.stream import BatchedStream, FakeStream

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
PREFIX_BLOCK_WORDS = 16
MAX_PREFIX_BLOCKS = 1_000_000


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
        dcgm_gpus: int = 0,
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
        self.counters = Counters()
        # With dcgm_gpus, /metrics also carries DCGM-exporter power and energy of that many fake GPUs.
        self.gpu_power = GpuPower(gpus=dcgm_gpus) if dcgm_gpus > 0 else None
        self._records: list[RequestRecord] = []
        self._queue: deque[FakeStream] = deque()
        self._prefix_blocks: set[int] = set()
        self._next_id = 0
        self._held = False  # hold(): completions queue without starting until release()
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

    def hold(self) -> None:
        """From now on, streamed completions wait in the queue without starting (thread-safe), until release().

        A test uses it to see a client's in-flight state for as long as it needs, whatever the machine's speed.
        """
        self.loop.call_soon_threadsafe(setattr, self, "_held", True)

    def release(self) -> None:
        """Start the held completions (as far as the running cap admits them) and stop holding (thread-safe)."""

        def admit() -> None:
            self._held = False
            self._admit_waiting()
            self._load_changed()

        self.loop.call_soon_threadsafe(admit)

    def waiting(self) -> int:
        """How many streamed completions wait in the queue now."""
        return len(self._queue)

    def records(self) -> list[RequestRecord]:
        """Every request seen so far (a copy of the list)."""
        return list(self._records)

    def clear_records(self) -> None:
        """Forget the records (the bench clears between levels)."""
        self._records.clear()

    # -- request handling ---------------------------------------------------------------------------------------

    def handle(self, conn: ServerConnection, method: str, target: str, headers: dict[str, str], body: bytes) -> None:
        """Answer one request: the server's own endpoints, then (authorised) the models and completions."""
        path = target.split("?", 1)[0].rstrip("/")
        if path.startswith("/v1/"):
            path = path[3:]
        if self._own_endpoint(conn, method, path, target):
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
        self._completion(conn, path == "/chat/completions", headers, body)

    def _own_endpoint(self, conn: ServerConnection, method: str, path: str, target: str) -> bool:
        """/metrics, /fake/records and /health (no key needed); False for any other path."""
        if path == "/metrics" and method == "GET":
            if not self.metrics and self.gpu_power is None:
                conn.send(404, b"not found", "text/plain")
                return True
            text = "" if self.gpu_power is None else self.gpu_power.text(self.counters.running)
            if self.metrics:
                text += metrics_text(
                    self.counters,
                    model=self.models[0],
                    engine=self.engine,
                    max_running=self.max_running,
                    spec_acceptance=self.spec_acceptance,
                )
            conn.send(200, text.encode(), "text/plain; version=0.0.4")
            return True
        if path == "/fake/records" and method == "GET":
            payload = json.dumps([r.as_json() for r in self._records]).encode()
            if "clear=1" in target:
                self._records.clear()
            conn.send(200, payload)
            return True
        if path == "/health":
            conn.send(200, b"{}")
            return True
        return False

    def _completion(self, conn: ServerConnection, chat: bool, headers: dict[str, str], body: bytes) -> None:
        """A (chat) completion: its behaviour from the model name and x-fake, then a fault, a body or a stream."""
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
        record = self._record(model, beh, req)
        if beh.fault in ("401", "429", "500"):
            status = int(beh.fault)
            extra = {"retry-after": str(beh.retry_after_s)} if status == 429 else None
            conn.send(status, error_body(f"fake {status}", "fake_error", status), extra=extra)
            return
        if beh.fault == "json_body" or not req.get("stream"):
            conn.send(200, self._full_body(record, req, beh, chat))
            return
        self._account_prompt(req)
        if batching.on:
            stream: FakeStream = BatchedStream(conn, record, beh, req, chat, batching)
        else:
            stream = FakeStream(conn, record, beh, req, chat)
        conn.stream = stream
        if self._queue or not self._admits(stream):
            self.counters.waiting += 1
            self._queue.append(stream)
        else:
            self.counters.running += 1
            self._load_changed()
            stream.start()

    def _record(self, model: str, beh: Behaviour, req: dict[str, Any]) -> RequestRecord:
        """The request's record (kept when the server keeps records), counted."""
        record = RequestRecord(f"fake-{self._next_id}", model, beh.fault, time.perf_counter())
        if self.record_prompts:
            record.prompt = prompt_text(req)
        if self.keep_records:
            self._records.append(record)
        self.counters.requests += 1
        return record

    def stream_ended(self, stream: FakeStream) -> None:
        """A stream ended: it leaves the queue or frees its place, and the waiting ones that now fit start."""
        if stream in self._queue:
            self._queue.remove(stream)
            self.counters.waiting -= 1
            return
        self.counters.running -= 1
        self._admit_waiting()
        self._load_changed()

    def _admit_waiting(self) -> None:
        """Start the waiting streams, in order, while they fit."""
        while self._queue and self._admits(self._queue[0]):
            nxt = self._queue.popleft()
            self.counters.waiting -= 1
            self.counters.running += 1
            nxt.start()

    def _load_changed(self) -> None:
        """The fake GPUs' power follows the requests running."""
        if self.gpu_power is not None:
            self.gpu_power.observe(self.counters.running)

    def _admits(self, stream: FakeStream) -> bool:
        """True when the stream may start now: not held, below max_running and below its own slots, if any."""
        return not self._held and all(
            cap is None or self.counters.running < cap for cap in (self.max_running, stream.batching.slots)
        )

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
            elif len(self._prefix_blocks) < MAX_PREFIX_BLOCKS:
                self._prefix_blocks.add(h)
        self.counters.prefix_queries += len(words)
        self.counters.prefix_hits += hits


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
