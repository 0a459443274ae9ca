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
Run: ``python -m fakeserver --port 8000 --ttft-ms 200 --tpot-ms 20 --tokens 128`` (``python -m probes.fakeserver``
still works).
Modules: behaviour (what a response does), stream (the SSE answer), connection (HTTP/1.1), metrics, server, cli.
"""

from fakeserver.behaviour import FAULTS, WORDS, Batching, Behaviour, RequestRecord
from fakeserver.cli import main
from fakeserver.server import LOOPBACK_HOSTS, PREFIX_BLOCK_WORDS, FakeServer, serve_in_thread

__all__ = [
    "FAULTS",
    "LOOPBACK_HOSTS",
    "PREFIX_BLOCK_WORDS",
    "WORDS",
    "Batching",
    "Behaviour",
    "FakeServer",
    "RequestRecord",
    "main",
    "serve_in_thread",
]
